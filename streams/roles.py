"""Registration point for the learning, responding and maintenance roles.

Kept apart from ``streams.app`` so that each flow wires its own agents.
"""

from __future__ import annotations

from typing import Sequence


def register(app, settings, container, roles: Sequence[str], *, batch_agent, state) -> None:
    """Wire the roles implemented outside the ingestion path (none yet)."""
    return None
