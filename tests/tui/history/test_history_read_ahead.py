"""The History screen's reads: `h` opens it drawn, a slow read opens it loading, the
read-ahead in the background, and coming back to an unchanged history reads nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import LoadingIndicator

import app.tui.screens.history as history_module
import app.tui.screens.history_read as read_module
import app.tui.widgets.history_charts as charts_module
from app.tui.screens.history import HistoryScreen
from app.tui.screens.history_layout import chart_sizes
from app.tui.screens.main import MainScreen
from app.tui.widgets.history_charts import HistoryChart
from registry.history.reader import history_version
from tests.tui.history.history_app import SIZE, AppFactory, HistoryApp, charts_shown, open_history
from tests.tui.history.history_fixture import write_history
from tests.tui.tui_helpers import wait_until


class Spy:
    """Counts calls to a function it wraps; with a `gate`, each call waits for the
    test to open it (a slow read, without betting on how slow the machine is)."""

    def __init__(self, function: Callable[..., Any], gate: threading.Event | None = None) -> None:
        self.function = function
        self.gate = gate
        self.calls = 0

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        """A method's spy: called through an instance, it gets the instance first."""
        return self if instance is None else partial(self, instance)

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.gate is not None:
            assert self.gate.wait(10), "the test never let the read finish"
        return self.function(*args)


def spy_on(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, gate: threading.Event | None = None
) -> Spy:
    """Replace ``module.name`` with a Spy of it for the test."""
    spy = Spy(getattr(module, name), gate)
    monkeypatch.setattr(module, name, spy)
    return spy


async def test_h_opens_the_screen_drawn(
    make_app: AppFactory, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`h` reads the history first, then shows the screen with its charts on the first
    frame: no loading indicator in between, one read; `h` again while it reads does
    not open a second screen."""
    write_history(state_dir)
    reads = spy_on(monkeypatch, read_module, "read_history")
    open_wait_s = 1.0  # the read must beat it however busy the machine (~10 ms idle)
    monkeypatch.setattr(history_module, "OPEN_WAIT_S", open_wait_s)
    shown_loading = spy_on(monkeypatch, HistoryScreen, "_show_loading")
    opened: list[object] = []  # each _opened's outcome (None: OPEN_WAIT_S's timer)
    real_opened = HistoryScreen._opened

    # a plain function, not a Spy: call_from_thread passes as many arguments as the
    # callback's signature names
    def counted_opened(self: HistoryScreen, app: Any, outcome: Any) -> None:
        opened.append(outcome)
        real_opened(self, app, outcome)

    monkeypatch.setattr(HistoryScreen, "_opened", counted_opened)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.polls_applied > 0, "the first poll")
        await pilot.press("h", "h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), "the screen")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        await wait_until(pilot, lambda: screen.is_mounted, "the screen mounted")
        assert screen.load_count == 1 and charts_shown(screen)  # already at its mount
        # past OPEN_WAIT_S, nothing else arrives: its timer has fired (the read's
        # _opened, then the timer's), counted rather than a fixed pause
        await wait_until(pilot, lambda: len(opened) == 2, "OPEN_WAIT_S's timer")
        assert opened[1] is None
        await pilot.pause()
        assert (reads.calls, shown_loading.calls, screen.load_count) == (1, 0, 1)
        assert not screen.query(LoadingIndicator)
        assert len(app.screen_stack) == 2


async def test_a_slow_read_opens_the_screen_loading(
    make_app: AppFactory, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read slower than OPEN_WAIT_S: the screen opens anyway, loading, and the
    charts appear when the read lands (no second read)."""
    write_history(state_dir)
    gate = threading.Event()
    reads = spy_on(monkeypatch, read_module, "read_history", gate)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.polls_applied > 0, "the first poll")
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), "the screen")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        await wait_until(pilot, lambda: screen.is_mounted, "the screen mounted")
        assert screen.loading_history and screen.query_one("#history-body").loading
        assert screen.load_count == 0 and not charts_shown(screen)
        gate.set()
        await wait_until(pilot, lambda: screen.load_count == 1, "the read")
        await pilot.pause()
        assert charts_shown(screen) and not screen.query(LoadingIndicator)
        assert reads.calls == 1


def loading_workers(app: Any) -> list[Any]:
    """The History screen's read workers still running."""
    return [w for w in app.workers if w.group == "history-load" and not w.is_finished]


async def read_ahead(app: HistoryApp, pilot: Any) -> None:
    """Wait for the control room's read-ahead to have the history in memory."""
    await wait_until(pilot, lambda: app.polls_applied > 0, "the first poll")
    screen = HistoryScreen.shared(app)
    await wait_until(pilot, lambda: screen._ahead is not None, "the read-ahead")


async def test_h_opens_from_the_history_read_ahead(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control room reads the history once it has settled; `h` then shows it
    at once, drawn, with no read of its own."""
    write_history(state_dir)
    reads = spy_on(monkeypatch, read_module, "read_history")
    app = HistoryApp(state_dir, history_read_ahead_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await read_ahead(app, pilot)
        assert reads.calls == 1 and isinstance(app.screen, MainScreen)
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), "the screen")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        await wait_until(pilot, lambda: screen.is_mounted, "the screen mounted")
        assert screen.load_count == 1 and charts_shown(screen)  # already at its mount
        assert reads.calls == 1 and len(screen.snapshot.agents) == 3  # type: ignore[union-attr]


async def test_the_read_ahead_draws_the_charts_too(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read-ahead also draws the four charts, at the sizes the screen gives them:
    `h` shows them without drawing any on the event loop. After a resize they draw
    themselves again."""
    write_history(state_dir)
    live_draws = spy_on(monkeypatch, charts_module, "render_plot")
    app = HistoryApp(state_dir, history_read_ahead_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await read_ahead(app, pilot)
        screen = await open_history(pilot)
        charts = list(screen.query(HistoryChart))
        assert [chart.draws for chart in charts] == [1, 1, 1, 1] and live_draws.calls == 0
        assert not screen._drawn_ahead  # each used once, none left over
        await pilot.resize_terminal(100, 30)
        await wait_until(pilot, lambda: live_draws.calls == 4, "the charts redrawn")


async def test_the_read_ahead_follows_a_build_and_a_resize(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control room looks again every `history_recheck_s`: unchanged files are not
    read again; a build from the CLI is, and so is a resize (charts drawn at the new
    size). `h` then shows the newest history without a read or a draw of its own."""
    write_history(state_dir)
    reads = spy_on(monkeypatch, read_module, "read_history")
    live_draws = spy_on(monkeypatch, charts_module, "render_plot")
    looks = spy_on(monkeypatch, history_module, "history_version")
    app = HistoryApp(state_dir, history_read_ahead_s=0.05, history_recheck_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await read_ahead(app, pilot)
        screen = HistoryScreen.shared(app)
        # several looks that found nothing changed (counted, not a fixed pause)
        looked = looks.calls
        await wait_until(pilot, lambda: looks.calls >= looked + 3, "three more looks")
        assert reads.calls == 1
        write_history(state_dir, agents=5)
        version = history_version(state_dir)  # a look between two files reads twice
        await wait_until(
            pilot,
            lambda: screen._ahead is not None and screen._ahead.outcome.version == version,
            "the build read ahead",
        )
        read_for_build = reads.calls
        await pilot.resize_terminal(100, 30)
        await wait_until(pilot, lambda: reads.calls == read_for_build + 1, "the resize read")
        await wait_until(
            pilot,
            lambda: screen._ahead is not None and screen._ahead.drawn_for[0] == app.size,
            "the charts drawn ahead at the new size",
        )
        screen = await open_history(pilot)
        assert len(screen.snapshot.agents) == 5  # type: ignore[union-attr]
        assert (reads.calls, live_draws.calls) == (read_for_build + 1, 0)
        assert {chart.id: chart.size for chart in screen.query(HistoryChart)} == chart_sizes(
            app.size
        )


@pytest.mark.parametrize("size", [SIZE, (121, 41), (80, 24), (61, 15)])
async def test_chart_sizes_are_the_laid_out_ones(
    make_app: AppFactory, state_dir: Path, size: tuple[int, int]
) -> None:
    """``chart_sizes`` (where the read-ahead draws) agrees with the layout, odd
    sizes included; were it wrong, the read-ahead's drawings would go unused."""
    write_history(state_dir)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        screen = await open_history(pilot)
        laid_out = {chart.id: chart.size for chart in screen.query(HistoryChart)}
        assert laid_out == chart_sizes(app.size)


async def test_a_build_after_the_read_ahead_is_read_again(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files replaced since the read-ahead (a build from the CLI): `h` reads them."""
    write_history(state_dir)
    reads = spy_on(monkeypatch, read_module, "read_history")
    app = HistoryApp(state_dir, history_read_ahead_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await read_ahead(app, pilot)
        write_history(state_dir, agents=5)
        screen = await open_history(pilot)
        assert reads.calls == 2 and len(screen.snapshot.agents) == 5  # type: ignore[union-attr]


async def test_no_history_read_ahead_then_one_built(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read ahead before any build (the 'not built' notice in memory), then a first
    build: `h` shows the charts, not the stale notice."""
    app = HistoryApp(state_dir, history_read_ahead_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await read_ahead(app, pilot)
        write_history(state_dir)
        screen = await open_history(pilot)
        assert charts_shown(screen)


async def test_coming_back_to_an_unchanged_history_reads_nothing(
    make_app: AppFactory, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """esc, then `h` again with no build since: the charts are back at once, with no
    read, no loading indicator and no redraw."""
    write_history(state_dir)
    reads = spy_on(monkeypatch, read_module, "read_history")
    shown_loading = spy_on(monkeypatch, HistoryScreen, "_show_loading")
    checks = spy_on(monkeypatch, HistoryScreen, "_reload_if_rebuilt")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        draws = [chart.draws for chart in screen.query(HistoryChart)]
        assert (reads.calls, shown_loading.calls) == (1, 0)
        for _ in range(2):
            await pilot.press("escape")
            await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
            await pilot.press("h")
            await wait_until(pilot, lambda: app.screen is screen, "the History screen")
        # each return's check has run to its end (counted, not a fixed pause)
        await wait_until(pilot, lambda: checks.calls == 2, "both returns' checks")
        await wait_until(pilot, lambda: not loading_workers(app), "the checks' end")
        await pilot.pause()
        assert (reads.calls, shown_loading.calls, screen.load_count) == (1, 0, 1)
        assert [chart.draws for chart in screen.query(HistoryChart)] == draws
        assert charts_shown(screen)


async def test_coming_back_reads_again(make_app: AppFactory, state_dir: Path) -> None:
    """esc, then `h` again: the screen is the same one and picks up a newer build."""
    write_history(state_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert screen.snapshot is not None and len(screen.snapshot.agents) == 3
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        write_history(state_dir, agents=5)  # a build run from the CLI meanwhile
        await pilot.press("h")
        await wait_until(pilot, lambda: screen.load_count == 2, "the second load")
        assert app.screen is screen and len(screen.snapshot.agents) == 5
