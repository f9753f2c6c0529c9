"""Fixtures for the agent tests: the orchestration tier's real tmux, state dir and
Orchestrator."""

from __future__ import annotations

from tests.orchestration.conftest import orch, tmux_socket, workdir

__all__ = ["orch", "tmux_socket", "workdir"]
