"""Every repository a unit of work offers resolves in a process that imported nothing else.

A flow reaches its repository as ``uow.<name>``; which modules the calling flow happened
to import before must not matter (``make demo`` once failed with "no repository 'learning'"
because only the modules that imported ``streams.learn.store`` could resolve it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streams.store.uow import REPOSITORIES, PostgresUnitOfWork

REPO = Path(__file__).resolve().parents[2]


def test_each_repository_resolves_from_a_fresh_interpreter():
    code = (
        "from streams.store.uow import REPOSITORIES, PostgresUnitOfWork\n"
        "class Conn: pass\n"
        "uow = PostgresUnitOfWork(conn=Conn()); uow.conn = uow._given\n"
        "for name in sorted(REPOSITORIES):\n"
        "    repo = getattr(uow, name)\n"
        "    print(name, type(repo).__module__ + ':' + type(repo).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}).stdout.split()
    resolved = dict(zip(out[0::2], out[1::2]))
    assert resolved == REPOSITORIES


def test_an_unknown_repository_names_the_table():
    uow = PostgresUnitOfWork(conn=object())
    with pytest.raises(AttributeError, match="REPOSITORIES"):
        uow.nonexistent  # noqa: B018
