"""Registration point for the learning, responding and maintenance roles.

Each flow wires its own agents and timers in ``<package>/wiring.py`` with a
``register(app, settings, container, roles, *, batch_agent, state)`` function.
"""

from __future__ import annotations

from typing import Sequence

from streams.plugins import optional_modules

FLOW_WIRING = ("streams.learn.wiring", "streams.respond.wiring", "streams.maintain.wiring")


def register(app, settings, container, roles: Sequence[str], *, batch_agent, state) -> None:
    for mod in optional_modules(FLOW_WIRING):
        mod.register(app, settings, container, roles, batch_agent=batch_agent, state=state)
