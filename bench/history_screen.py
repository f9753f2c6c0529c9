"""History screen load time: push_screen to all three charts drawn, on a realistic
aggregate file (30 days x 5 agents, hourly), pyarrow already imported. Prints a table."""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

from textual.app import App
from textual_plotext import PlotextPlot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "tui_history"))

from history_fixture import write_history

from app.tui.screens.history import HistoryScreen
from app.tui.widgets.history_charts import HistoryChart, build_charts
from registry.history.reader import load_history

RUNS = 10
PLOTEXT_MS: list[float] = []  # time inside plotext's own render, per chart drawn


def _timed_plotext_render(plot: PlotextPlot):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    try:
        return _plotext_render(plot)
    finally:
        PLOTEXT_MS.append((time.perf_counter() - start) * 1000)


_plotext_render = PlotextPlot.render
PlotextPlot.render = _timed_plotext_render  # type: ignore[method-assign]


async def screen_loads(state_dir: Path) -> tuple[list[float], list[float], list[float]]:
    """Milliseconds from push_screen until the data is in (read + charts computed in
    the worker, screen composed), and until every chart has rendered it."""
    app: App[None] = App()
    timings: list[float] = []
    loaded: list[float] = []
    plotext: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        # As the control room does once its first frame is up (ControlRoomApp): what
        # lives as long as the app is out of the collector's sight, else a full
        # collection walking all of it lands inside some of the loads.
        gc.freeze()
        for _ in range(RUNS):
            screen = HistoryScreen(state_dir)
            PLOTEXT_MS.clear()
            start = time.perf_counter()
            app.push_screen(screen)
            while screen.load_count == 0:
                await asyncio.sleep(0.0005)
            loaded.append((time.perf_counter() - start) * 1000)
            while screen.load_count == 0 or not all(
                chart.data is not None and chart.draws > 0 for chart in screen.query(HistoryChart)
            ):
                await asyncio.sleep(0.0005)
            timings.append((time.perf_counter() - start) * 1000)
            plotext.append(sum(PLOTEXT_MS))
            app.pop_screen()
            await pilot.pause()
    return loaded, timings, plotext


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state_dir = Path(tmp)
        write_history(state_dir, days=30, agents=5)
        first = time.perf_counter()
        snapshot = load_history(state_dir)  # pays pyarrow's first-call imports
        first_ms = (time.perf_counter() - first) * 1000
        reads = []
        for _ in range(RUNS):
            start = time.perf_counter()
            build_charts(load_history(state_dir))
            reads.append((time.perf_counter() - start) * 1000)
        loaded, drawn, plotext = asyncio.run(screen_loads(state_dir))
    print(f"History screen load: {len(snapshot.rows)} rows (30 days x 5 agents, hourly)")
    print(f"{'what':<44}{'median ms':>10}{'min ms':>9}{'max ms':>9}")
    print(f"{'first load_history (pyarrow imports)':<44}{first_ms:>10.1f}{'':>9}{'':>9}")
    for name, values in (
        ("load_history + build_charts (warm)", reads),
        ("push_screen -> data loaded (worker done)", loaded),
        ("push_screen -> 3 charts drawn", drawn),
        ("  of which plotext drawing the 3 charts", plotext),
    ):
        print(f"{name:<44}{statistics.median(values):>10.1f}{min(values):>9.1f}{max(values):>9.1f}")


if __name__ == "__main__":
    main()
