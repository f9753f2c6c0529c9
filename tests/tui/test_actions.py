"""Pilot tests: every control-room action against the recording fake source."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from textual.command import CommandInput, CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input, RadioSet

from app.tui.app import ControlRoomApp
from app.tui.commands import COMMANDS
from app.tui.screens.confirm import ConfirmScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.history import HistoryScreen
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.new_job import NewJobScreen
from app.tui.screens.stop_session import StopSessionScreen
from app.tui.source import JobRow
from app.tui.widgets.jobs_table import JobsTable
from tests.tui.fake_source import FakeSource
from tests.tui.memory_source import FIXED_NOW
from tests.tui.tui_helpers import loaded, notices, select, wait_until

AppFactory = Callable[[], ControlRoomApp]


async def test_main_screen_shows_jobs_sessions_and_events(make_app: AppFactory) -> None:
    """The first poll fills the table, the sessions panel and the stream."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        table = app.main.query_one("#jobs", JobsTable)
        assert table.row_count == 6
        assert app.main.query_one("#sessions").row_count == 4  # type: ignore[attr-defined]
        assert app.main.snapshot.counts["running"] == 3


async def test_cancel_confirmed_reaches_the_source(make_app: AppFactory, fake: FakeSource) -> None:
    """c, then choosing "Cancel job", cancels the highlighted job."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("c")
        assert isinstance(app.screen, ConfirmScreen)
        assert app.focused is not None and app.focused.id == "cancel"  # Cancel is the default
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: ("cancel", "3fa2c1d0") in fake.calls)
        await wait_until(
            pilot, lambda: app.main.query_one(JobsTable).jobs["3fa2c1d0"].status == "cancelled"
        )


async def test_cancel_not_confirmed_does_nothing(make_app: AppFactory, fake: FakeSource) -> None:
    """Enter on the default button, or escape, leaves the job alone."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("c", "enter")
        await pilot.press("c", "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        # The mark that both answers were handled, rather than a look after a pause: a
        # third, confirmed cancel of the same job arrives, and is the only call.
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: fake.calls, "the confirmed cancel")
        assert fake.calls == [("cancel", "3fa2c1d0")]


async def test_resume(make_app: AppFactory, fake: FakeSource) -> None:
    """r resumes the highlighted errored job."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "0a1b2c3d")
        await pilot.press("r")
        await wait_until(pilot, lambda: ("resume", "0a1b2c3d") in fake.calls)
        await wait_until(pilot, lambda: fake.jobs["0a1b2c3d"].status == "pending")


async def test_illegal_resume_shows_an_error_and_keeps_running(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """A transition the source refuses becomes one error notice that names the job
    once (it read "Resuming X: job X: …"), not a crash."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "0a1b2c3d")  # errored in the table, completed in the source meanwhile
        fake.jobs["0a1b2c3d"] = replace(fake.jobs["0a1b2c3d"], status="completed")
        await pilot.press("r")
        await wait_until(pilot, lambda: any("cannot resume" in n for n in notices(app)))
        said = next(n for n in notices(app) if "cannot resume" in n)
        assert said == (  # the registry's own words: the fake moves jobs by its state machine
            "Could not resume: job 0a1b2c3d: cannot resume from completed "
            "(resume applies to: error, cancelled)"
        )
        assert app.is_running


async def test_actions_that_cannot_apply_say_so_without_a_dialog(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """c and r on a completed job, S on a job whose session does not exist: one notice
    at once, no confirmation dialog that then fails, nothing sent to the source."""
    fake.add_job(JobRow("d00df00d", "pending", "claude", "ghost", FIXED_NOW, FIXED_NOW))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "c4d5e6f7")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert "c4d5e6f7 is already completed: nothing to cancel" in notices(app)
        await pilot.press("r")
        expected = (
            "c4d5e6f7 is completed: only an errored, cancelled or interrupted job can be resumed"
        )
        assert expected in notices(app)
        select(app, "d00df00d")
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert "session ghost does not exist: nothing to stop" in notices(app)
        assert fake.calls == []


async def test_stop_session_with_the_chosen_mode(make_app: AppFactory, fake: FakeSource) -> None:
    """S opens the mode chooser; hard, Stop, then confirm stops the job's session."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "c4d5e6f7")  # session gamma
        await pilot.press("S")
        assert isinstance(app.screen, StopSessionScreen)
        await pilot.click("#mode-hard")
        assert app.screen.query_one(RadioSet).pressed_index == 2
        await pilot.click("#stop")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: ("stop_session", "gamma", "hard") in fake.calls)


async def test_new_job_modal_submits(make_app: AppFactory, fake: FakeSource) -> None:
    """+, a prompt typed in, Submit: the source gets prompt, agent and session."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "7b0e99a1")  # session beta becomes the default
        await pilot.press("plus")
        assert isinstance(app.screen, NewJobScreen)
        installed = app.screen.query_one("#installed")
        await wait_until(pilot, lambda: "installed here" in str(installed.render()))
        await pilot.press(*"fix the flaky test")
        await pilot.click("#submit")
        expected = ("submit", "fix the flaky test", "codex", "beta")  # installed
        await wait_until(pilot, lambda: expected in fake.calls)
        await wait_until(pilot, lambda: len(app.main.query_one(JobsTable).jobs) == 7)


async def test_new_job_refuses_an_empty_prompt(make_app: AppFactory, fake: FakeSource) -> None:
    """Submitting without a prompt keeps the modal open and says what is missing."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("plus")
        await pilot.click("#submit")
        assert isinstance(app.screen, NewJobScreen)
        assert "prompt" in str(app.screen.query_one("#error").render())
        assert fake.calls == []


async def test_answer_yes_and_no(make_app: AppFactory, fake: FakeSource) -> None:
    """y answers yes to a waiting job; once nothing waits, n only says so."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "7b0e99a1")
        await pilot.press("y")
        await wait_until(pilot, lambda: ("answer", "7b0e99a1", "yes") in fake.calls)
        await wait_until(
            pilot, lambda: not app.main.query_one(JobsTable).jobs["7b0e99a1"].waiting_permission
        )
        await pilot.press("n")
        await wait_until(pilot, lambda: any("No job is waiting" in n for n in notices(app)))
        assert ("answer", "7b0e99a1", "no") not in fake.calls
        assert not isinstance(app.screen, NewJobScreen)


async def test_answer_no(make_app: AppFactory, fake: FakeSource) -> None:
    """n answers no to a waiting permission prompt (it used to open the New-job dialog)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "7b0e99a1")
        await pilot.press("n")
        await wait_until(pilot, lambda: ("answer", "7b0e99a1", "no") in fake.calls)
        assert isinstance(app.screen, MainScreen)


async def test_filter_is_remembered_across_screens(make_app: AppFactory) -> None:
    """/ filters the table; the filter survives a trip to the detail screen."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("slash", *"codex", "enter")
        table = app.main.query_one(JobsTable)
        assert table.row_count == 2 and app.main.job_filter == "codex"
        await pilot.press("d")  # open the highlighted (filtered) job
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        assert table.row_count == 2 and app.main.job_filter == "codex"
        await pilot.press("slash")
        assert app.main.query_one("#filter", Input).value == "codex"
        await pilot.press("enter", "escape")  # esc on main clears the filter
        assert table.row_count == 6


async def test_command_mode_runs_commands_by_name(make_app: AppFactory, fake: FakeSource) -> None:
    """`:history` opens history; `:cancel` asks to cancel; unknown names are refused."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("colon", *"history", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("escape", "colon", *"cancel", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape", "colon", *"bogus", "enter")
        await wait_until(pilot, lambda: any("No command 'bogus'" in n for n in notices(app)))


async def test_palette_runs_a_command(make_app: AppFactory) -> None:
    """Every command is also in the command palette (ctrl+p)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("ctrl+p", *"history")
        # enter once the palette has found the command and highlighted it (its search
        # runs in a worker, in batches): a fixed pause raced it under load
        await wait_until(pilot, lambda: palette_highlights(app, "History"), "History offered")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))


def palette_highlights(app: ControlRoomApp, name: str) -> bool:
    """The command palette is open on its whole query, with ``name``'s command highlighted."""
    screen = app.screen
    if (
        not isinstance(screen, CommandPalette)
        or screen.query_one(CommandInput).value != name.lower()
    ):
        return False
    commands = screen.query_one(CommandList)
    if commands.highlighted is None or not commands.option_count:
        return False
    return name in str(commands.get_option_at_index(commands.highlighted).prompt)


async def test_help_lists_every_binding(make_app: AppFactory) -> None:
    """? shows one row per command, with its key; esc closes it."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#keys")
        keys = {table.get_row(command.name)[0] for command in COMMANDS}  # type: ignore[attr-defined]
        assert keys == {command.key_display or command.key for command in COMMANDS}
        bound = {binding.action for binding in app.BINDINGS}  # type: ignore[union-attr]
        assert bound - {"returned"} == {command.action for command in COMMANDS}
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def open_detail(pilot: Pilot[None], app: ControlRoomApp, job_id: str) -> JobDetailScreen:
    """Select ``job_id``, press d, and wait for its detail to load."""
    select(app, job_id)
    await pilot.press("d")
    screen = app.screen
    assert isinstance(screen, JobDetailScreen)
    await wait_until(pilot, lambda: screen.detail is not None)
    return screen


async def test_d_opens_detail_and_esc_goes_back(make_app: AppFactory) -> None:
    """d opens the job detail with its timeline, gap warning and pane tail."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        screen = await open_detail(pilot, app, "5f4e3d2c")
        assert "2 events missing" in str(screen.query_one("#gaps").render())
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_detail_tails_the_pane_log(make_app: AppFactory) -> None:
    """The pane log is tailed live beside the detail; appended lines show up."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")  # which has a pane log
        await pilot.press("d")
        tail = app.screen.query_one("#detail-tail")
        await wait_until(pilot, lambda: tail.line_count >= 8)  # type: ignore[attr-defined]
        path = app.source.pane_logs["3fa2c1d0"]  # type: ignore[attr-defined]
        with path.open("a") as handle:
            handle.write("agent> all done\n")
        await wait_until(pilot, lambda: "agent> all done" in tail.lines)  # type: ignore[attr-defined]


async def test_job_deleted_while_detail_open(make_app: AppFactory, fake: FakeSource) -> None:
    """Deleting the job under an open detail shows a notice; the app keeps running."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, JobDetailScreen)
        await wait_until(pilot, lambda: screen.detail is not None)
        fake.delete_job("3fa2c1d0")
        await wait_until(pilot, lambda: any("was deleted" in n for n in notices(app)))
        assert screen.gone and app.is_running
        await wait_until(pilot, lambda: "3fa2c1d0" not in app.main.query_one(JobsTable).jobs)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_source_failure_is_shown_and_polling_recovers(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """A locked database is reported once; when it clears, updates flow again."""
    from bus.errors import DatabaseLocked

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        fake.poll_error = DatabaseLocked("database is locked")
        await wait_until(pilot, lambda: any("database is locked" in n for n in notices(app)))
        fake.poll_error = None
        fake.submit("later", "claude", "alpha")
        await wait_until(pilot, lambda: len(app.main.query_one(JobsTable).jobs) == 7)


async def test_one_missing_event_is_worded_singular(make_app: AppFactory, fake: FakeSource) -> None:
    """The detail's gap line reads "1 event missing", never "1 events missing"."""
    fake.emit("3fa2c1d0", "progress", "running tests 4/12", skip=1)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        screen = await open_detail(pilot, app, "3fa2c1d0")
        assert str(screen.query_one("#gaps").render()) == "⚠ 1 event missing (seq 4)"
