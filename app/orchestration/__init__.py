"""The orchestration layer: jobs and sessions from the registry, acted out in tmux."""

from __future__ import annotations

from app.orchestration.demo import MAX_DEMO_AGENTS
from app.orchestration.errors import (
    AgentNotStarted,
    NotWaitingForPermission,
    OrchestrationError,
    UnknownAgent,
)
from app.orchestration.orchestrator import Orchestrator
from app.orchestration.reconcile import ReconcileReport

__all__ = [
    "MAX_DEMO_AGENTS",
    "AgentNotStarted",
    "NotWaitingForPermission",
    "OrchestrationError",
    "Orchestrator",
    "ReconcileReport",
    "UnknownAgent",
]
