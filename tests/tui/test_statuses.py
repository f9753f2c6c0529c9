"""Statuses people can read: a glyph and a theme colour for every job state and agent
activity in the jobs table, the sessions panel and the header, in every theme."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rich.text import Text

from app.tui.app import ControlRoomApp
from app.tui.widgets.jobs_table import JobsTable, matches
from app.tui.widgets.sessions_panel import SessionsPanel
from app.tui.widgets.theme import LOOKS, look_style
from tests.tui.fake_source import FakeSource
from tests.tui.tui_helpers import loaded, wait_until

AppFactory = Callable[[], ControlRoomApp]
SIZE = (120, 40)
ACTIVITIES = (
    "starting", "working", "waiting", "idle", "stalled", "exited", "interrupted", "unknown"
)  # fmt: skip


def status_cell(table: JobsTable, job_id: str) -> Text:
    cell = table.get_cell(job_id, "status")
    assert isinstance(cell, Text)
    return cell


def test_every_state_has_its_own_glyph() -> None:
    """Each activity and status is told apart by its glyph, not only by its colour."""
    states = (*ACTIVITIES, "pending", "completed", "error", "cancelled")
    assert set(states) <= set(LOOKS)
    glyphs = [LOOKS[state].glyph for state in states]
    assert len(set(glyphs)) == len(glyphs)
    assert all(not look.colour.startswith("#") for look in LOOKS.values())  # theme variables


async def test_the_table_shows_each_activity_with_glyph_and_colour(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """A running job's status cell says what its agent does (`● working`, `⚠ waiting`,
    `◇ idle`, `↯ interrupted`…) in its state's colour; a finished one its status."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)
        assert status_cell(table, "7b0e99a1").plain == "⚠ waiting"
        assert status_cell(table, "3fa2c1d0").plain == "● working"
        assert status_cell(table, "c4d5e6f7").plain == "✓ completed"
        for activity in ACTIVITIES:
            if activity == "waiting":
                continue
            with fake.lock:
                fake.seq += 1
                fake._put(replace(fake.jobs["5f4e3d2c"], activity=activity))
            await wait_until(pilot, lambda: table.jobs["5f4e3d2c"].activity == activity)  # noqa: B023
            cell = status_cell(table, "5f4e3d2c")
            assert cell.plain == f"{LOOKS[activity].glyph} {activity}"
            assert cell.style == look_style(app, activity)


async def test_the_header_counts_running_jobs_by_activity(make_app: AppFactory) -> None:
    """The header says what the running agents do, the ones needing a person first."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        header = str(app.main.query_one("#header").render())
        assert "⚠ waiting 1 ◇ idle 1 ● working 1" in header
        assert "✓ completed 1" in header and "✗ error 1" in header
        assert "pending" not in header  # no pending job: no `pending 0`


async def test_the_sessions_panel_shows_every_job_of_a_session(make_app: AppFactory) -> None:
    """Session beta runs two jobs: both are listed, the one waiting for a person first,
    each with its state's glyph (the panel used to show one job per session)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        panel = app.main.query_one(SessionsPanel)
        await wait_until(pilot, lambda: "beta" in panel.rows)
        assert str(panel.get_cell("beta", "job")) == "⚠ 7b0e99a1 ◇ 5f4e3d2c"
        assert str(panel.get_cell("alpha", "job")) == "● 3fa2c1d0"


async def test_the_filter_matches_every_status_and_activity_word(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """`/waiting`, `/needs`, `/working`, `/idle` and `/running` find the jobs in those
    states, whether the word is shown or not."""
    for needle, expected in (
        ("waiting", {"7b0e99a1"}),
        ("needs", {"7b0e99a1"}),
        ("needs you", {"7b0e99a1"}),
        ("working", {"3fa2c1d0"}),
        ("idle", {"5f4e3d2c"}),
        ("running", {"7b0e99a1", "3fa2c1d0", "5f4e3d2c"}),
        ("cancelled", {"9e8d7c6b"}),
    ):
        found = {job.job_id for job in fake.jobs.values() if matches(job, needle)}
        assert found == expected, needle
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("slash", *"needs", "enter")
        table = app.main.query_one(JobsTable)
        await wait_until(pilot, lambda: table.row_count == 1)
        assert table.selected_job_id == "7b0e99a1"


async def test_ansi_themes_do_not_crash_and_use_the_terminal_palette(
    make_app: AppFactory,
) -> None:
    """The ANSI themes name colours `ansi_green`, which Rich cannot parse: watch crashed
    with ColorParseError. Now their cells use the terminal's own palette colours."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)
        for theme in ("ansi-dark", "ansi-light"):
            app.theme = theme
            await pilot.pause()
            wanted = look_style(app, "completed")
            await wait_until(pilot, lambda: status_cell(table, "c4d5e6f7").style == wanted)  # noqa: B023
            assert wanted.color is not None and wanted.color.number is not None  # a palette colour
            app.main.query_one("#header").render()
        assert app.is_running


async def test_a_light_theme_redraws_the_cells_in_its_colours(make_app: AppFactory) -> None:
    """Cells are styled once; switching to a light theme drew them in the dark theme's
    colours (light blue on a light background). Now every row and session is redrawn,
    and `-lighten` colours become `-darken` ones on a light background."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)
        dark = look_style(app, "working")
        app.theme = "textual-light"
        await pilot.pause()
        light = look_style(app, "working")
        assert light != dark
        await wait_until(pilot, lambda: status_cell(table, "3fa2c1d0").style == light)
        panel = app.main.query_one(SessionsPanel)
        cell = panel.get_cell("alpha", "job")
        assert isinstance(cell, Text) and cell.spans[0].style == light
        assert light.color is not None and dark.color is not None
        light_rgb, dark_rgb = light.color.get_truecolor(), dark.color.get_truecolor()
        assert sum(light_rgb) < sum(dark_rgb)  # darker on the light background
