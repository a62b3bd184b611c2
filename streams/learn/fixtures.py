"""Readers for the fixture formats (JSON Lines), shared by the CLI and evaluation."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from streams.learn.model import Transcript

REPO_ROOT = Path(__file__).resolve().parents[2]
# The product card's ../shared/fixtures beside the checkout; MEMORIA_FIXTURES_DIR overrides it.
FIXTURES_DIR = Path(os.environ.get("MEMORIA_FIXTURES_DIR") or REPO_ROOT.parent / "shared" / "fixtures")


def read_jsonl(path: str | Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def transcript_of(row: dict) -> Transcript:
    return Transcript.model_validate(row)
