"""The ``memoria`` command line: every command resolves, and ``memoria --help`` loads none of them."""

import importlib
import inspect
import json
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from streams.cli import COMMANDS, app, load_command

HEAVY = ("torch", "sentence_transformers", "transformers", "faust", "qdrant_client", "psycopg", "aiokafka",
         "numpy", "sklearn", "openai", "fastapi", "aiohttp", "httpx", "pydantic_settings")


def _listed_line(command) -> str:
    """The line a group's help shows for ``command`` (typer: short help, else the first paragraph)."""
    return command.short_help or inspect.cleandoc(command.help or "").split("\n\n")[0].strip()


def _walk(command, path):
    yield path
    for name, sub in getattr(command, "commands", {}).items():  # a group's sub-commands
        yield from _walk(sub, path + [name])


def _paths():
    """Every command path (each top-level command loaded the way a run loads it)."""
    for name in COMMANDS:
        yield from _walk(load_command(name), [name])


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listed_help_is_the_commands_own(name):
    command = load_command(name)
    assert command is not None, f"no module registers {name!r}"
    assert COMMANDS[name].help == _listed_line(command)


def test_every_command_a_module_registers_is_listed():
    """A command added to a module's register() but not to COMMANDS would be unreachable."""
    for module in sorted({m for e in COMMANDS.values() for m in e.modules}):
        scratch = typer.Typer()
        scratch.callback()(lambda: None)  # always a group, even with one command
        importlib.import_module(module).register(scratch)
        names = set(typer.main.get_group(scratch).commands)
        unlisted = {n for n in names if module not in COMMANDS.get(n, ((), ()))[1]}
        assert not unlisted, f"{module} registers {sorted(unlisted)}: add them to streams.cli.COMMANDS"


def test_root_help_lists_every_command():
    r = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    panel = r.output.split("─ Commands ─", 1)[1]
    listed = [m.group(1) for m in re.finditer(r"^│ (\S+) ", panel, re.MULTILINE)]
    assert listed == list(COMMANDS)
    assert "Apply pending SQL migrations" in r.output


def test_every_command_and_group_answers_help():
    runner = CliRunner()
    paths = list(_paths())
    assert len(paths) > len(COMMANDS)  # groups have sub-commands
    for path in paths:
        r = runner.invoke(app, path + ["--help"], terminal_width=200)
        assert r.exit_code == 0, (path, r.output)
        assert f"Usage: root {' '.join(path)}" in r.output, (path, r.output)


def test_unknown_command_is_refused_with_a_suggestion():
    r = CliRunner().invoke(app, ["migrat"])
    assert r.exit_code == 2
    assert "No such command 'migrat'" in r.output and "migrate" in r.output


def test_root_help_imports_no_command_module():
    # A fresh interpreter (this one has imported everything already): the one subprocess here.
    code = ("import sys\nfrom streams.cli import main\nsys.argv = ['memoria', '--help']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(__import__('json').dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    command_modules = {m for e in COMMANDS.values() for m in e.modules}
    assert not command_modules & loaded


def test_the_installed_entry_point_lists_every_command_from_any_folder(tmp_path):
    """`memoria --help` as a user runs it: the console script, from another folder, with no
    checkout on sys.path (an editable install maps the package with its own finder)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.pop(0); from streams.cli import main; main()",
                          "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for name in ("worker", "ingest", "ask", "admin", "replay", "connectors"):
        assert name in out.stdout, f"{name} missing from `memoria --help`:\n{out.stdout}"
