"""History screen load time: opening the screen (what `h` does; also after the control
room has read the history ahead, its usual case) to all four charts
drawn, on a realistic aggregate file (30 days x 5 agents, hourly, with tokens), pyarrow
already imported; and the same when the screen is pushed and loads itself. Prints a
table."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from pathlib import Path

from textual.app import App

import app.tui.widgets.plotext_visual as plotext_visual
from app.tui.screens.history import HistoryScreen
from app.tui.screens.history_read import read_history
from app.tui.widgets.history_charts import HistoryChart
from registry.history.reader import load_history
from tests.tui.history.history_fixture import write_history

RUNS = 20
PLOTEXT_MS: list[float] = []  # time inside plotext's own render, per chart drawn


def _timed_plot_runs(plot):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    try:
        return _plot_runs(plot)
    finally:
        PLOTEXT_MS.append((time.perf_counter() - start) * 1000)


_plot_runs = plotext_visual.plot_runs
plotext_visual.plot_runs = _timed_plot_runs


class TimedHistoryScreen(HistoryScreen):
    """The History screen, noting when its load finished and when the first frame
    with every chart drawn went out (no polling: that would compete with it)."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir)
        self.loaded_at = 0.0
        self.drawn_at = 0.0
        self.drawn = asyncio.Event()

    def _finish_load(self) -> None:
        super()._finish_load()
        self.loaded_at = time.perf_counter()

    def _compositor_refresh(self) -> None:
        super()._compositor_refresh()
        charts = list(self.query(HistoryChart)) if self.load_count else []
        if charts and not self.drawn.is_set() and all(chart.draws for chart in charts):
            self.drawn_at = time.perf_counter()
            self.drawn.set()


async def screen_loads(
    state_dir: Path, how: str
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Milliseconds from opening the screen until the data is in (read + charts
    computed in the worker), and until a frame with every chart drawn is out.

    ``how``: "open" is what `h` does (``HistoryScreen.open``: read, then push);
    "ahead" is `h` after the control room has read the history ahead and drawn its
    charts at the screen's size (the usual case); "push" pushes the screen, which
    then loads (resuming it; a read slower than OPEN_WAIT_S). Also the CPU time the
    process spent (all its threads): on a busy machine the wall time measures the
    neighbours too."""
    app: App[None] = App()
    timings: list[float] = []
    cpu: list[float] = []
    loaded: list[float] = []
    plotext: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        # As the control room does once its first frame is up (ControlRoomApp): what
        # lives as long as the app is out of the collector's sight, else a full
        # collection walking all of it lands inside some of the loads.
        gc.freeze()
        for _ in range(RUNS):
            screen = TimedHistoryScreen(state_dir)
            if how == "ahead":
                screen.read_ahead(app)
                while screen._ahead is None:
                    await asyncio.sleep(0.005)
                await pilot.pause()
            PLOTEXT_MS.clear()
            start, start_cpu = time.perf_counter(), time.process_time()
            if how in ("open", "ahead"):
                screen.open(app)
            else:
                app.push_screen(screen)
            await screen.drawn.wait()
            cpu.append((time.process_time() - start_cpu) * 1000)
            loaded.append((screen.loaded_at - start) * 1000)
            timings.append((screen.drawn_at - start) * 1000)
            plotext.append(sum(PLOTEXT_MS))
            app.pop_screen()
            await pilot.pause()
            await asyncio.sleep(0.1)  # let the popped screen's teardown finish first
    return loaded, timings, plotext, cpu


def measure(state_dir: Path) -> dict[str, list[float]]:
    """Every row of the table, in ms, on the history in ``state_dir``."""
    first = time.perf_counter()
    load_history(state_dir)  # pays pyarrow's first-call imports
    first_ms = (time.perf_counter() - first) * 1000
    reads: dict[int, list[float]] = {24: [], 720: []}
    for hours, timings in reads.items():
        for _ in range(RUNS):
            start = time.perf_counter()
            read_history(state_dir, None, hours)  # files, prices, charts: the worker's part
            timings.append((time.perf_counter() - start) * 1000)
    opened = asyncio.run(screen_loads(state_dir, "open"))
    ahead = asyncio.run(screen_loads(state_dir, "ahead"))
    pushed = asyncio.run(screen_loads(state_dir, "push"))
    return {
        "first load_history (pyarrow imports)": [first_ms],
        "read_history: files + prices + charts, 24 h": reads[24],
        "read_history: files + prices + charts, 30 d": reads[720],
        "h (open) -> data loaded": opened[0],
        "h (open) -> charts drawn": opened[1],
        "  of which plotext drawing the 4 charts": opened[2],
        "h (open), read ahead -> charts drawn": ahead[1],
        "  same, CPU time of the process": ahead[3],
        "push_screen, screen loads -> data loaded": pushed[0],
        "push_screen, screen loads -> charts drawn": pushed[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, help="a built history (default: 30 days x 5)")
    parser.add_argument("--json", action="store_true", help="print the medians as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state_dir = args.state_dir or Path(tmp)
        if args.state_dir is None:
            write_history(state_dir, days=30, agents=5)
        results = measure(state_dir)  # first: its first read pays pyarrow's imports
        rows = len(load_history(state_dir).rows)
    if args.json:
        print(json.dumps({name: statistics.median(ms) for name, ms in results.items()}))
        return
    print(f"History screen load: {rows} hourly rows")
    print(f"{'what':<44}{'median ms':>10}{'min ms':>9}{'max ms':>9}")
    for name, values in results.items():
        print(f"{name:<44}{statistics.median(values):>10.1f}{min(values):>9.1f}{max(values):>9.1f}")


if __name__ == "__main__":
    main()
