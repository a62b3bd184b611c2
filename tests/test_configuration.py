"""Configuration is read in one place: ``streams/settings.py`` (pydantic-settings).

Every other read of the process environment in the product's code is listed
here with its reason; a new one fails this test until it moves into the
settings object (or is added here with a reason).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from connectors.debezium.engine import database_properties
from streams.settings import REPO_ROOT, Settings

PACKAGES = ("streams", "connectors", "schemas")

# path → number of environment reads allowed there, and why
ALLOWED = {
    # huggingface_hub/transformers read HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE when first imported
    # (process setup before an import, not configuration)
    "streams/embedding/providers.py": 2,
    # Kafka Connect's ${env:NAME} references (EnvVarConfigProvider) and JAVA_HOME (the JVM, read by JPype too)
    "connectors/debezium/engine.py": 3,
}


def environment_reads(path: Path) -> list[tuple[int, str]]:
    """``os.environ``, ``os.getenv``/``putenv``, ``from os import environ`` and ``envvar=`` options."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                and node.attr in ("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"):
            found.append((node.lineno, f"os.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [(node.lineno, f"from os import {a.name}") for a in node.names if "env" in a.name]
        elif isinstance(node, ast.keyword) and node.arg in ("envvar", "auto_envvar_prefix"):
            found.append((node.value.lineno, f"{node.arg}="))
    return found


def test_environment_is_read_only_by_the_settings_object():
    reads = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            rel = path.relative_to(REPO_ROOT).as_posix()
            for lineno, what in environment_reads(path):
                reads.setdefault(rel, []).append(f"{rel}:{lineno} {what}")
    counts = Counter({rel: len(found) for rel, found in reads.items()})
    unexpected = [r for rel, found in reads.items() if counts[rel] > ALLOWED.get(rel, 0) for r in found]
    assert not unexpected, "read it through streams/settings.py instead:\n" + "\n".join(unexpected)
    assert counts == Counter(ALLOWED), "an allowed read is gone: shrink ALLOWED"


def test_the_scan_sees_each_kind_of_read(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("import os\nfrom os import getenv\nimport typer\n"
                 "A = os.environ.get('X')\nB = os.getenv('Y')\nopt = typer.Option(1, envvar='Z')\n")
    assert sorted(w for _, w in environment_reads(p)) == ["envvar=", "from os import getenv", "os.environ",
                                                            "os.getenv"]


@pytest.mark.parametrize("name,env,value", [("respond_batch_within", "MEMORIA_RESPOND_BATCH_WITHIN", 0.02),
                                            ("recall_inject_delay_s", "MEMORIA_RECALL_INJECT_DELAY_S", 1.5),
                                            ("log_level", "MEMORIA_LOG_LEVEL", "DEBUG")])
def test_former_direct_reads_are_settings(monkeypatch, name, env, value):
    monkeypatch.setenv(env, str(value))
    assert getattr(Settings(), name) == value


def test_a_dsn_without_user_connects_the_engine_as_libpq_would(monkeypatch):
    monkeypatch.setenv("PGUSER", "alice")
    props = database_properties("postgresql://127.0.0.1:5432")
    assert props["database.user"] == "alice" and props["database.dbname"] == "alice"
    props = database_properties("postgresql://bob@127.0.0.1:5432/memoria")
    assert props["database.user"] == "bob" and props["database.dbname"] == "memoria"
