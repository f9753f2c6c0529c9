"""Fixtures for control-room tests against real SQLite state and a real tmux server
(``tmux_socket``, a private one per test, comes from ``tests/plugin/tmux.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from registry.jobs import Registry


@pytest.fixture
def registry(state_dir: Path) -> Registry:
    return Registry.open(state_dir)


@pytest.fixture
def make_app(state_dir: Path, tmux_socket: str) -> Callable[..., ControlRoomApp]:
    """A control room over the test's state dir and tmux socket, polling fast."""

    def build(
        *, source: RegistrySource | None = None, settings: Settings | None = None, **kwargs: object
    ) -> ControlRoomApp:
        source = source or RegistrySource(settings or Settings(state_dir), tmux_socket=tmux_socket)
        options: dict[str, object] = {"poll_interval_s": 0.05, "reconcile_interval_s": None}
        return ControlRoomApp(source, **(options | kwargs))  # type: ignore[arg-type]

    return build
