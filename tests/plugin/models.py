"""Scripted fake model servers (``app/selftest/models``) for driving real agent CLIs
offline, each stopped after the test that started it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from app.selftest.models.script import Script
from app.selftest.models.server import FakeModelServer, WireApi

ServeModel = Callable[[WireApi, Script], FakeModelServer]


@pytest.fixture
def serve_model() -> Iterator[ServeModel]:
    """``serve_model(AnthropicMessages(), script)``: a started fake model server."""
    servers: list[FakeModelServer] = []

    def start(api: WireApi, script: Script) -> FakeModelServer:
        server = FakeModelServer(api, script).__enter__()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.close()
