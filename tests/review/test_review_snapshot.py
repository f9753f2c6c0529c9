"""The Review screen's look, pinned by pytest-textual-snapshot: the state the README's
screenshot shows (scripts/screenshots.py builds both), 120x40, fixed clock, ids and
commit dates. Regenerate with `pytest tests/review --snapshot-update`."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.registry_source import RegistrySource
from app.tui.screens.review import ReviewScreen
from tests.review.review_fixture import build_review_state
from tests.tui.tui_helpers import loaded, settled, wait_until

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "screenshots.py"
SIZE = (120, 40)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _review(pilot: Any) -> None:
    await loaded(pilot)
    await pilot.press("down", "v")  # the older job: more files, uncommitted work
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the Review screen")
    screen = app.screen
    await wait_until(pilot, lambda: screen.reads > 0 and screen.outlook is not None, "the diff")
    await settled(pilot)


def test_review_screen(
    snap_compare: Callable[..., bool],
    tmp_path: Path,
    tmux_socket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = load_script()
    for name, value in script.REVIEW_GIT_ENV.items():
        monkeypatch.setenv(name, value)
    state_dir = tmp_path / "review-state"
    clock = script.PinnedClock()
    with script.pinned(clock):
        build_review_state(state_dir, tmp_path / "shop")
    now = datetime.fromtimestamp(clock.ms / 1000, UTC)
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket, clock_ms=lambda: clock.ms)
    app = ControlRoomApp(
        source,
        clock=lambda: now,
        age_refresh_s=3600,
        reconcile_interval_s=None,
        history_read_ahead_s=None,
        history_recheck_s=None,
    )
    assert snap_compare(app, terminal_size=SIZE, run_before=_review)
