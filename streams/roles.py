"""Registration point for the learning, responding and maintenance roles.

Each flow wires its own agents and timers in ``<package>/wiring.py`` with a
``register(app, settings, container, roles, *, batch_agent, state)`` function.
"""

from __future__ import annotations

import importlib
from typing import Sequence

FLOW_WIRING = ("streams.learn.wiring", "streams.respond.wiring", "streams.maintain.wiring")


def register(app, settings, container, roles: Sequence[str], *, batch_agent, state) -> None:
    for module in FLOW_WIRING:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if module.startswith(e.name or "-"):  # the flow is not installed
                continue
            raise
        mod.register(app, settings, container, roles, batch_agent=batch_agent, state=state)
