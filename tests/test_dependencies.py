"""Every third-party package the product imports is declared in pyproject.toml, and the lock file
(requirements.lock, pip constraints used by `make install` and CI) pins every declaration to a version
that satisfies it, which is the version installed here."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from streams.settings import REPO_ROOT

FIRST_PARTY = ("streams", "connectors", "schemas")
# the product and everything that runs it: benchmarks, the local stack, the tests
SCANNED = FIRST_PARTY + ("benchmarks", "infra", "tests")
LOCAL = FIRST_PARTY + ("benchmarks", "infra", "tests")
LOCK = REPO_ROOT / "requirements.lock"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, Requirement]:
    """Every requirement of the project and its extras, by normalised distribution name."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {_norm(Requirement(r).name): Requirement(r) for r in reqs}


def locked() -> dict[str, Version]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line!r}"
            pins[_norm(name)] = Version(version)
    return pins


def imported_modules() -> dict[str, set[str]]:
    """Top-level third-party modules imported anywhere in the product, its benchmarks, the stack script
    and the tests (lazy imports included) → files."""
    found: dict[str, set[str]] = {}
    local = set(LOCAL) | {p.stem for d in SCANNED for p in (REPO_ROOT / d).rglob("*.py")}  # sibling scripts
    for package in SCANNED:
        for path in (REPO_ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in local:
                        found.setdefault(top, set()).add(path.relative_to(REPO_ROOT).as_posix())
    return found


def test_every_imported_package_is_declared():
    distributions = md.packages_distributions()
    wanted = declared()
    missing, not_installed = [], []
    for module, files in sorted(imported_modules().items()):
        dists = distributions.get(module)
        if not dists:
            not_installed.append(f"{module} (imported by {sorted(files)[0]})")
        elif not any(_norm(d) in wanted for d in dists):
            missing.append(f"{module} → {dists[0]} (imported by {', '.join(sorted(files)[:3])})")
    assert not not_installed, "imported but not installed: " + "; ".join(not_installed)
    assert not missing, "declare in pyproject.toml: " + "; ".join(missing)


def test_the_walk_finds_the_product_imports():
    modules = imported_modules()
    assert {"faust", "psycopg", "qdrant_client", "typer", "numpy"} <= set(modules)
    assert not set(modules) & {"os", "json", "streams", "schemas"}


def test_the_lock_pins_every_declaration_to_a_satisfying_version():
    pins = locked()
    unpinned = sorted(set(declared()) - set(pins))
    assert not unpinned, f"not in requirements.lock (run `make lock`): {unpinned}"
    wrong = [f"{name}=={pins[name]} does not satisfy {req}" for name, req in declared().items()
             if not req.specifier.contains(pins[name], prereleases=True)]
    assert not wrong, wrong


def test_the_environment_is_the_lock():
    drift = []
    for name, version in locked().items():
        try:
            installed = Version(md.version(name))
        except md.PackageNotFoundError:
            drift.append(f"{name}: locked {version}, not installed")
            continue
        if Version(installed.public) != version:  # torch's local label (+cpu) is machine-specific
            drift.append(f"{name}: locked {version}, installed {installed}")
    assert not drift, "the venv differs from requirements.lock (make install / make lock): " + "; ".join(drift)


def test_the_lock_has_no_machine_specific_line():
    for line in LOCK.read_text().splitlines():
        assert not re.search(r"\+|@|file:|^-e |^/", line) or line.startswith("#"), line
