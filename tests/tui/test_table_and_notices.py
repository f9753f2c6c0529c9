"""Pilot tests: the jobs table (a click, the selection, the filter's count, the row
order) and the notices of waiting jobs, against the recording fake source."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from unittest.mock import PropertyMock, patch

from textual.widgets import DataTable

from app.tui.app import ControlRoomApp
from app.tui.screens.job_commands import JobCommands
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from app.tui.source import SessionRow
from app.tui.widgets.jobs_table import JobsTable
from tests.tui.fake_source import FakeSource
from tests.tui.tui_helpers import loaded, notices, select, wait_until

AppFactory = Callable[[], ControlRoomApp]
# The demo's rows as the table orders them: waiting for an answer, running, then
# finished (newest first).
ROWS = ["7b0e99a1", "3fa2c1d0", "5f4e3d2c", "9e8d7c6b", "0a1b2c3d", "c4d5e6f7"]


async def test_clicking_a_row_opens_it(make_app: AppFactory) -> None:
    """Mouse: a click highlights a row, a second click opens its detail."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.click("#jobs", offset=(5, 3))  # header at y=1 (inside the border)
        assert app.main.selected_job_id == ROWS[1]
        await pilot.click("#jobs", offset=(5, 3))
        await wait_until(pilot, lambda: isinstance(app.screen, JobDetailScreen))
        assert app.screen.job_id == ROWS[1]  # type: ignore[attr-defined]


class SelectingScreen(JobCommands):
    """A screen that selects jobs, whose selection must not be read to check a key."""

    @property
    def selected_job_id(self) -> str | None:
        raise AssertionError("check_action read the selection")


async def test_the_job_keys_are_checked_without_reading_the_selection(
    make_app: AppFactory,
) -> None:
    """Textual asks `check_action` about every key at any time, also while a screen that
    selects jobs is still being built: the check asks the screen's class, and never
    reads the selection (it once did, and a live test crashed on NoMatches)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.polls_applied > 0, "the first poll")
        with patch.object(ControlRoomApp, "screen", new_callable=PropertyMock) as screen:
            screen.return_value = SelectingScreen()
            assert app.check_action("cancel_job", ()) is True
            assert app.check_action("answer", ("yes",)) is True


def test_a_main_screen_not_composed_yet_has_nothing_selected() -> None:
    """`n` or a job key pressed at startup reads these before the screen has its
    widgets: nothing selected, no sessions, rather than NoMatches (the same live test's
    other crash: `n` read `selected_session`)."""
    unbuilt = MainScreen()
    assert (unbuilt.selected_job_id, unbuilt.selected_session, unbuilt.session_labels) == (
        None,
        None,
        [],
    )


async def test_filter_updates_the_count_and_says_when_nothing_matches(
    make_app: AppFactory,
) -> None:
    """The border's "N of M" follows the `/` filter at once (it once waited for the
    next delta), and a filter nothing passes says so where the rows would be."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)
        assert table.border_subtitle == "6 of 6"
        await pilot.press("slash", *"codex")
        assert table.border_subtitle == "2 of 6"
        await pilot.press(*"zzzz", "enter")
        await pilot.pause()
        assert table.border_subtitle == "0 of 6"
        hint = table.render_line(table.header_height + 1).text
        assert "no job matches 'codexzzzz'" in hint
        await pilot.press("escape")
        await pilot.pause()
        assert table.border_subtitle == "6 of 6" and table.empty_text == ""


async def test_live_jobs_sit_above_finished_ones(make_app: AppFactory, fake: FakeSource) -> None:
    """Waiting for an answer, then running, then pending jobs come first, so they stay
    in view however many jobs have finished; the cursor stays on its job when rows
    move."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)
        assert [str(table.get_row_at(n)[0]) for n in range(6)] == ROWS
        assert app.main.selected_job_id == ROWS[0]  # the first row, at startup
        select(app, "0a1b2c3d")
        new = fake.submit("later", "claude", "alpha")  # pending: above the finished jobs
        await wait_until(pilot, lambda: table.row_count == 7)
        assert [str(table.get_row_at(n)[0]) for n in range(7)] == [*ROWS[:3], new, *ROWS[3:]]
        assert app.main.selected_job_id == "0a1b2c3d"
        fake.emit("3fa2c1d0", "completed", "done")  # finished, and the oldest job of all
        await wait_until(pilot, lambda: table.jobs["3fa2c1d0"].status == "completed")
        assert [str(table.get_row_at(n)[0]) for n in (1, 2, 6)] == ["5f4e3d2c", new, "3fa2c1d0"]
        assert app.main.selected_job_id == "0a1b2c3d"


async def test_a_new_permission_prompt_is_announced(make_app: AppFactory, fake: FakeSource) -> None:
    """A job that starts waiting for a yes/no answer shows a notice, is counted in the
    header and moves to the top; the job waiting at startup is counted, not toasted."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        header = app.main.query_one("#header")
        assert "waiting 1" in str(header.render())
        assert not [n for n in notices(app) if "asks" in n]
        fake.emit("5f4e3d2c", "permission_required", "Allow edit of src/app.py?")
        question = "job 5f4e3d2c (codex) asks: Allow edit of src/app.py? — y/n/a"
        await wait_until(pilot, lambda: question in notices(app))
        assert "waiting 2" in str(header.render())
        table = app.main.query_one(JobsTable)
        assert {str(table.get_row_at(n)[0]) for n in (0, 1)} == {"7b0e99a1", "5f4e3d2c"}


async def test_a_waiting_rows_progress_says_what_it_asks(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """A hook's activity event says only "waiting": the progress cell shows the
    question instead (the row read "⚠ needs y/n  waiting"), and its detail again after."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)

        def progress() -> str:
            return str(table.get_row("5f4e3d2c")[-1])

        with fake.lock:
            fake.seq += 1
            job = fake.jobs["5f4e3d2c"]
            asked = replace(job, waiting_permission=True, question="Bash `npm test`")
            fake._put(replace(asked, progress_detail="waiting", last_event="activity"))
        await wait_until(pilot, lambda: progress() == "Bash `npm test`", "the question")
        with fake.lock:
            fake.seq += 1
            fake._put(replace(fake.jobs["5f4e3d2c"], waiting_permission=False, question=""))
        await wait_until(pilot, lambda: progress() == "waiting", "the detail again")


async def test_the_notice_of_a_question_goes_once_it_is_answered(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """Answered, the job stops waiting and its "asks" notice leaves the screen (three
    answered agents left three stale notices over the inbox for their 15 s); other
    notices stay."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        fake.emit("5f4e3d2c", "permission_required", "Allow edit of src/app.py?")
        question = "job 5f4e3d2c (codex) asks: Allow edit of src/app.py? — y/n/a"
        await wait_until(pilot, lambda: question in notices(app), "the question's notice")
        app.notify("something else")
        fake.answer("5f4e3d2c", "yes")
        table = app.main.query_one(JobsTable)
        await wait_until(pilot, lambda: not table.jobs["5f4e3d2c"].waiting_permission)
        await wait_until(pilot, lambda: question not in notices(app), "the notice gone")
        assert "something else" in notices(app)


async def test_a_wait_is_announced_with_the_command_it_is_about(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """Codex's status sequence says "waiting" a moment before its screen shows the
    command: the notice waits for the command (it read "asks: needs permission"), and
    says it once, with the answers its agent has."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        fake.emit("5f4e3d2c", "permission_required", "needs permission")
        table = app.main.query_one(JobsTable)
        await wait_until(pilot, lambda: table.jobs["5f4e3d2c"].waiting_permission)
        # The pass that marked it waiting has decided: held, not said (the mark, rather
        # than a look after a pause, which at load could pass ANNOUNCE_WAIT_S's timer).
        assert "5f4e3d2c" in app.main._held_questions
        assert not [n for n in notices(app) if "asks" in n]
        with fake.lock:
            fake.seq += 1
            asked = (("question", "Run it?"), ("command", "touch x"), ("seen by", "screen rule"))
            fake._put(replace(fake.jobs["5f4e3d2c"], question="`touch x`", asked=asked))
        await wait_until(pilot, lambda: any("asks" in n for n in notices(app)), "the notice")
        # said and no longer held: neither its timer nor a later pass can say it again
        assert "5f4e3d2c" not in app.main._held_questions
        said = [n for n in notices(app) if "asks" in n]
        assert said == ["job 5f4e3d2c (codex) asks: `touch x` — y/n/a"]


async def test_a_session_that_is_gone_is_not_idle(make_app: AppFactory, fake: FakeSource) -> None:
    """A killed tmux session read `terminated  gone  idle`: nothing runs there to be
    idle, so its liveness reads "—"."""
    fake.add_session(SessionRow("omega", "terminated", False, "idle"))
    fake.add_session(SessionRow("quiet", "running", True, "idle"))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        panel = app.main.query_one("#sessions", DataTable)
        await wait_until(pilot, lambda: "omega" in panel.rows)
        assert str(panel.get_cell("omega", "liveness")) == "—"
        assert str(panel.get_cell("quiet", "liveness")) == "idle"
