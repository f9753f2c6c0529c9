"""One job: its record, why it is in its state, its timeline and its pane log."""

from __future__ import annotations

import json
import time

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from app.tui.commands import BACK
from app.tui.safe_text import as_text
from app.tui.source import SOURCE_ERRORS, ControlRoomSource, JobDetail, JobNotFound
from app.tui.widgets.pane_tail import PaneTail
from registry.wording import counted

REFRESH_INTERVAL_S = 0.5


class JobDetailScreen(Screen[None]):
    """Refreshes itself from the source while open; if the job is deleted it
    says so and stays open (showing the last record it saw)."""

    DEFAULT_CSS = """
    JobDetailScreen #gone { color: $error; text-style: bold; display: none; }
    JobDetailScreen #gone.-shown { display: block; }
    JobDetailScreen #gaps { color: $warning; }
    JobDetailScreen #why { color: $text-accent; }
    """

    BINDINGS = [BACK]

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

    def compose(self) -> ComposeResult:
        yield Static(as_text(f"job {self.job_id}", "bold"), id="title")
        yield Static("", id="gone")
        with Horizontal(id="detail-split"):
            with VerticalScroll(id="detail-info"):
                yield Static("loading…", id="record")
                yield Static("", id="why")
                yield Static("", id="gaps")
                yield DataTable(id="timeline", cursor_type="row")
            yield PaneTail(id="detail-tail")
        yield Footer()

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
        record = json.dumps(dict(detail.record), indent=2, sort_keys=True, default=str)
        self.query_one("#record", Static).update(as_text(record, one_line=False))
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
