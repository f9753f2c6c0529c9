"""Fixtures for the History screen: the control room over a fake source, with its state
dir holding (or not) a history written by `history_fixture`, and fake build commands."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # importlib mode: make history_fixture importable
sys.path.insert(0, str(HERE.parent / "tui"))  # and the control room's fake source

from history_app import HistoryApp  # noqa: E402

from app.tui.screens.history import HistoryScreen  # noqa: E402
from app.tui.widgets.build_panel import BuildStep  # noqa: E402

FAKE_BUILD = HERE / "fake_build.py"


@pytest.fixture
def make_app(state_dir: Path) -> Callable[[], HistoryApp]:
    return lambda: HistoryApp(state_dir)


@pytest.fixture
def fake_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Path]:
    """Point the rebuild at fake_build.py; returns the gate file that lets the fake
    build finish (so a test can look at the screen while the build runs)."""

    def install(*, fail: bool = False, gated: bool = True) -> Path:
        gate = tmp_path / "gate"
        if not gated:
            gate.touch()
        mode = "fail" if fail else "build"

        def steps(state_dir: Path, full: bool) -> list[BuildStep]:
            script = (sys.executable, str(FAKE_BUILD))
            return [
                BuildStep("export", (*script, "export", str(state_dir), str(gate))),
                BuildStep("history build", (*script, mode, str(state_dir), str(gate))),
            ]

        monkeypatch.setattr(HistoryScreen, "build_steps", staticmethod(steps))
        return gate

    return install
