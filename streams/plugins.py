"""Optional flow modules: a flow that is not installed is skipped, a broken one fails loudly."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from types import ModuleType


def optional_modules(names: tuple[str, ...]) -> list[ModuleType]:
    found = []
    for name in names:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as e:
            if name.startswith(e.name or "-"):  # the module itself is absent, not one it imports
                continue
            raise
    return found


def module_present(name: str) -> bool:
    """Whether module ``name`` exists on the path, found without importing it or its parent packages
    (a package's ``__init__`` may import heavy dependencies)."""
    top, *rest = name.split(".")
    # the top-level package through every finder (an editable install maps it with its own
    # finder, not a sys.path entry); without importing it
    spec = importlib.util.find_spec(top)
    if spec is None:
        return False
    path = spec.submodule_search_locations
    for part in rest:
        if path is None:
            return False
        spec = importlib.machinery.PathFinder.find_spec(part, path)
        if spec is None:
            return False
        path = spec.submodule_search_locations
    return True
