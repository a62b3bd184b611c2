"""Export the JSON Schema of every event model: ``python -m schemas.export``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from schemas.events import EVENT_MODELS

OUT = Path(__file__).parent / "json"


def render() -> dict[str, str]:
    files = {}
    for name, model in EVENT_MODELS.items():
        schema = model.model_json_schema()
        schema["$id"] = f"https://memoria.dev/schemas/{name}.schema.json"
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        files[f"{name}.schema.json"] = json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    return files


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for fname, text in render().items():
        (OUT / fname).write_text(text)
        print(f"wrote schemas/json/{fname}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
