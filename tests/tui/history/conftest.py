"""Fixtures for the History screen: the control room over a fake source, with its state
dir holding (or not) a history written by `history_fixture`, and fake build commands."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.tui.screens.history import HistoryScreen
from app.tui.widgets.build_panel import BuildStep
from tests.tui.history.history_app import HistoryApp

ROOT = Path(__file__).resolve().parents[3]
FAKE_BUILD = "tests.tui.history.fake_build"  # run with -m: it imports history_fixture


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
        # the build steps run wherever the test stands: the checkout is found on the path
        paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))

        def steps(state_dir: Path, full: bool) -> list[BuildStep]:
            script = (sys.executable, "-m", FAKE_BUILD)
            return [
                BuildStep("export", (*script, "export", str(state_dir), str(gate))),
                BuildStep("history build", (*script, mode, str(state_dir), str(gate))),
            ]

        monkeypatch.setattr(HistoryScreen, "build_steps", staticmethod(steps))
        return gate

    return install
