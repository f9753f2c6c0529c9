"""The control room as the History tests run it: a fake source, a real state dir."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from app.settings import Settings
from app.tui.app import ControlRoomApp
from app.tui.screens.history import HistoryScreen
from app.tui.widgets.history_charts import HistoryChart
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.tui_helpers import settled, wait_until

SIZE = (120, 40)


class HistoryApp(ControlRoomApp):
    """The control room with its state dir in `settings`; `h` opens the History
    screen as in the real app (`ControlRoomApp.action_history`)."""

    def __init__(
        self,
        state_dir: Path,
        history_read_ahead_s: float | None = None,
        history_recheck_s: float | None = None,
    ) -> None:
        """No read-ahead unless asked: the tests that count reads expect only theirs."""
        super().__init__(
            FakeSource.seeded(),
            clock=fixed_clock,
            poll_interval_s=0.05,
            age_refresh_s=3600,
            reconcile_interval_s=None,
            history_read_ahead_s=history_read_ahead_s,
            history_recheck_s=history_recheck_s,
        )
        self.settings = Settings(state_dir=state_dir)


async def open_history(pilot: Pilot[Any]) -> HistoryScreen:
    """Press h and wait until the first load is in and every chart has drawn it
    (scripts/screenshots.py uses this too)."""
    await wait_until(pilot, lambda: pilot.app.polls_applied > 0, "the first poll")  # type: ignore[attr-defined]
    await pilot.press("h")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, HistoryScreen), "the screen")
    screen = pilot.app.screen
    assert isinstance(screen, HistoryScreen)
    await wait_until(pilot, lambda: screen.load_count >= 1, "the first history load")
    charts = screen.query(HistoryChart)
    await wait_until(
        pilot, lambda: not screen.charts or all(chart.draws for chart in charts), "the charts"
    )
    await settled(pilot)
    return screen


AppFactory = Callable[[], HistoryApp]


def charts_shown(screen: HistoryScreen) -> bool:
    """Every chart of the screen is on and has its data."""
    return screen.query_one("#charts").display and all(
        chart.data is not None for chart in screen.query(HistoryChart)
    )
