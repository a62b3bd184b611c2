"""`make eval CORPUS=...` scores the folders given instead of dev + held-out (so a paid endpoint
can be kept off the held-out half); without CORPUS it scores the two halves as before."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _eval_command(*args: str) -> str:
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "eval", *args], capture_output=True, text=True,
                         check=True).stdout
    return next(line for line in out.splitlines() if "streams.evaluation" in line)


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_eval_passes_each_corpus_folder_and_the_provider():
    cmd = _eval_command("CORPUS=examples/dev examples/probe_r", "PROVIDER=openai")
    assert "--provider openai" in cmd
    assert "--corpus examples/dev --corpus examples/probe_r" in cmd


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_eval_without_corpus_scores_the_default_halves():
    cmd = _eval_command()
    assert "--corpus" not in cmd and "--provider rules" in cmd
