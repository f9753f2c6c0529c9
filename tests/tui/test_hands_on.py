"""Hands-on supervision keys, driven with Pilot over the fake source: enter steps into
the agent's pane and back, i talks to it, d opens its page, j/k/g/G move, s sorts, and
the fixes of issue 20 (palette duplicates, `:h`, ctrl+q, the new-job agent, the split
log's end, the highlight kept in view)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from textual.command import CommandList, CommandPalette
from textual.widgets import DataTable, Input

from app.tui.app import ControlRoomApp
from app.tui.screens.attach_hint import AttachHintScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.history import HistoryScreen
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.new_job import NewJobScreen
from app.tui.screens.sort import SortScreen
from app.tui.screens.talk import TalkScreen
from app.tui.source import JobRow
from app.tui.widgets.jobs_table import JobsTable
from app.tui.widgets.pane_tail import PaneTail
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.memory_source import FIXED_NOW
from tests.tui.tui_helpers import loaded, notices, select, wait_until

SIZE = (120, 40)


class Terminal:
    """Stands in for the terminal hand-over (the app's suspend, tested for real in
    tests/tui/live/test_attach_tmux.py): records each command, checks the app's state
    while "away"."""

    def __init__(self) -> None:
        self.ran: list[list[str]] = []

    def __call__(self, argv: list[str]) -> int:
        self.ran.append(argv)
        return 0


def app_with(fake: FakeSource, terminal: Terminal) -> ControlRoomApp:
    return ControlRoomApp(
        fake, clock=fixed_clock, poll_interval_s=0.05, age_refresh_s=3600, take_terminal=terminal
    )


async def test_enter_steps_into_the_agent_and_the_app_is_as_it_was(fake: FakeSource) -> None:
    """The first enter explains the way back (ctrl+q) and attaches on a second enter;
    later ones attach at once. Filter, cursor and screen are as they were after."""
    terminal = Terminal()
    app = app_with(fake, terminal)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("slash", *"codex", "enter")
        table = app.main.query_one(JobsTable)
        await wait_until(pilot, lambda: table.row_count == 2)
        select(app, "5f4e3d2c")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AttachHintScreen), "the hint")
        hint = str(app.screen.query_one("#hint").render())
        assert "ctrl+q" in hint and "5f4e3d2c" in hint
        await pilot.press("enter")  # Attach is focused
        await wait_until(pilot, lambda: len(terminal.ran) == 1, "the attach")
        assert terminal.ran[0][-2:] == ["-t", "%1"] and "attach-session" in terminal.ran[0]
        assert isinstance(app.screen, MainScreen)
        assert app.main.job_filter == "codex" and table.selected_job_id == "5f4e3d2c"
        await pilot.press("enter")  # no hint the second time
        await wait_until(pilot, lambda: len(terminal.ran) == 2, "the second attach")
        assert table.selected_job_id == "5f4e3d2c" and app.main.job_filter == "codex"


async def test_attach_refuses_a_finished_job_and_esc_on_the_hint_stays(fake: FakeSource) -> None:
    """A finished job whose pane is gone: said, and nothing attached. esc on the hint
    attaches nothing."""
    terminal = Terminal()
    app = app_with(fake, terminal)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, "c4d5e6f7")
        await pilot.press("enter")
        gone = "c4d5e6f7 is completed and its agent's pane is gone: nothing to step into"
        await wait_until(pilot, lambda: gone in notices(app), "the refusal")
        select(app, "3fa2c1d0")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AttachHintScreen), "the hint")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        # The mark that esc was handled, rather than a look after a pause: enter again
        # (the hint, once shown, is not shown again) attaches, and is the only attach.
        await pilot.press("enter")
        await wait_until(pilot, lambda: terminal.ran, "the attach")
        assert len(terminal.ran) == 1 and isinstance(app.screen, MainScreen)


async def test_a_completed_job_whose_agent_waits_at_its_prompt_is_stepped_into_and_followed_up(
    fake: FakeSource,
) -> None:
    """`--done-when idle` keeps a completed job's pane for review and follow-up: enter
    steps into it, and i sends it a follow-up (the box says this runs the job again),
    after which it is running again. A pending job is refused at once."""
    fake.kept_panes.add("c4d5e6f7")
    pending = fake.submit("later", "codex", "beta")
    terminal = Terminal()
    app = app_with(fake, terminal)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        app.attach_hint_shown = True
        select(app, "c4d5e6f7")
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(terminal.ran) == 1, "the attach")
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, TalkScreen), "the talk box")
        assert "it is completed: this runs it again" in str(app.screen.query_one("#to").render())
        await pilot.press(*"also the changelog", "enter")
        await wait_until(pilot, lambda: fake.inputs == [("c4d5e6f7", "also the changelog")])
        ran_again = "Sent 18 characters to c4d5e6f7: its job runs again until the agent is done"
        await wait_until(pilot, lambda: ran_again in notices(app), "the notice")
        table = app.main.query_one(JobsTable)
        await wait_until(pilot, lambda: table.jobs["c4d5e6f7"].status == "running", "running")
        select(app, pending)
        await pilot.press("i")
        assert f"{pending} is pending: its agent has not started yet (d: its page)" in notices(app)
        assert isinstance(app.screen, MainScreen)


async def test_ctrl_q_in_the_control_room_does_not_quit(fake: FakeSource) -> None:
    """ctrl+q is the way back from a pane; pressed once more it must not close the app
    (Textual quits on ctrl+q)."""
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.is_running
        assert any("ctrl+q comes back from an agent's pane" in n for n in notices(app))


async def test_i_sends_a_message_to_the_agent(fake: FakeSource) -> None:
    """i opens a prompt box; enter sends its text through the source's send_input (the
    code of `orchestrate send`), recorded as an input event; empty text is refused."""
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("i")
        screen = app.screen
        assert isinstance(screen, TalkScreen)
        await pilot.press("enter")
        assert app.screen is screen  # nothing typed: stays open
        assert "Nothing to send" in str(screen.query_one("#error").render())
        await pilot.press(*"also update the changelog", "enter")
        await wait_until(pilot, lambda: fake.inputs, "the message")
        assert fake.inputs == [("3fa2c1d0", "also update the changelog")]
        await wait_until(pilot, lambda: "Sent 25 characters to 3fa2c1d0" in notices(app))
        table = app.main.query_one(JobsTable)
        await wait_until(pilot, lambda: table.jobs["3fa2c1d0"].last_event == "input")
        select(app, "c4d5e6f7")  # completed, and its pane is gone
        await pilot.press("i")
        gone = "c4d5e6f7 is completed and its agent's pane is gone: nobody to talk to"
        await wait_until(pilot, lambda: gone in notices(app), "the refusal")
        assert isinstance(app.screen, MainScreen)


async def test_i_then_esc_sends_nothing(fake: FakeSource) -> None:
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("i", *"never mind", "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        # The mark that esc was handled, rather than a look after a pause: a message
        # sent next arrives, and is the only one.
        await pilot.press("i", *"go on", "enter")
        await wait_until(pilot, lambda: fake.inputs, "the message sent next")
        assert fake.inputs == [("3fa2c1d0", "go on")] and isinstance(app.screen, MainScreen)


async def test_d_opens_the_job_page(fake: FakeSource) -> None:
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("d")
        assert isinstance(app.screen, JobDetailScreen)


async def test_j_k_g_G_move_the_cursor(fake: FakeSource) -> None:
    """vim's keys move in the jobs table, and the help lists them."""
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        keys = app.screen.query_one("#keys", DataTable)
        assert [str(keys.get_row(f"move.{key}")[1]) for key in "jkgG"] == [
            "down", "up", "first", "last"
        ]  # fmt: skip
        await pilot.press("escape")
        table = app.main.query_one(JobsTable)
        assert table.cursor_row == 0
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")
        assert table.cursor_row == 0


def job_order(table: JobsTable) -> list[str]:
    return [str(table.get_row_at(n)[0]) for n in range(table.row_count)]


async def test_s_then_a_letter_sorts_and_a_header_click_too(fake: FakeSource) -> None:
    """s opens the sort menu: a sorts by agent, a again reverses, d restores the
    default order (live jobs first); a click on a header sorts by it. The cursor
    stays on its job."""
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)
        default = job_order(table)
        select(app, "3fa2c1d0")
        await pilot.press("s")
        assert isinstance(app.screen, SortScreen)
        await pilot.press("a")
        assert isinstance(app.screen, MainScreen)
        agents = [table.jobs[job_id].agent for job_id in job_order(table)]
        assert agents == sorted(agents) and table.selected_job_id == "3fa2c1d0"
        assert str(table.columns[table.ordered_columns[2].key].label) == "agent ▲"
        await pilot.press("s", "a")
        agents = [table.jobs[job_id].agent for job_id in job_order(table)]
        assert agents == sorted(agents, reverse=True)
        await pilot.press("s", "d")
        assert job_order(table) == default
        await pilot.click(JobsTable, offset=(13, 1))  # the status header, below the border
        await pilot.pause()
        assert job_order(table)[0] == "7b0e99a1" and table.sort_column == "status"
        fake.submit("a new one", "aider", "gamma")  # new rows join in the chosen order
        await wait_until(pilot, lambda: table.row_count == 7)
        states = [table.jobs[job_id].state for job_id in job_order(table)]
        assert states.index("pending") < states.index("completed")
        await pilot.press("s", "escape")
        assert table.sort_column == "status"


async def test_the_highlight_stays_in_view_when_its_job_moves(fake: FakeSource) -> None:
    """The selected job finishes and moves below many newer finished jobs: the cursor
    goes with it and the table shows it (a pin for "the highlight is lost after a
    refresh", which did not reproduce on this version)."""
    for n in range(80):
        created = FIXED_NOW - timedelta(minutes=n)
        fake.add_job(JobRow(f"f{n:07x}", "completed", "aider", "gamma", created, created))
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        table = app.main.query_one(JobsTable)
        select(app, "3fa2c1d0")  # created 30 min ago: below 30 of the finished
        fake.emit("3fa2c1d0", "completed", "done")
        await wait_until(pilot, lambda: table.jobs["3fa2c1d0"].status == "completed")
        await pilot.pause()
        assert table.selected_job_id == "3fa2c1d0"
        row = table.cursor_row
        assert table.scroll_y <= row < table.scroll_y + table.size.height - 1


async def test_colon_h_is_history(
    fake: FakeSource,
) -> None:
    """`:h` ran nothing (help or history?); it is the command of key h, and `:he` help."""
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("colon", "h", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("escape", "colon", *"he", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_the_palette_lists_each_command_once(fake: FakeSource) -> None:
    """Textual's own Quit and Keys entries doubled ours (q Quit, ? Help)."""
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("ctrl+p")
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        listed = palette.query_one(CommandList)
        await wait_until(pilot, lambda: listed.option_count > 10, "the commands")
        options = [listed.get_option_at_index(n) for n in range(listed.option_count)]
        titles = [str(option.prompt).splitlines()[0] for option in options]
        assert len(titles) == len(set(titles)), titles
        assert "Quit" in titles and "Keys" not in titles


async def test_the_new_job_dialog_defaults_to_an_installed_agent(fake: FakeSource) -> None:
    """It defaulted to claude, which exits 127 where it is not installed: now the first
    installed agent (the demo when none is), and it says what is installed."""
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("plus")
        screen = app.screen
        assert isinstance(screen, NewJobScreen)  # at once; the agents are found meanwhile
        installed = screen.query_one("#installed")
        await wait_until(pilot, lambda: str(installed.render()) == "installed here: codex, demo")
        assert screen.query_one("#agent", Input).value == "codex"
        await pilot.press("escape", "plus")  # the second time: known at once
        assert app.screen.query_one("#agent", Input).value == "codex"
    assert NewJobScreen(installed=["demo"]).default_agent == "demo"


async def test_the_split_log_opens_at_its_end(fake: FakeSource, tmp_path: Path) -> None:
    """A long pane log opened in the split showed its first lines, not its last, once
    the person had scrolled up in the log of the job before."""
    for job_id in ("3fa2c1d0", "5f4e3d2c"):
        log = tmp_path / f"{job_id}.log"
        log.write_text("".join(f"{job_id} line {n}\n" for n in range(300)))
        fake.pane_logs[job_id] = log
    app = app_with(fake, Terminal())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, "3fa2c1d0")
        await pilot.press("l")
        tail = app.main.query_one("#log-tail", PaneTail)
        await wait_until(pilot, lambda: tail.line_count >= 300, "the log")
        await wait_until(
            pilot, lambda: tail.max_scroll_y > 0 and tail.scroll_y == tail.max_scroll_y, "its end"
        )
        tail.scroll_home(animate=False)  # reading back in this job's log
        await pilot.pause()
        await pilot.press("down")  # the next job: 5f4e3d2c
        await wait_until(pilot, lambda: tail.lines[-1:] == ["5f4e3d2c line 299"], "its log")
        await wait_until(
            pilot, lambda: tail.max_scroll_y > 0 and tail.scroll_y == tail.max_scroll_y, "its end"
        )
        assert tail.scroll_y > 250
