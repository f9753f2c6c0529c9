"""The control room's keys and layout: footers, help per screen, the command
prompt, and an 80x24 terminal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable, Footer
from textual.widgets._footer import FooterKey

from app.tui.app import ControlRoomApp
from app.tui.screens.help import HelpScreen
from app.tui.screens.history import HistoryScreen
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from tests.tui.tui_helpers import loaded, notices, select, settled, wait_until

AppFactory = Callable[[], ControlRoomApp]


def footer_keys(app: ControlRoomApp) -> dict[str, str]:
    """What the footer shows: key as displayed -> description."""
    keys = app.screen.query_one(Footer).query(FooterKey)
    return {key.key_display: key.description for key in keys}


async def test_footers_show_history_and_back(make_app: AppFactory, state_dir: Path) -> None:
    """The main footer shows `? Help` and `q Quit`, even at 80 columns (they were cut
    off); the screens on top of it show `esc Back`."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await settled(pilot)
        keys = app.screen.query_one(Footer).query(FooterKey)
        shown = {key.key_display: key for key in keys}
        assert shown["?"].description == "Help" and shown["q"].description == "Quit"
        assert shown["q"].region.right <= 80 and shown["?"].region.right <= 80
        assert shown["q"].region.width > 0
        assert "esc" not in footer_keys(app)  # on the main screen esc only clears things
        select(app, "3fa2c1d0")
        for key, screen_type in (
            ("d", JobDetailScreen),
            ("question_mark", HelpScreen),
            ("h", HistoryScreen),
        ):
            await pilot.press(key)
            await wait_until(pilot, lambda: isinstance(app.screen, screen_type))  # noqa: B023
            await settled(pilot)
            assert footer_keys(app).get("esc") == "Back", screen_type
            if screen_type is HistoryScreen:  # h on History itself would do nothing
                assert "h" not in footer_keys(app)
            await pilot.press("escape")
            await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))


async def test_help_on_history_lists_its_own_keys(make_app: AppFactory, state_dir: Path) -> None:
    """? on the History screen lists b Rebuild and a Agent, and not the job keys,
    which do nothing there; `a` before any build says why nothing happens."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("h")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        await wait_until(pilot, lambda: screen.load_count > 0)
        await pilot.press("a")
        assert "No history built yet: press b to build it" in notices(app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#keys", DataTable)
        rows = {
            str(table.get_row_at(n)[1]): str(table.get_row_at(n)[0]) for n in range(table.row_count)
        }
        assert rows["rebuild"] == "b" and rows["agent"] == "a"
        assert not {"cancel", "resume", "stop", "yes", "log", "open"} & set(rows)
        assert {"new", "filter", "help", "quit"} <= set(rows)


async def test_an_empty_command_only_closes_the_prompt(make_app: AppFactory) -> None:
    """`:` then enter with nothing typed closes the prompt, without "No command ''"."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("colon", "enter")
        await pilot.pause()
        assert not app.main.query_one("#command").has_class("-open")
        assert not [n for n in notices(app) if "No command" in n]


async def test_an_80_by_24_terminal_keeps_events_jobs_and_help_readable(
    make_app: AppFactory,
) -> None:
    """The classic terminal size: the sessions panel gives way to the event stream
    (it kept a fixed 56 of 80 columns), the jobs table keeps more rows than the
    bottom panels, and the help modal fits on screen."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        events = app.main.query_one("#events").outer_size.width
        sessions = app.main.query_one("#sessions").outer_size.width
        assert events >= 40 and sessions <= 40 and events + sessions == 80
        jobs = app.main.query_one("#jobs").outer_size.height
        assert jobs >= app.main.query_one("#bottom").outer_size.height
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        box = app.screen.query_one("Vertical").region
        assert box.right <= 80 and box.bottom <= 24
