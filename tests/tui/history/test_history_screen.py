"""The History screen: charts from a fixed parquet fixture, the states that are not
charts (not built, damaged, empty), the agent filter and the rebuild action."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from rich.text import Text
from textual.command import CommandList
from textual.geometry import Region
from textual.widgets import Log, Static

from app.tui.screens.history import HistoryScreen
from app.tui.screens.main import MainScreen
from app.tui.widgets.agents_table import AgentsTable
from app.tui.widgets.build_panel import BuildPanel, default_build_steps
from app.tui.widgets.history_charts import HistoryChart
from app.tui.widgets.range_picker import RangePicker
from registry.history.reader import empty_row
from tests.tui.history.history_app import SIZE, AppFactory, charts_shown, open_history
from tests.tui.history.history_fixture import FIRST_HOUR, aggregate_rows, write_history
from tests.tui.tui_helpers import notices, wait_until

RESTART_HOUR = FIRST_HOUR + timedelta(hours=9)  # the fixture's first control-room start
Snap = Callable[..., bool]


def notice_text(screen: HistoryScreen) -> str:
    return str(screen.query_one("#history-notice", Static).render())


def test_snapshot_with_fixture(snap_compare: Snap, make_app: AppFactory, state_dir: Path) -> None:
    """The last 24 h of a fixed history: time in each activity per agent (stacked bars),
    jobs completed, the waits for a person and the estimated cost, restart markers,
    last build time, totals and the per-agent table."""
    write_history(state_dir)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_history)


async def test_charts_show_the_fixture(make_app: AppFactory, state_dir: Path) -> None:
    """The newest 24 hours: one throughput series per agent, the restart marker of the
    second day, a stacked bar per agent of its hours in each activity, the answer
    times, the cost; the totals and the table agree with the fixture's rows."""
    write_history(state_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert charts_shown(screen) and screen.range_hours == 24
        assert screen.throughput is not None and screen.states is not None
        assert [s.label for s in screen.throughput.series] == ["claude", "codex", "gemini"]
        assert screen.throughput.markers == (13.0,)  # 03-02 13:00, in the last 24 h
        assert screen.states.categories == ("claude", "codex", "gemini")
        assert [s.label for s in screen.states.series] == ["working", "waiting", "idle", "other"]
        day = [r for r in aggregate_rows() if r["hour"] >= FIRST_HOUR + timedelta(days=1)]
        working = sum(int(r["working_ms"]) for r in day if r["agent"] == "codex") / 3_600_000
        assert screen.states.series[0].ys[1] == pytest.approx(working)
        assert [s.label for s in screen.latency.series] == ["p50", "p95"]  # type: ignore[union-attr]
        title = str(screen.query_one("#history-title", Static).render())
        assert "built 2026-03-03 00:05 UTC" in title and "3 agents" in title
        assert "03-02 00:00 → 03-02 23:00 UTC (24 h)" in title
        totals = str(screen.query_one("#history-totals", Static).render())
        done = sum(int(r["jobs_completed"]) for r in day)
        assert f"{done} done" in totals and "│ 2 restarts" in totals  # both at 03-02 13:00
        assert "tokens (measured)" in totals and "(estimated)" in totals
        table = screen.query_one(AgentsTable)
        assert len(table.rows) == 4  # three agents and all of them
        assert str(table.rows[3][0]) == "all agents" and table.rows[3][1] == str(done)


async def test_the_job_keys_are_off_on_the_history_screen(
    make_app: AppFactory, state_dir: Path
) -> None:
    """No job is selected on the History screen: its footer does not offer the job keys
    (cancel, resume, stop, yes, log), and pressing one does nothing, not even a notice.
    The main screen still has them."""
    write_history(state_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        offered = {b.binding.action for b in screen.active_bindings.values() if b.enabled}
        job_keys = {"cancel_job", "resume_job", "stop_session", "answer('yes')", "toggle_log"}
        assert offered.isdisjoint(job_keys)
        assert {"rebuild", "cycle_agent", "help", "quit"} <= offered
        await pilot.press("c", "r", "s", "y", "l")
        await pilot.pause()
        assert app.screen is screen and notices(app) == []
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        main_keys = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        assert job_keys <= main_keys


async def test_one_agent_is_one_agent(make_app: AppFactory, state_dir: Path) -> None:
    """Title and totals count in words a person would write: "1 agent", "1 restart"."""
    write_history(state_dir, agents=1, days=1)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert " · 1 agent · " in str(screen.query_one("#history-title", Static).render())
        assert "· │ 1 restart · " in str(screen.query_one("#history-totals", Static).render())


async def test_agent_filter_cycles(make_app: AppFactory, state_dir: Path) -> None:
    """`a` shows one agent's charts, then the next, then all agents again."""
    write_history(state_dir, agents=2)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await pilot.press("a")
        assert screen.agent == "claude"
        assert screen.throughput and [s.label for s in screen.throughput.series] == ["claude"]
        assert screen.states and screen.states.categories == ("claude",)
        assert "agent claude" in str(screen.query_one("#history-title", Static).render())
        assert len(screen.query_one(AgentsTable).rows) == 1
        await pilot.press("a", "a")
        assert screen.agent is None
        assert screen.throughput and len(screen.throughput.series) == 2


async def test_not_built_says_how_to_build(make_app: AppFactory) -> None:
    """Before any build: a notice naming the key and the command, no charts."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        text = notice_text(screen)
        assert "No history has been built yet" in text
        assert "orchestrate history build" in text and "Press b" in text
        assert not screen.query_one("#charts").display


async def test_corrupt_parquet_shows_a_notice(make_app: AppFactory, state_dir: Path) -> None:
    """A damaged aggregate file is a notice on screen; the app keeps running."""
    paths = write_history(state_dir)
    paths.aggregates.write_bytes(b"PAR1 this is not parquet")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert "cannot be read" in notice_text(screen)
        assert screen.query_one("#history-notice").has_class("-error")
        assert screen.damaged  # so `b` rebuilds with --full
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_empty_history_says_so(make_app: AppFactory, state_dir: Path) -> None:
    """A build that found no job activity: the screen says the history is empty."""
    write_history(state_dir, rows=[])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert "The history is empty" in notice_text(screen)
        assert "2026-03-03 00:05 UTC" in notice_text(screen)


async def test_rebuild_streams_progress_and_reloads(
    make_app: AppFactory, fake_build: Callable[..., Path]
) -> None:
    """`b` runs the build as processes: their lines stream in, esc leaves and h comes
    back while it runs, and the charts appear when it exits 0. The build panel is
    only mounted by the first `b` (it made opening the screen slower)."""
    gate = fake_build()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert not screen.query(BuildPanel) and not screen.building
        await pilot.press("b")
        log = screen.query_one("#build-log", Log)
        assert screen.query_one(BuildPanel).display
        await wait_until(pilot, lambda: any("reading 42" in line for line in log.lines))
        assert screen.building
        assert any("exported 42" in line for line in log.lines)  # the export ran first
        await pilot.press("escape")  # input is not frozen: leave while it builds
        assert isinstance(app.screen, MainScreen)
        await pilot.press("h")
        assert app.screen is screen and screen.building
        gate.touch()
        await wait_until(pilot, lambda: not screen.building, "the build to finish")
        await wait_until(pilot, lambda: charts_shown(screen), "the charts to reload")
        assert screen.build_error is None
        assert any("wrote aggregates" in line for line in log.lines)
        assert "History rebuilt" in notices(app)


async def test_rebuild_failure_is_one_line(
    make_app: AppFactory, fake_build: Callable[..., Path]
) -> None:
    """A failing build shows its one-line reason; the screen stays usable."""
    fake_build(fail=True)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await pilot.press("b")
        await wait_until(pilot, lambda: screen.build_error is not None, "the build to fail")
        assert screen.build_error == (
            "history build failed: no bus export at /x/export/bus.jsonl: "
            "run `orchestrate export` first"
        )
        status = str(screen.query_one("#build-status", Static).render())
        assert status.startswith("Build failed: history build failed: no bus export")
        assert "No history has been built yet" in notice_text(screen)
        await pilot.press("b")  # and it can be tried again
        await wait_until(pilot, lambda: screen.building or screen.build_error is not None)


async def test_rebuild_from_the_palette(
    make_app: AppFactory, fake_build: Callable[..., Path]
) -> None:
    """The rebuild is also a command in the palette while the screen is open."""
    fake_build(gated=False)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await pilot.press("ctrl+p", *"rebuild")

        def first_hit() -> str:
            found = app.screen.query(CommandList)
            if not found or not found.first().option_count:
                return ""
            return str(found.first().get_option_at_index(0).prompt)

        await wait_until(pilot, lambda: "Rebuild history" in first_hit(), "the palette's hit")
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.building, "the build to start")
        await wait_until(pilot, lambda: not screen.building, "the build to finish")
        await wait_until(pilot, lambda: charts_shown(screen), "the charts after a rebuild")


def one_hour(state_dir: Path) -> None:
    """What a first demo run builds: one hour, two agents, one control-room start."""
    rows = [row for row in aggregate_rows(days=1, agents=2) if row["hour"] == RESTART_HOUR]
    write_history(state_dir, days=1, rows=rows)


def test_snapshot_one_hour(snap_compare: Snap, make_app: AppFactory, state_dir: Path) -> None:
    """A one-hour history: each agent's point is a dot mid-chart, not a corner pixel."""
    one_hour(state_dir)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_history)


async def test_one_hour_points_are_dots_mid_chart(make_app: AppFactory, state_dir: Path) -> None:
    one_hour(state_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        chart = screen.query_one("#throughput", HistoryChart)
        width, height = chart.size
        lines = [strip.text for strip in chart.render_lines(Region(0, 0, width, height))]
        dots = [(y, x) for y, line in enumerate(lines) for x, c in enumerate(line) if c == "●"]
        plotted = [(y, x) for y, x in dots if x > width // 4]  # the legend's are at the left
        assert len(plotted) == 2  # one per agent
        assert all(abs(x - width // 2) <= 6 for _, x in plotted)


def test_a_rebuild_exports_the_bus_once(tmp_path: Path) -> None:
    """`b` runs `orchestrate history build`, which exports the bus itself: a separate
    export before it made the build's log say "exported 0 new bus message(s)"."""
    steps = default_build_steps(tmp_path, False)
    assert [step.name for step in steps] == ["history build"]
    assert steps[0].argv[-2:] == ("history", "build")


async def test_an_agent_without_runs_draws_no_negative_axis(
    make_app: AppFactory, state_dir: Path
) -> None:
    """An agent that only registered jobs: its charts start at 0 (plotext drew a flat
    0 line on a -1 … 0 axis) and the empty ones say why they are empty."""
    rows = aggregate_rows(days=1, agents=2)
    idle = empty_row(rows[0]["hour"], "idle-bot", jobs_registered=2)  # type: ignore[arg-type]
    write_history(state_dir, days=1, rows=[*rows, idle], with_usage=False)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await wait_until(pilot, lambda: screen.snapshot is not None)
        screen.agent = "idle-bot"
        await pilot.pause()
        for chart_id in ("throughput", "latency", "cost"):
            chart = screen.query_one(f"#{chart_id}", HistoryChart)
            await wait_until(pilot, lambda: chart.data is not None and chart.draws > 0)  # noqa: B023
            width, height = chart.size
            text = "\n".join(s.text for s in chart.render_lines(Region(0, 0, width, height)))
            assert "-0." not in text and "-1.0" not in text, (chart_id, text)
            empty = {"latency": "no agent asked anything", "cost": "no tokens recorded"}
            if chart_id in empty:  # a flat 0 line of completed jobs is data
                assert empty[chart_id] in text, (chart_id, text)


async def test_the_range_picker_and_its_key(make_app: AppFactory, state_dir: Path) -> None:
    """`r` goes 24 h → 7 d → 30 d → 24 h, and a click on a label picks it; each range has
    its own buckets (hours, 6 h, days); a history shorter than the range is shown
    whole (two days here), not as an empty week."""
    write_history(state_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        picker = screen.query_one(RangePicker)
        await pilot.press("r")
        assert screen.range_hours == 168 and picker.hours == 168
        assert screen.throughput is not None and screen.throughput.hours == 48
        assert "Jobs completed per 6 h" in screen.throughput.title
        assert screen.throughput.markers == (9.0, 37.0)  # both restarts in the week
        await pilot.press("r")
        assert screen.range_hours == 720 and "per 24 h" in screen.throughput.title
        await pilot.press("r")
        assert screen.range_hours == 24 and picker.hours == 24
        first, _last, hours = picker._spans[1]  # " 7 d "
        await pilot.click(RangePicker, offset=(first + 2, 0))
        await wait_until(pilot, lambda: screen.range_hours == 168 == hours, "the 7 d label")
        await pilot.click(RangePicker, offset=(1, 0))  # "range": not a label
        await pilot.pause()
        assert screen.range_hours == 168


async def test_e_exports_the_table_as_csv(make_app: AppFactory, state_dir: Path) -> None:
    """`e` writes the range's per-agent table, raw units, under the state dir and says
    where; one agent's range is its own file."""
    import csv

    write_history(state_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await pilot.press("e")
        await wait_until(pilot, lambda: screen.exported is not None, "the CSV")
        path = screen.exported
        assert path is not None and path.parent == state_dir / "history" / "exports"
        assert path.name == "history-24h-all-agents-20260302T2300Z.csv"
        await wait_until(pilot, lambda: any(str(path) in n for n in notices(app)), "the notice")
        rows = list(csv.DictReader(path.open()))
        assert [r["agent"] for r in rows] == ["claude", "codex", "gemini", "all agents"]
        assert rows[-1]["completed"] == str(sum(int(r["completed"]) for r in rows[:-1]))
        assert float(rows[-1]["cost_usd_estimated"]) > 0 and rows[-1]["tokens_measured"] != "0"
        await pilot.press("a", "e")
        await wait_until(pilot, lambda: screen.exported != path, "the agent's CSV")
        assert screen.exported and screen.exported.name.startswith("history-24h-claude-")


async def test_a_hostile_agent_name_is_shown_as_text(make_app: AppFactory, state_dir: Path) -> None:
    """An agent's name is data: markup and escapes in it are shown, never obeyed, in
    the charts, the table, the CSV (a formula-looking name is defused) and its file
    name (only safe characters)."""
    import csv

    evil = "=[b]bold[/b]\x1b]0;owned\x07"
    rows = [{**row, "agent": evil} for row in aggregate_rows(days=1, agents=1)]
    write_history(state_dir, days=1, rows=rows, with_usage=False)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        table = screen.query_one(AgentsTable)
        shown = table.rows[0][0]
        assert isinstance(shown, Text) and "[b]bold[/b]" in shown.plain
        assert "\x1b" not in shown.plain and "\x07" not in shown.plain
        assert screen.states is not None and screen.states.categories == (evil,)
        chart = screen.query_one("#states", HistoryChart)
        width, height = chart.size
        drawn = "\n".join(s.text for s in chart.render_lines(Region(0, 0, width, height)))
        assert "\x1b" not in drawn
        await pilot.press("a", "e")
        await wait_until(pilot, lambda: screen.exported is not None, "the CSV")
        path = screen.exported
        assert path is not None and path.parent == state_dir / "history" / "exports"
        assert path.name.startswith("history-24h-_b_bold_b_0_owned_-")
        (first, _total) = list(csv.DictReader(path.open()))
        assert first["agent"] == "'" + evil
