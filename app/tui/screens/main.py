"""The main screen: header totals, jobs, sessions, event stream, split log tail."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TypeVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input

from app.tui.commands import COMMANDS, command_named
from app.tui.source import Delta, Snapshot
from app.tui.widgets.event_stream import EventStream
from app.tui.widgets.header_bar import HeaderBar
from app.tui.widgets.jobs_table import JobsTable
from app.tui.widgets.pane_tail import PaneTail
from app.tui.widgets.sessions_panel import SessionsPanel

W = TypeVar("W", bound=Widget)


class MainScreen(Screen[None]):
    """Stays at the bottom of the stack, so it keeps applying deltas (and keeps
    its filter) while other screens are on top of it."""

    snapshot: reactive[Snapshot] = reactive(Snapshot)
    """Totals for the header, replaced on every delta."""
    job_filter: reactive[str] = reactive("")
    """The `/` filter text; remembered for as long as the app runs."""

    class FilterBar(Input):
        """The `/` prompt."""

    class CommandBar(Input):
        """The `:` prompt (k9s command mode)."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header").data_bind(
            snapshot=MainScreen.snapshot, filter_text=MainScreen.job_filter
        )
        yield JobsTable(id="jobs").data_bind(filter_text=MainScreen.job_filter)
        yield PaneTail(id="log-tail")
        with Horizontal(id="bottom"):
            yield EventStream(id="events")
            yield SessionsPanel(id="sessions")
        yield self.FilterBar(placeholder="/ filter jobs (enter: keep, esc: close)", id="filter")
        yield self.CommandBar(
            placeholder=": command (cancel, resume, history, help…)",
            id="command",
            suggester=SuggestFromList([command.name for command in COMMANDS]),
        )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#jobs", JobsTable).border_title = "jobs"
        self.query_one("#sessions", SessionsPanel).border_title = "sessions"
        self.query_one("#events", EventStream).border_title = "events"
        self.query_one("#jobs").focus()

    # -- data -------------------------------------------------------------
    def apply_delta(self, delta: Delta, now: datetime) -> None:
        """Fold one (possibly merged) delta into every widget."""
        self.snapshot = delta.snapshot
        self.query_one("#jobs", JobsTable).apply(delta.jobs, delta.removed_job_ids, now)
        if delta.sessions is not None:
            self.query_one("#sessions", SessionsPanel).show_sessions(delta.sessions)
        self.query_one("#events", EventStream).add_events(delta.events)
        table = self.query_one("#jobs", JobsTable)
        table.border_subtitle = f"{table.row_count} of {len(table.jobs)}" if table.jobs else ""
        if not table.jobs:
            table.border_subtitle = "no jobs yet: press n to submit one"

    def refresh_ages(self, now: datetime) -> None:
        self.query_one("#jobs", JobsTable).refresh_ages(now)

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
    def session_labels(self) -> list[str]:
        sessions = self._composed("#sessions", SessionsPanel)
        return sessions.labels if sessions is not None else []

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
        tail.border_title = f"pane log · {job_id}"

    def hide_log(self) -> None:
        self.query_one("#log-tail", PaneTail).remove_class("-open")
        self.remove_class("-log-open")

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
        command = command_named(event.value)
        if command is None:
            self.notify(
                f"No command {event.value.strip()!r}: press ? for the list", severity="error"
            )
            return
        await self.app.run_action(command.action)

    @on(DataTable.RowSelected, "#jobs")
    async def _row_chosen(self) -> None:
        await self.app.run_action("open_job")
