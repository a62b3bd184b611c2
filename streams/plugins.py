"""Optional flow modules: a flow that is not installed is skipped, a broken one fails loudly."""

from __future__ import annotations

import importlib
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
