"""The jobs table: one row per job, updated in place by row key."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from rich.cells import cell_len
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey

from app.tui.source import JobRow
from app.tui.widgets.theme import STATUS_COLOURS, theme_style

COLUMNS = (
    ("job_id", "job"),
    ("status", "status"),
    ("agent", "agent"),
    ("session", "session"),
    ("age", "age"),
    ("last_event", "last event"),
    ("progress", "progress"),
    ("missing", "missing"),
)


def format_age(seconds: float) -> str:
    """`42s`, `7m`, `3h`, `2d`: the age of a job at a glance."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _width(value: object) -> int:
    """Terminal cells a table value takes (Text or plain)."""
    return value.cell_len if isinstance(value, Text) else cell_len(str(value))


def matches(job: JobRow, filter_text: str) -> bool:
    """Whether a job passes the `/` filter (case-insensitive substring of any field)."""
    if not filter_text:
        return True
    needle = filter_text.lower()
    fields = (job.job_id, job.status, job.agent, job.agent_session, job.last_event or "")
    return any(needle in field.lower() for field in (*fields, job.progress_detail))


class JobsTable(DataTable[object]):
    """Live jobs; the model (`jobs`) holds every job, the table shows those that
    pass the filter. Rows are added, updated and removed by key, never cleared,
    so the cursor and scroll position survive every refresh."""

    DEFAULT_CSS = """
    JobsTable { background: $surface; }
    JobsTable > .datatable--header { color: $text-muted; }
    """

    filter_text: reactive[str] = reactive("")
    """The `/` filter; rows not matching it are removed from the view."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.jobs: dict[str, JobRow] = {}
        self.now: datetime | None = None
        self._shown: dict[str, tuple[object, ...]] = {}  # row key -> cells as last drawn
        self._newest_shown: tuple[datetime, str] | None = None
        for key, label in COLUMNS:  # before mount, so an early delta has columns to fill
            self.add_column(label, key=key)

    @property
    def selected_job_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:
            return None
        return str(key.value)

    def _cells(self, job: JobRow) -> tuple[object, ...]:
        status_style = theme_style(self.app, STATUS_COLOURS.get(job.status, "foreground"))
        age = format_age((self.now - job.created_at).total_seconds()) if self.now else ""
        last_event: object = job.last_event or ""
        if job.waiting_permission:
            last_event = Text("⚠ needs y/N", style=theme_style(self.app, "warning", bold=True))
        missing: object = ""
        if job.missing_events:
            missing = Text(f"⚠ {job.missing_events}", style=theme_style(self.app, "warning"))
        return (
            job.job_id,
            Text(job.status, style=status_style),
            job.agent,
            job.agent_session,
            age,
            last_event,
            job.progress_detail
            if len(job.progress_detail) <= 28
            else job.progress_detail[:27] + "…",
            missing,
        )

    def _show(self, job: JobRow) -> None:
        cells = self._cells(job)
        previous = self._shown.get(job.job_id)
        if previous is None:
            self.add_row(*cells, key=job.job_id)
        else:
            for (column, _), old, new in zip(COLUMNS, previous, cells, strict=True):
                if old != new:
                    # Columns only grow: a narrower value asking DataTable to
                    # re-fit would re-measure every row of the column (O(rows)).
                    grow = _width(new) > self.columns[ColumnKey(column)].content_width
                    self.update_cell(job.job_id, column, new, update_width=grow)
        self._shown[job.job_id] = cells

    def _hide(self, job_id: str) -> None:
        if self._shown.pop(job_id, None) is not None:
            self.remove_row(job_id)

    def apply(
        self, changed: Iterable[JobRow], removed: Iterable[str], now: datetime | None
    ) -> None:
        """Fold a delta into the model and the view, in one batch."""
        self.now = now or self.now
        with self.app.batch_update():
            for job_id in removed:
                self.jobs.pop(job_id, None)
                self._hide(job_id)
            out_of_order = False
            for job in changed:
                self.jobs[job.job_id] = job
                if matches(job, self.filter_text):
                    newest = self._newest_shown
                    if job.job_id not in self._shown and newest and self._order(job) < newest:
                        out_of_order = True  # an older job arrived late (backfill)
                    self._show(job)
                    self._newest_shown = max(
                        self._newest_shown or self._order(job), self._order(job)
                    )
                else:
                    self._hide(job.job_id)
            if out_of_order:  # rows can only be appended: restore oldest-first order
                self.sort("job_id", key=lambda job_id: self._order(self.jobs[job_id]))

    @staticmethod
    def _order(job: JobRow) -> tuple[datetime, str]:
        return (job.created_at, job.job_id)

    def refresh_ages(self, now: datetime) -> None:
        """Redraw the age column (ages move even when no event arrives): only the
        age cells whose text changed, so a thousand rows cost next to nothing."""
        self.now = now
        age_index = [key for key, _ in COLUMNS].index("age")
        with self.app.batch_update():
            for job_id, cells in list(self._shown.items()):
                age = format_age((now - self.jobs[job_id].created_at).total_seconds())
                if cells[age_index] != age:
                    self._shown[job_id] = (*cells[:age_index], age, *cells[age_index + 1 :])
                    grow = len(age) > self.columns[ColumnKey("age")].content_width
                    self.update_cell(job_id, "age", age, update_width=grow)

    def watch_filter_text(self) -> None:
        if self.is_mounted:
            self.apply(list(self.jobs.values()), (), None)
