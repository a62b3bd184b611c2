"""Where the project's corpus lives, and readers for its formats (JSON Lines).

The corpus is part of the repository (``examples/``, described in
``examples/README.md``): ``dev/`` is what tuning and tests may read, ``heldout/``
is only reported. An external folder of the same formats (for example
``../shared/fixtures``) can be given to the evaluation commands explicitly; nothing
requires one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from streams.learn.model import Transcript

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = REPO_ROOT / "examples"
DEV_DIR = EXAMPLES_DIR / "dev"
HELDOUT_DIR = EXAMPLES_DIR / "heldout"
KNOWLEDGE_FILE = EXAMPLES_DIR / "knowledge.jsonl"
# The default corpus of evaluation commands and quality tests.
FIXTURES_DIR = DEV_DIR


def knowledge_file(folder: str | Path) -> Path:
    """A corpus folder's knowledge base: its own ``knowledge.jsonl`` or its parent's."""
    folder = Path(folder)
    own = folder / "knowledge.jsonl"
    return own if own.exists() else folder.parent / "knowledge.jsonl"


def read_jsonl(path: str | Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def transcript_of(row: dict) -> Transcript:
    return Transcript.model_validate(row)
