"""The main screen: header totals, jobs, sessions, event stream, split log tail."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.notifications import Notification
from textual.reactive import reactive
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input

from app.tui.commands import COMMANDS, SCREEN_BINDINGS, command_named, commands_starting
from app.tui.notices import toast, withdraw
from app.tui.safe_text import as_text
from app.tui.screens.inbox import InboxScreen
from app.tui.screens.job_commands import JOB_COMMANDS, JobCommands
from app.tui.screens.sort import SortScreen
from app.tui.source import Delta, JobRow, SessionRow, Snapshot
from app.tui.widgets.event_stream import EventStream
from app.tui.widgets.header_bar import HeaderBar
from app.tui.widgets.inbox_panel import InboxPanel, question_of
from app.tui.widgets.jobs_table import JobsTable
from app.tui.widgets.pane_tail import PREVIEW_BYTES, PaneTail
from app.tui.widgets.sessions_panel import SessionsPanel
from registry.vocabulary import JobStatus

W = TypeVar("W", bound=Widget)
ANNOUNCE_WAIT_S = 2.0
"""How long a new wait's notice waits for the command it is about."""


class MainScreen(JobCommands):
    """Stays at the bottom of the stack, so it keeps applying deltas (and keeps
    its filter) while other screens are on top of it."""

    BINDINGS = SCREEN_BINDINGS
    JOB_COMMANDS = JOB_COMMANDS

    snapshot: reactive[Snapshot] = reactive(Snapshot)
    """Totals for the header, replaced on every delta."""
    job_filter: reactive[str] = reactive("")
    """The `/` filter text; remembered for as long as the app runs."""
    waiting_jobs: reactive[int] = reactive(0)
    """How many jobs wait for a permission answer (the header counts them)."""
    waiting_rows: reactive[tuple[JobRow, ...]] = reactive(())
    """The jobs waiting on a person, in table order: the app's, bound down (the panel
    lists them; the inbox reads the app's own)."""
    answering: reactive[Mapping[str, str]] = reactive(dict)
    """Job id -> how the answer given to it is going, while that is worth saying."""
    problem: reactive[str] = reactive("")
    """Why the registry cannot be read ("" while it can); shown until a read works."""
    activity_counts: reactive[dict[str, int]] = reactive(dict)
    """Running jobs per activity, for the header."""

    class LogWanted(Message):
        """The split log tail is open and another job is highlighted: tail its pane."""

        def __init__(self, job_id: str) -> None:
            super().__init__()
            self.job_id = job_id

    class FilterBar(Input):
        """The `/` prompt."""

    class CommandBar(Input):
        """The `:` prompt (k9s command mode)."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header").data_bind(
            snapshot=MainScreen.snapshot,
            filter_text=MainScreen.job_filter,
            waiting=MainScreen.waiting_jobs,
            problem=MainScreen.problem,
            activities=MainScreen.activity_counts,
        )
        yield InboxPanel(id="inbox").data_bind(
            rows=MainScreen.waiting_rows, answering=MainScreen.answering
        )
        yield JobsTable(id="jobs").data_bind(
            filter_text=MainScreen.job_filter, problem=MainScreen.problem
        )
        yield PaneTail(id="log-tail", replay_bytes=PREVIEW_BYTES)
        with Horizontal(id="bottom"):
            yield EventStream(id="events")
            yield SessionsPanel(id="sessions")
        yield self.FilterBar(placeholder="/ filter jobs (enter: keep, esc: close)", id="filter")
        yield self.CommandBar(
            placeholder=": command (cancel, resume, history, help…)",
            id="command",
            suggester=SuggestFromList([command.name for command in COMMANDS]),
        )
        yield Footer(compact=True)

    def __init__(self) -> None:
        super().__init__()
        self.first_delta_applied = False
        self.needs_you_jobs = 0
        """How many jobs need a person (JobRow.needs_person: a question, a block they
        stopped at, a screen nothing explains): what the bell and the title count."""
        # Jobs that started waiting and are not announced yet (their command unknown).
        self._held_questions: set[str] = set()
        self._question_notices: dict[str, Notification] = {}
        """The "Waiting for an answer" notice of each job still waiting: taken off the
        screen when the job stops waiting (three answered questions left three stale
        notices over the inbox for 15 s)."""
        # The job whose pane log the split tail should show: set when it is asked for
        # (l, or the cursor moving while it is open), None once it is closed. A log
        # path found for any other job arrives too late and is dropped.
        self.log_wanted: str | None = None

    def on_mount(self) -> None:
        self.query_one("#jobs", JobsTable).border_title = "jobs"
        self.query_one("#sessions", SessionsPanel).border_title = "sessions"
        self.query_one("#events", EventStream).border_title = "events"
        self.query_one("#jobs").focus()

    # -- data -------------------------------------------------------------
    def apply_delta(self, delta: Delta, now: datetime) -> bool:
        """Fold one (possibly merged) delta into every widget (none while the app
        shuts down: its widgets go before the screen does, and the poller still rings)."""
        table = self._composed("#jobs", JobsTable)
        if table is None:
            return False
        self.snapshot = delta.snapshot
        self.problem = ""  # the registry was read
        announce = self.first_delta_applied
        was_waiting = set(table.waiting)
        table.apply(delta.jobs, delta.removed_job_ids, now)
        self.waiting_jobs = len(table.waiting)
        self.needs_you_jobs = sum(job.needs_person for job in table.jobs.values())
        for job_id in was_waiting - table.waiting:
            if (notice := self._question_notices.pop(job_id, None)) is not None:
                withdraw(self.app, notice)
        running = (job for job in table.jobs.values() if job.status == JobStatus.RUNNING)
        states = {job.job_id: job.state for job in running}
        self.activity_counts = dict(Counter(states.values()))
        sessions = self.query_one("#sessions", SessionsPanel)
        if delta.sessions is not None:
            sessions.show_sessions(delta.sessions, states)
        elif states != sessions.job_states:  # a job's glyph there changed
            sessions.job_states = states
            sessions.restyle()
        self.query_one("#events", EventStream).add_events(delta.events)
        self.first_delta_applied = True
        if announce:  # the jobs waiting at startup are counted in the header, not toasted
            for job_id in sorted(table.waiting - was_waiting):
                self._held_questions.add(job_id)
                self.set_timer(ANNOUNCE_WAIT_S, lambda job_id=job_id: self._announce(job_id, True))
        for job_id in sorted(self._held_questions):
            self._announce(job_id, False)
        return True

    def watch_waiting_rows(self, waiting: tuple[JobRow, ...]) -> None:
        """ "not confirmed" is about a wait: once the job stops waiting it is old news."""
        still = {job.job_id for job in waiting}
        if any(job_id not in still and s.startswith("⚠") for job_id, s in self.answering.items()):
            self.answering = {
                job_id: state
                for job_id, state in self.answering.items()
                if job_id in still or not state.startswith("⚠")
            }

    def _announce(self, job_id: str, waited: bool) -> None:
        """A job has just started waiting for a permission answer: say so, as it may be
        scrolled out of view or filtered out. Held until the wait names its command
        (Codex's status sequence says "waiting" before its screen shows what), or for
        ANNOUNCE_WAIT_S: then said with what is known."""
        if job_id not in self._held_questions:
            return
        table = self._composed("#jobs", JobsTable)
        job = table.jobs.get(job_id) if table is not None else None
        if job is None or not job.waiting_permission:
            self._held_questions.discard(job_id)  # answered, or gone, before it was said
            return
        if not waited and not job.names_command:
            return
        self._held_questions.discard(job_id)
        if isinstance(self.app.screen, InboxScreen):
            return  # its row there says it all (notices covered the inbox at 80x24)
        keys = "/".join(reply[0] for reply in job.answers)
        self._question_notices[job_id] = toast(
            self.app,
            f"job {job.job_id} ({job.agent}) asks: {question_of(job)} — {keys}",
            title="Waiting for an answer",
            severity="warning",
            timeout=15,
        )

    def withdraw_question_notices(self) -> None:
        """The inbox is open: every waiting job is a row there, its notice is noise."""
        for notice in self._question_notices.values():
            withdraw(self.app, notice)
        self._question_notices.clear()

    def refresh_ages(self, now: datetime) -> None:
        table = self._composed("#jobs", JobsTable)
        if table is not None:  # None while the app closes (a timer may still fire)
            table.refresh_ages(now)

    # -- what actions apply to ------------------------------------------
    # A key pressed at startup can ask these before the screen is composed: nothing is
    # selected then, rather than a NoMatches crash.
    @property
    def selected_job_id(self) -> str | None:
        table = self._composed("#jobs", JobsTable)
        return table.selected_job_id if table is not None else None

    @property
    def selected_session(self) -> str | None:
        """The highlighted session when the sessions panel has focus, else the
        session of the highlighted job."""
        sessions = self._composed("#sessions", SessionsPanel)
        if sessions is not None and sessions.has_focus and sessions.row_count:
            return str(sessions.coordinate_to_cell_key(sessions.cursor_coordinate).row_key.value)
        table = self._composed("#jobs", JobsTable)
        job = table.jobs.get(table.selected_job_id or "") if table is not None else None
        return job.agent_session if job else None

    @property
    def known_sessions(self) -> dict[str, SessionRow] | None:
        """The sessions by label as last read (None: not read yet)."""
        sessions = self._composed("#sessions", SessionsPanel)
        return sessions.sessions if sessions is not None else None

    @property
    def session_labels(self) -> list[str]:
        sessions = self._composed("#sessions", SessionsPanel)
        return sessions.labels if sessions is not None else []

    def offers(self, action: str) -> bool:
        """Every command of the app applies here."""
        return True

    def action_sort(self) -> None:
        """`s`: the sort dialog; the jobs table sorts itself by the column chosen."""
        table = self.query_one("#jobs", JobsTable)
        self.app.push_screen(SortScreen(table.sort_column, table.sort_reverse), table.sort_by)

    def action_toggle_log(self) -> None:
        """`l`: the split tail of the selected job's pane log, or closed if open."""
        if self.log_wanted is not None:
            self.hide_log()
        elif (job_id := self._selected_job()) and self.want_log(job_id):
            self.room.find_log(job_id)

    def _composed(self, selector: str, kind: type[W]) -> W | None:
        """The widget, or None before the screen is composed."""
        return next(self.query(selector).results(kind), None)

    # -- filter, command mode, log split ---------------------------------
    def open_filter(self) -> None:
        bar = self.query_one("#filter", Input)
        bar.value = self.job_filter
        bar.add_class("-open")
        bar.focus()

    def open_command_bar(self) -> None:
        bar = self.query_one("#command", Input)
        bar.value = ""
        bar.add_class("-open")
        bar.focus()

    @property
    def log_open(self) -> bool:
        return self.query_one("#log-tail", PaneTail).has_class("-open")

    def show_log(self, job_id: str, path: Path | None) -> None:
        """Open the split tail on a job's pane log."""
        tail = self.query_one("#log-tail", PaneTail)
        tail.add_class("-open")
        self.add_class("-log-open")
        tail.follow(path)
        tail.border_title = as_text(f"pane log · {job_id}")  # a str title is markup

    def want_log(self, job_id: str) -> bool:
        """Ask for ``job_id``'s pane log in the split; False if it is already asked for."""
        if job_id == self.log_wanted:
            return False
        self.log_wanted = job_id
        return True

    def hide_log(self) -> None:
        self.log_wanted = None
        self.query_one("#log-tail", PaneTail).remove_class("-open")
        self.remove_class("-log-open")

    def close_bars(self) -> None:
        """Close the `/` and `:` prompts if open (the filter typed stays in force)."""
        for bar in self.query(Input).results():
            if bar.has_class("-open"):
                self._close_bar(bar)

    def back(self) -> bool:
        """Close whatever `esc` should close here; False if there was nothing."""
        for bar in self.query(Input).results():
            if bar.has_class("-open"):
                self._close_bar(bar)
                return True
        if self.job_filter:
            self.job_filter = ""
            return True
        if self.log_open:
            self.hide_log()
            return True
        return False

    def _close_bar(self, bar: Input) -> None:
        bar.remove_class("-open")
        self.query_one("#jobs").focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.job_filter = event.value

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._close_bar(event.input)

    @on(Input.Submitted, "#command")
    async def _command_submitted(self, event: Input.Submitted) -> None:
        self._close_bar(event.input)
        if not event.value.strip(" :"):  # enter on an empty prompt only closes it
            return
        command = command_named(event.value)
        if command is None:
            typed = event.value.strip()
            could_be = commands_starting(typed)
            if len(could_be) > 1:
                self.notify(
                    f":{typed.lstrip(':')} could be {', '.join(could_be)}", severity="error"
                )
            else:
                self.notify(f"No command {typed!r}: press ? for the list", severity="error")
            return
        await self.app.run_action(command.action)

    @on(DataTable.RowHighlighted, "#jobs")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The split log tail follows the highlighted job."""
        job_id = str(event.row_key.value)
        if self.log_wanted is not None and self.want_log(job_id):  # once per job
            self.post_message(self.LogWanted(job_id))

    @on(DataTable.RowSelected, "#jobs")
    async def _row_chosen(self) -> None:
        """A click on the highlighted row opens the job's page (enter steps into the
        agent: JobsTable's own binding)."""
        await self.run_action("open_job")
