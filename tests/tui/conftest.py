"""Fixtures for the control room tests: a seeded fake source and a running app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.tui.app import ControlRoomApp
from tests.tui.fake_source import FakeSource, fixed_clock

PANE_LOG_LINES = [f"agent> step {n}: editing src/module_{n}.py" for n in range(1, 9)]


@pytest.fixture
def pane_log(tmp_path: Path) -> Path:
    path = tmp_path / "pane-3fa2c1d0.log"
    path.write_text("\n".join(PANE_LOG_LINES) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def fake(pane_log: Path) -> FakeSource:
    return FakeSource.seeded(pane_log=pane_log)


@pytest.fixture
def make_app(fake: FakeSource) -> Callable[[], ControlRoomApp]:
    def build() -> ControlRoomApp:
        return ControlRoomApp(fake, clock=fixed_clock, poll_interval_s=0.05, age_refresh_s=3600)

    return build
