"""The control room: jobs, sessions and panes from the registry, acted out in tmux.

:class:`Orchestrator` is the one object the CLI commands and the TUI hold; it is a
thin facade over ``jobs.py`` (submit, cancel, resume), ``sessions.py`` (tmux
sessions and their records) and ``panes.py`` (finding, typing into and attaching
to an agent's pane). How a job's agent is started lives in ``launch.py``.
"""

from __future__ import annotations

from app.control.demo_fleet import MAX_DEMO_AGENTS
from app.control.errors import (
    AgentNotStarted,
    NotWaitingForPermission,
    OrchestrationError,
    UnknownAgent,
)
from app.control.orchestrator import Orchestrator

__all__ = [
    "MAX_DEMO_AGENTS",
    "AgentNotStarted",
    "NotWaitingForPermission",
    "OrchestrationError",
    "Orchestrator",
    "UnknownAgent",
]
