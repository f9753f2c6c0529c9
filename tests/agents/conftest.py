"""Fixtures for driving real agent CLIs: scripted fake model servers, stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.agents.fake_models.script import Script
from tests.agents.fake_models.server import FakeModelServer, WireApi

ServeModel = Callable[[WireApi, Script], FakeModelServer]


@pytest.fixture
def serve_model() -> Iterator[ServeModel]:
    """``serve_model(AnthropicMessages(), script)``: a started fake model server."""
    servers: list[FakeModelServer] = []

    def start(api: WireApi, script: Script) -> FakeModelServer:
        server = FakeModelServer(api, script).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


# The control room's real tmux, state dir and Orchestrator, for tests that run
# agents through orchestrate itself.
from tests.control.conftest import orch, tmux_socket, workdir  # noqa: E402

__all__ = ["ServeModel", "orch", "serve_model", "tmux_socket", "workdir"]
