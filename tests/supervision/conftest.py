"""Supervision's tests run real agents under a real Orchestrator: the control room's
private tmux server, working directory and Orchestrator fixtures, shared."""

from __future__ import annotations

from tests.control.conftest import orch, tmux_socket, workdir

__all__ = ["orch", "tmux_socket", "workdir"]
