"""The permission inbox: `w`, the main screen's waiting panel, y/n/a on the right job
(never one that does not wait), tab to the next waiting job, answers confirmed by the
job's state, and the needs-you signals (bell, title, notify command)."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from textual.widgets import DataTable, Footer
from textual.widgets._footer import FooterKey

from app.tmux.attach import AttachCommand
from app.tui.app import ControlRoomApp
from app.tui.screens.help import HelpScreen
from app.tui.screens.inbox import InboxScreen
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.new_job import NewJobScreen
from app.tui.screens.talk import TalkScreen
from app.tui.source import AnswerOutcome
from app.tui.widgets.inbox_panel import InboxPanel
from app.tui.widgets.jobs_table import JobsTable
from app.tui.widgets.pane_tail import PaneTail
from registry.vocabulary import Answer
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.memory_source import FIXED_NOW
from tests.tui.tui_helpers import loaded, notices, select, wait_until

AppFactory = Callable[[], ControlRoomApp]
WAITING = "7b0e99a1"  # codex, waiting at startup (the demo data)
SECOND = "5f4e3d2c"  # codex, running: made to wait by some tests
WORKING = "3fa2c1d0"  # claude, running
SIZE = (120, 40)


def rendered(panel: InboxPanel) -> str:
    """The panel's rows as plain text."""
    console = Console(width=110, file=io.StringIO(), color_system=None)
    console.print(panel.render())
    return console.file.getvalue()  # type: ignore[attr-defined]


async def test_w_lists_every_waiting_job_with_its_question(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """The inbox lists each waiting job: agent, question, how long; esc goes back."""
    fake.emit(SECOND, "permission_required", "Bash `npm test`")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        screen = app.screen
        assert isinstance(screen, InboxScreen)
        table = screen.query_one("#waiting", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2, "two waiting rows")
        rows = [[str(cell) for cell in table.get_row_at(n)] for n in range(2)]
        assert [row[0] for row in rows] == [WAITING, SECOND]
        assert rows[0][1:4] == ["codex", "beta", "run `rm -rf build/`?"]
        assert rows[1][3] == "Bash `npm test`"
        asked = str(screen.query_one("#asked").render())
        assert "question: run `rm -rf build/`?" in asked and "a always" in asked
        await pilot.press("w")  # w on the inbox itself does nothing
        assert app.screen is screen
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_the_main_screen_panel_shows_only_while_someone_waits(
    make_app: AppFactory, fake: FakeSource
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        panel = app.main.query_one("#inbox", InboxPanel)
        assert panel.display and [job.job_id for job in panel.rows] == [WAITING]
        assert "waiting for you: 1" in str(panel.border_title)
        await pilot.press("y")
        await wait_until(pilot, lambda: not panel.rows, "nobody waiting")
        await wait_until(pilot, lambda: not panel.display, "the panel hidden")


async def test_waited_time_ticks(fake: FakeSource) -> None:
    """The panel's "waited" counts up with the clock, with no event arriving."""
    now = [FIXED_NOW]
    app = ControlRoomApp(fake, clock=lambda: now[0], poll_interval_s=0.05, age_refresh_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        panel = app.main.query_one("#inbox", InboxPanel)
        await wait_until(pilot, lambda: " 0s " in rendered(panel))
        now[0] = FIXED_NOW + timedelta(seconds=95)
        await wait_until(pilot, lambda: " 1m " in rendered(panel), "1m waited")


async def test_y_answers_the_waiting_job_not_the_one_under_the_cursor(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """The bug: with the cursor on a working job, y answered that job. It answers the
    only job that waits."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WORKING)
        await pilot.press("y")
        await wait_until(pilot, lambda: ("answer", WAITING, "yes") in fake.calls)
        assert not [call for call in fake.calls if call[1] == WORKING]
        await wait_until(pilot, lambda: any("confirmed" in n for n in notices(app)))
        assert f"Answered yes to {WAITING} (keys y) · confirmed: now working" in notices(app)


async def test_with_two_waiting_the_selected_one_is_answered(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """Two jobs wait: y on a working row answers neither and names both; on a waiting
    row it answers that one."""
    fake.emit(SECOND, "permission_required", "Bash `npm test`")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WORKING)
        await pilot.press("y")
        await wait_until(pilot, lambda: any("2 jobs wait" in n for n in notices(app)))
        refusal = next(n for n in notices(app) if "2 jobs wait" in n)
        assert WAITING in refusal and SECOND in refusal
        assert not [call for call in fake.calls if call[0] == "answer"]
        select(app, SECOND)
        await pilot.press("n")
        await wait_until(pilot, lambda: ("answer", SECOND, "no") in fake.calls)
        assert ("answer", WAITING, "no") not in fake.calls


async def test_n_answers_no_and_plus_opens_the_new_job_dialog(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """The bug: lowercase n on a y/N row opened the New-job dialog."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WAITING)
        await pilot.press("n")
        await wait_until(pilot, lambda: ("answer", WAITING, "no") in fake.calls)
        assert isinstance(app.screen, MainScreen)
        await pilot.press("plus")
        assert isinstance(app.screen, NewJobScreen)


async def test_always_only_where_the_agent_has_it(make_app: AppFactory, fake: FakeSource) -> None:
    """a answers always to Codex; a demo agent has no such answer, and is told so
    before anything is typed."""
    fake.emit(WORKING, "permission_required", "Allow edit of x?")
    fake.jobs[WORKING] = replace(fake.jobs[WORKING], agent="demo", answers=("yes", "no"))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WORKING)
        await pilot.press("a")
        await wait_until(pilot, lambda: any("no 'always' answer" in n for n in notices(app)))
        assert not [call for call in fake.calls if call[0] == "answer"]
        select(app, WAITING)
        await pilot.press("a")
        await wait_until(pilot, lambda: ("answer", WAITING, "always") in fake.calls)


async def test_an_answer_not_confirmed_says_so_and_stays_in_the_inbox(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """The source answered but the registry never showed the agent moving on: the
    inbox and the panel say "not confirmed", never "confirmed", until it stops waiting."""

    def unconfirmed(job_id: str, reply: Answer) -> AnswerOutcome:
        fake.calls.append(("answer", job_id, reply))
        return AnswerOutcome(False, "waiting")

    fake.answer = unconfirmed  # type: ignore[method-assign]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w", "y")
        state = "⚠ yes: not confirmed, still waiting"
        await wait_until(pilot, lambda: app.main.answering.get(WAITING) == state)
        assert any("not confirmed" in n for n in notices(app))
        assert not any("confirmed: now" in n for n in notices(app))
        table = app.screen.query_one("#waiting", DataTable)
        await wait_until(pilot, lambda: str(table.get_row_at(0)[5]) == state)
        fake.emit(WAITING, "progress", "moved on at last")  # the note goes with the wait
        await wait_until(pilot, lambda: WAITING not in app.main.answering, "the note gone")


async def test_a_refused_answer_is_said(make_app: AppFactory, fake: FakeSource) -> None:
    def refuse(job_id: str, reply: Answer) -> AnswerOutcome:
        from registry.errors import RegistryError

        raise RegistryError(f"job {job_id}: its pane shows no question; not typing into it")

    fake.answer = refuse  # type: ignore[method-assign]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("y")
        want = f"Could not answer: job {WAITING}: its pane shows no question; not typing into it"
        await wait_until(pilot, lambda: want in notices(app))
        assert WAITING not in app.main.answering


async def test_nothing_waiting_y_and_n_only_say_so(make_app: AppFactory, fake: FakeSource) -> None:
    fake.emit(WAITING, "progress", "permission granted")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("y", "n")
        await wait_until(pilot, lambda: len(notices(app)) >= 2)
        assert "No job is waiting for an answer" in notices(app)
        assert "No job is waiting for an answer (+ starts a new job)" in notices(app)
        assert not [call for call in fake.calls if call[0] == "answer"]


async def test_tab_jumps_to_the_next_waiting_job_and_cycles(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """From anywhere on the main screen (the sessions panel focused, the filter bar
    open), tab puts the cursor on the next waiting job, then the next, then back."""
    fake.emit(SECOND, "permission_required", "Bash `npm test`")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        table = app.main.query_one("#jobs", JobsTable)
        select(app, WORKING)
        app.main.query_one("#sessions").focus()
        await pilot.press("tab")
        assert table.has_focus and table.selected_job_id == WAITING
        await pilot.press("tab")
        assert table.selected_job_id == SECOND
        await pilot.press("slash")
        await pilot.press("tab")
        assert table.selected_job_id == WAITING and table.has_focus
        assert not app.main.query_one("#filter").has_class("-open")
        await pilot.press("w", "tab")
        inbox = app.screen.query_one("#waiting", DataTable)
        assert app.screen.selected_job_id == SECOND  # type: ignore[attr-defined]
        await pilot.press("tab")
        assert app.screen.selected_job_id == WAITING and inbox.has_focus  # type: ignore[attr-defined]


async def test_tab_says_when_the_filter_hides_every_waiting_job(
    make_app: AppFactory, fake: FakeSource
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("slash", *"aider", "enter", "tab")
        assert "1 waiting job hidden by the filter: esc clears it" in notices(app)


async def test_tab_still_moves_focus_on_other_screens(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert app.check_action("next_waiting", ()) is False


async def test_help_and_palette_know_the_inbox_keys(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        table = app.screen.query_one("#keys", DataTable)
        rows = {
            str(table.get_row_at(n)[1]): str(table.get_row_at(n)[0]) for n in range(table.row_count)
        }
        assert (rows["yes"], rows["no"], rows["always"]) == ("y", "n", "a")
        assert (rows["inbox"], rows["next"], rows["new"]) == ("w", "tab", "+")
        await pilot.press("escape", "colon", *"inbox", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox by name")


# -- the signals outside the screen --------------------------------------------


async def test_help_on_the_inbox_lists_each_key_once(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#keys", DataTable)
        keys = [str(table.get_row_at(n)[0]) for n in range(table.row_count)]
        assert len(keys) == len(set(keys)) and {"y", "n", "a", "tab"} <= set(keys)
        assert "w" not in keys  # w on the inbox does nothing


# -- acting on a waiting agent from the inbox ----------------------------------


async def test_the_inbox_footer_keeps_its_answers_help_and_quit_at_80_columns(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """enter, tab, esc, y, n, a, ? and q fit in 80 columns (the inbox's footer ran past
    them); i, d and l are said under the question instead, and still work."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        await pilot.pause()
        keys = {key.key_display: key for key in app.screen.query_one(Footer).query(FooterKey)}
        assert {"⏎", "tab", "esc", "y", "n", "a", "?", "q"} <= set(keys)
        assert not {"i", "d", "l", "+", "/", "c"} & set(keys)
        assert all(0 < keys[k].region.right <= 80 for k in ("⏎", "a", "?", "q"))
        asked = str(app.screen.query_one("#asked").render())
        assert "⏎ step into it · i talk · d its page · l its screen" in asked


async def test_enter_in_the_inbox_steps_into_the_selected_waiting_agent(fake: FakeSource) -> None:
    """enter on the inbox's second row attaches that job's pane (it did nothing: the
    table took enter as select), and the inbox is still there, on that row, after."""
    fake.emit(SECOND, "permission_required", "Bash `npm test`")
    asked: list[str] = []
    attach = fake.attach_command

    def recorded(job_id: str) -> AttachCommand:
        asked.append(job_id)
        return attach(job_id)

    fake.attach_command = recorded  # type: ignore[method-assign]
    ran: list[list[str]] = []
    app = ControlRoomApp(
        fake,
        clock=fixed_clock,
        poll_interval_s=0.05,
        age_refresh_s=3600,
        take_terminal=lambda argv: ran.append(argv) or 0,
    )
    app.attach_hint_shown = True
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        screen = app.screen
        assert isinstance(screen, InboxScreen)
        table = screen.query_one("#waiting", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2, "two waiting rows")
        await pilot.press("j", "enter")
        await wait_until(pilot, lambda: len(ran) == 1, "the attach")
        assert asked == [SECOND] and "attach-session" in ran[0]
        assert app.screen is screen and screen.selected_job_id == SECOND


async def test_d_and_i_in_the_inbox_act_on_the_selected_waiting_job(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """d opens the selected waiting job's page, i the talk box to its agent; esc comes
    back to the inbox each time."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w", "d")
        await wait_until(pilot, lambda: isinstance(app.screen, JobDetailScreen), "its page")
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_id == WAITING
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), "back in the inbox")
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, TalkScreen), "the talk box")
        assert WAITING in str(app.screen.query_one("#to").render())
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox again")


async def test_the_inbox_shows_the_selected_agents_screen_and_l_hides_it(
    make_app: AppFactory, fake: FakeSource, tmp_path: Path
) -> None:
    """The agent's own screen, from its pane log, under the question: what the agent
    shows around its question; it follows the cursor; l hides it and shows it again."""
    fake.emit(SECOND, "permission_required", "Bash `npm test`")
    for job_id, words in ((WAITING, "Allow rm -rf build/ ?"), (SECOND, "Run npm test ? [y/n]")):
        log = tmp_path / f"{job_id}.log"
        log.write_bytes(f"\x1b[1m{words}\x1b[0m\r\n".encode())
        fake.pane_logs[job_id] = log
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        screen = app.screen
        assert isinstance(screen, InboxScreen)
        view = screen.query_one("#agent-screen", PaneTail)

        def shows(words: str) -> bool:
            return any(words in line for line in view.lines)

        await wait_until(pilot, lambda: shows("Allow rm -rf build/ ?"), "the first agent's screen")
        await pilot.press("j")
        await wait_until(pilot, lambda: shows("Run npm test ? [y/n]"), "the second agent's screen")
        assert not shows("Allow rm -rf build/")
        await pilot.press("l")
        await pilot.pause()
        assert not view.display or view.region.height == 0
        await pilot.press("l")
        await wait_until(pilot, lambda: view.region.height > 0, "the screen again")
        assert shows("Run npm test ? [y/n]")


async def test_the_inbox_takes_the_question_notices_off_and_shows_no_new_ones(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """Every waiting job is a row of the inbox: the "asks" notices, which covered it at
    80x24 (one per agent), go when it opens, and a new wait there adds a row, not one."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        fake.emit(SECOND, "permission_required", "Bash `npm test`")
        await wait_until(pilot, lambda: any("asks" in n for n in notices(app)), "its notice")
        await pilot.press("w")
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        await wait_until(pilot, lambda: not any("asks" in n for n in notices(app)), "no notice")
        fake.emit(WORKING, "permission_required", "Bash `make`")
        table = app.screen.query_one("#waiting", DataTable)
        await wait_until(pilot, lambda: table.row_count == 3, "its row")
        # its announcement decided (not held for its timer), rather than a look after a
        # pause: nothing can say it later
        await wait_until(pilot, lambda: WORKING not in app.main._held_questions, "decided")
        assert not any("asks" in n for n in notices(app))
        await pilot.press("escape")
        fake.emit("0a1b2c3d", "started")
        fake.emit("0a1b2c3d", "permission_required", "Bash `ls`")
        await wait_until(pilot, lambda: any("Bash `ls`" in n for n in notices(app)), "on main")


async def test_an_empty_inbox_offers_only_back_help_and_quit(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """Nobody waits: the footer drops the answer keys and enter (it listed y/n/a and
    moved enter to its end), and brings them back when a job asks."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("w", "y")  # answers the only waiting job: the inbox empties
        screen = app.screen
        assert isinstance(screen, InboxScreen)

        def footer() -> set[str]:
            return {key.key_display for key in screen.query_one(Footer).query(FooterKey)}

        await wait_until(pilot, lambda: not screen.rows, "nobody waiting")
        await wait_until(pilot, lambda: footer() == {"esc", "?", "q", "^p"}, "back, help, quit")
        fake.emit(SECOND, "permission_required", "Bash `npm test`")
        await wait_until(pilot, lambda: {"⏎", "y", "n", "a"} <= footer(), "the answer keys")
