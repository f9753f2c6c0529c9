"""End to end: the History screen's rebuild runs the real `orchestrate history build`
(Spark in a child process) on a small export and then draws what it wrote."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.tui.screens.history import HistoryScreen
from app.tui.widgets.build_panel import BuildStep, default_build_steps
from app.tui.widgets.history_charts import HistoryChart
from registry.history.errors import java_available
from registry.history.synthetic import generate_lines
from tests.ci import missing_part
from tests.tui.history.history_app import HistoryApp, open_history

# ~45 s on this 2-core machine (a cold JVM), over the 30 s budget of the default run:
# slow keeps it out of it; run it with `pytest tests/tui/history -m spark`.
pytestmark = [pytest.mark.spark, pytest.mark.slow]


async def test_rebuild_runs_the_real_spark_build(
    make_app: Callable[[], HistoryApp], state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`b` with the real build command: progress lines from Spark, then charts."""
    if not java_available():
        missing_part("Spark needs Java (apt-get install -y default-jre-headless)")
    export = state_dir / "export" / "bus.jsonl"
    export.parent.mkdir(parents=True)
    export.write_text("".join(generate_lines(2_000)), encoding="utf-8")

    def build_only(state: Path, full: bool) -> list[BuildStep]:
        steps = default_build_steps(state, full)
        small = ("--master", "local[1]", "--driver-memory", "512m")
        return [BuildStep(step.name, (*step.argv, *small)) for step in steps]

    monkeypatch.setattr(HistoryScreen, "build_steps", staticmethod(build_only))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_history(pilot)
        await pilot.press("b")
        deadline = time.monotonic() + 120  # a cold JVM: seconds, not minutes
        while screen.building and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert not screen.building, "the build did not finish"
        assert screen.build_error is None
        log_lines = list(screen.query_one("#build-log").lines)  # type: ignore[attr-defined]
        assert any(line.startswith("history: ") for line in log_lines)
        while screen.charts is None and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert screen.charts is not None and screen.charts.summary.total.completed > 0
        assert all(chart.data is not None for chart in screen.query(HistoryChart))
