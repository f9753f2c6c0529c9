"""One job: its record, why it is in its state, its timeline and its pane log."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from app.tui.commands import BACK
from app.tui.safe_text import as_text, visible
from app.tui.screens.job_commands import JOB_COMMANDS, JobCommands
from app.tui.source import SOURCE_ERRORS, ControlRoomSource, JobDetail, JobNotFound
from app.tui.widgets.pane_tail import PaneTail
from app.tui.widgets.theme import look_of, look_style, theme_style
from registry.vocabulary import Activity, EventType, JobStatus
from registry.wording import counted

REFRESH_INTERVAL_S = 0.5


class JobDetailScreen(JobCommands):
    """Refreshes itself from the source while open; if the job is deleted it
    says so and stays open (showing the last record it saw)."""

    DEFAULT_CSS = """
    JobDetailScreen #gone { color: $error; text-style: bold; display: none; }
    JobDetailScreen #gone.-shown { display: block; }
    JobDetailScreen #gaps { color: $warning; }
    JobDetailScreen #why { color: $text-accent; }
    """

    # enter steps into the job's agent here too (the timeline's own enter would not)
    BINDINGS = [BACK, Binding("enter", "attach_job", "Attach", show=False, priority=True)]
    JOB_COMMANDS = JOB_COMMANDS - {"sort", "open_job"}
    """A job's page acts on its job; sorting and opening a page are the lists'."""

    detail: reactive[JobDetail | None] = reactive(None, init=False)
    """The latest detail read from the source (None until the first read)."""

    class Loaded(Message):
        def __init__(self, detail: JobDetail) -> None:
            super().__init__()
            self.detail = detail

    class Gone(Message):
        """The job was deleted from the registry while this screen was open."""

    class Failed(Message):
        def __init__(self, error: Exception) -> None:
            super().__init__()
            self.error = error

    def __init__(self, source: ControlRoomSource, job_id: str) -> None:
        super().__init__()
        self.source = source
        self.job_id = job_id
        self.gone = False

    @property
    def selected_job_id(self) -> str | None:
        return None if self.gone else self.job_id

    @property
    def selected_session(self) -> str | None:
        return str(self.detail.record.get("agent_session")) if self.detail else None

    def action_toggle_log(self) -> None:
        """`l`: show or hide the tail of the job's pane log."""
        self.query_one("#detail-tail").toggle_class("-hidden")

    def compose(self) -> ComposeResult:
        yield Static(as_text(f"job {self.job_id}", "bold"), id="title")
        yield Static("", id="gone")
        with Horizontal(id="detail-split"):
            with VerticalScroll(id="detail-info"):
                yield Static("", id="actions")
                yield Static("", id="why")
                yield Static("loading…", id="record")
                yield Static("", id="gaps")
                yield DataTable(id="timeline", cursor_type="row")
            yield PaneTail(id="detail-tail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#timeline", DataTable).add_columns("seq", "time", "event", "detail")
        self._refresh_loop()

    @work(thread=True, exclusive=True, group="detail", description="Reading job detail")
    def _refresh_loop(self) -> None:
        worker = get_current_worker()
        last: JobDetail | None = None
        last_error = ""
        while not worker.is_cancelled:
            try:
                detail = self.source.job_detail(self.job_id)
            except JobNotFound:
                self.post_message(self.Gone())
                return
            except SOURCE_ERRORS as error:
                if str(error) != last_error:  # one notice per distinct failure
                    last_error = str(error)
                    self.post_message(self.Failed(error))
            else:
                last_error = ""
                if detail != last:
                    last = detail
                    self.post_message(self.Loaded(detail))
            time.sleep(REFRESH_INTERVAL_S)

    def on_job_detail_screen_loaded(self, message: Loaded) -> None:
        self.detail = message.detail

    def on_job_detail_screen_gone(self) -> None:
        self.gone = True
        self.query_one("#gone", Static).update(
            as_text(
                f"Job {self.job_id} was deleted from the registry; showing its last known state."
            )
        )
        self.query_one("#gone").add_class("-shown")
        self.notify(f"Job {self.job_id} was deleted", severity="warning")

    def on_job_detail_screen_failed(self, message: Failed) -> None:
        self.notify(f"Could not read job {self.job_id}: {message.error}", severity="error")

    def watch_detail(self, detail: JobDetail | None) -> None:
        if detail is None:
            return
        # Static and DataTable parse a str as markup: the record, the reasons and the
        # events are data (a prompt or detail may hold "[/]" or "[@click=...]").
        self.query_one("#title", Static).update(self._title(detail))
        self.query_one("#actions", Static).update(self._actions(detail))
        self.query_one("#record", Static).update(self._page(detail))
        self.query_one("#why", Static).update(as_text(f"why: {detail.why_text}", one_line=False))
        gaps = ""
        if detail.missing_seqs:
            seqs = ", ".join(str(seq) for seq in detail.missing_seqs[:20])
            gaps = f"⚠ {counted(len(detail.missing_seqs), 'event')} missing (seq {seqs})"
        self.query_one("#gaps", Static).update(Text(gaps))
        table = self.query_one("#timeline", DataTable)
        with self.app.batch_update():
            for event in detail.timeline:
                if str(event.seq) not in table.rows:
                    table.add_row(
                        Text(str(event.seq)),
                        Text(event.ts.strftime("%H:%M:%S")),
                        as_text(event.event),
                        as_text(event.detail),
                        key=str(event.seq),
                    )
        self.query_one(PaneTail).follow(detail.pane_log_path)

    def _state(self, detail: JobDetail) -> str:
        """The state word of JobRow.state, from the record."""
        record = detail.record
        status = str(record.get("status", ""))
        activity = record.get("activity")
        running = status == JobStatus.RUNNING
        if running and record.get("last_event") == EventType.PERMISSION_REQUIRED:
            return Activity.WAITING  # asked through its own event (Job.waiting)
        if running and isinstance(activity, Mapping) and activity.get("activity"):
            return str(activity["activity"])
        return status or "unknown"

    def _title(self, detail: JobDetail) -> Text:
        """`● working  job 3fa2c1d0 · claude · session alpha`."""
        record, state = detail.record, self._state(detail)
        title = Text(f"{look_of(state).glyph} {state}  ", style=look_style(self.app, state))
        title.append(f"job {self.job_id}", "bold")
        for label, key in (("", "agent"), ("session ", "agent_session")):
            if record.get(key):
                title.append(f" · {label}{visible(str(record[key]))}")
        return title

    def _actions(self, detail: JobDetail) -> Text:
        """The keys that act on this job in its state (the same keys as on the main
        screen, bound here too)."""
        state, status = self._state(detail), str(detail.record.get("status", ""))
        keys: list[tuple[str, str]] = []
        if status == JobStatus.RUNNING:
            keys += [("⏎", "step into its pane"), ("i", "talk to it"), ("c", "cancel")]
        elif status in (JobStatus.ERROR, JobStatus.CANCELLED):
            keys += [("r", "resume")]
        elif status == JobStatus.PENDING:
            keys += [("c", "cancel")]
        if state == Activity.WAITING:
            keys.insert(0, ("y", "answer yes"))
        if detail.worktree:
            keys.append(("v", "review its diff"))
        keys += [("l", "pane log"), ("esc", "back")]
        accent = theme_style(self.app, "accent", bold=True)
        line = Text("keys  ", style=theme_style(self.app, "foreground-darken-2"))
        for index, (key, what) in enumerate(keys):
            if index:
                line.append(" · ")
            line.append(key, accent)
            line.append(f" {what}")
        return line

    def _page(self, detail: JobDetail) -> Text:
        """The record as a page: what it is doing and why, what it was asked, where it
        works, and its figures; never raw JSON."""
        record = detail.record
        muted = theme_style(self.app, "foreground-darken-2")
        page = Text()

        def field(name: str, value: object) -> None:
            if value in (None, "", [], {}):
                return
            page.append(f"{name:<12}", muted)
            page.append(visible(str(value), one_line=False))
            page.append("\n")

        activity = record.get("activity")
        if isinstance(activity, Mapping) and activity.get("activity"):
            what = str(activity["activity"])
            about = activity.get("summary") or activity.get("question") or activity.get("command")
            since = _clock(activity.get("since"))
            source = activity.get("source")
            field("activity", " ".join(
                part for part in (what, f"since {since}" if since else "",
                                  f"({source})" if source else "",
                                  f"— {about}" if about else "") if part
            ))  # fmt: skip
        if page:
            page.append("\n")
        page.append("prompt\n", muted)
        prompt = str(record.get("prompt") or "")
        shown = prompt if len(prompt) <= PROMPT_SHOWN else prompt[:PROMPT_SHOWN] + "…"
        page.append_text(as_text(shown, one_line=False))
        page.append("\n\n")
        field("work tree", detail.worktree)
        field("branch", detail.branch)
        field("created", _clock(record.get("created_at")))
        field("updated", _clock(record.get("updated_at")))
        field("completed", _clock(record.get("completed_at")))
        field("done when", record.get("done_when"))
        field("timeouts", _timeouts(record))
        field("events", f"{record.get('last_seq', 0)} (last: {record.get('last_event') or '—'})")
        field("retries", record.get("retry_count") or None)
        field("result", record.get("result"))
        field("artifacts", ", ".join(map(str, record.get("expected_artifacts") or [])))
        page.append("\ntimeline", muted)
        return page


PROMPT_SHOWN = 4000  # characters of a prompt on the page (the rest: orchestrate job get)


def _clock(stamp: object) -> str:
    """`2025-01-15 11:30:00` from an ISO time (as it is if it is not one)."""
    if not stamp:
        return ""
    try:
        return datetime.fromisoformat(str(stamp)).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return str(stamp)


def _timeouts(record: Mapping[str, object]) -> str:
    run, idle = record.get("timeout_sec"), record.get("idle_timeout_sec")
    parts = [f"{run} s to finish" if run else "", f"{idle} s idle" if idle else ""]
    return ", ".join(part for part in parts if part)
