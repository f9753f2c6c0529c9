"""The jobs table: one row per job, updated in place by row key."""

from __future__ import annotations

from collections.abc import Container, Iterable
from datetime import datetime
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.app import App
from textual.cache import LRUCache
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowKey

from app.tui.commands import ROW_BINDINGS
from app.tui.safe_text import as_text, visible
from app.tui.source import JobRow
from app.tui.widgets.job_order import DEFAULT_ORDER, SORT_BY_KEY, order_key
from app.tui.widgets.theme import look_of, look_style, theme_style

COLUMNS = (
    ("job_id", "job"),
    ("status", "status"),
    ("agent", "agent"),
    ("session", "session"),
    ("age", "age"),
    ("missing", "missing"),
    ("last_event", "last event"),
    ("progress", "progress"),
)
AGE_INDEX = [key for key, _ in COLUMNS].index("age")
# Cells past these widths end in "…": a long session label would push the columns
# after it off screen, and progress, last, has the room the others leave.
SESSION_CELLS = 24
PROGRESS_CELLS = 60
# Words that find a job waiting for a person, besides what its cells show.
NEEDS_YOU = ("waiting", "needs you", "needs y/N", "question", "permission")
RENDER_CACHE_ROWS = 200  # rows' renders kept: a few screenfuls (see _size_render_caches)


def _discard(cache: LRUCache[Any, Any], index: int, wanted: Container[object]) -> None:
    """Drop the entries of ``cache`` whose key holds a wanted value at ``index``."""
    for key in [key for key in cache.keys() if key[index] in wanted]:  # noqa: SIM118 - LRUCache has no __iter__
        cache.discard(key)


def format_age(seconds: float) -> str:
    """`42s`, `7m`, `3h`, `2d`: the age of a job at a glance."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def state_text(app: App[object], state: str) -> Text:
    """`● working`, `⚠ waiting`, `✓ completed`: a job's state with its glyph and colour."""
    return Text(f"{look_of(state).glyph} {visible(state)}", style=look_style(app, state), end="")


def _progress(job: JobRow) -> str:
    """What the job is at: for one waiting on a person, what it asks (a hook's activity
    event says only "waiting", so the column read "waiting" beside "⚠ needs y/n")."""
    return job.question if job.waiting_permission and job.question else job.progress_detail


def _plain(value: str) -> Text:
    """A cell shown as written: DataTable parses a `str` cell as markup (slow, and a
    detail such as `[/x]` would fail to parse), a `Text` cell is drawn as is."""
    return as_text(value)


def _width(value: object) -> int:
    """Terminal cells a table value takes (Text or plain)."""
    return value.cell_len if isinstance(value, Text) else cell_len(str(value))


def _clipped(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` terminal cells, an ellipsis marking a cut."""
    text = visible(text)
    return text if cell_len(text) <= cells else set_cell_size(text, cells - 1) + "…"


def matches(job: JobRow, filter_text: str) -> bool:
    """Whether a job passes the `/` filter: a case-insensitive substring of any field or
    of any word that describes its state, shown or not (`running` finds a job shown as
    `working`; `waiting`, `needs` and `needs you` find those waiting for an answer)."""
    if not filter_text:
        return True
    needle = filter_text.lower()
    fields = [job.job_id, job.status, job.state, job.agent, job.agent_session]
    fields += [job.last_event or "", job.progress_detail, job.question]
    if job.waiting_permission:
        fields += NEEDS_YOU
    return any(needle in field.lower() for field in fields)


class JobsTable(DataTable[object]):
    """Live jobs; the model (`jobs`) holds every job, the table shows those that
    pass the filter, live ones first (`row_order`). Rows are added, updated and
    removed by key, never cleared, so the cursor stays on its job and the scroll
    position survives every refresh."""

    DEFAULT_CSS = """
    JobsTable { background: $surface; }
    JobsTable > .datatable--header { color: $text-muted; }
    JobsTable > .jobs-table--empty { color: $text-muted; text-style: italic; }
    """
    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"jobs-table--empty"}
    # enter steps into the agent (DataTable's enter would select the row: that is left
    # to a click on the highlighted row, which opens the job's page)
    BINDINGS = ROW_BINDINGS

    filter_text: reactive[str] = reactive("")
    """The `/` filter; rows not matching it are removed from the view."""
    problem: reactive[str] = reactive("")
    """Why the registry cannot be read right now ("" while it can): said where the
    rows would be, so an unreadable registry never passes for an empty one."""
    empty_text: reactive[str] = reactive("")
    """What the table area says while it shows no row (set by `describe`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.jobs: dict[str, JobRow] = {}
        self.now: datetime | None = None
        self._shown: dict[str, tuple[object, ...]] = {}  # row key -> cells as last drawn
        self._orders: dict[str, Any] = {}  # row key -> its order_key
        self._last_order: Any = None  # the bottom row's, at most
        self.sort_column = DEFAULT_ORDER  # a column key, or the default order (live first)
        self.sort_reverse = False
        self.waiting: set[str] = set()  # jobs waiting for a permission answer
        self._changed_cells: dict[str, dict[str, object]] = {}  # row -> column -> value
        for key, label in COLUMNS:  # before mount, so an early delta has columns to fill
            self.add_column(label, key=key)
        self._size_render_caches()

    def _size_render_caches(self) -> None:
        """Render caches sized for a screenful of rows, not DataTable's defaults
        (10,000 cells, 1,000 rows and lines). With rows changing a thousand times
        a second the defaults fill with stale renders: tens of thousands of
        objects the garbage collector walks on every full pass (15-50 ms each,
        the slowest 1% of publish->row), and that `_forget_renders` scans on
        every flush. A screenful is ~50 rows of 8 cells, in a few styles
        (cursor, zebra, hover)."""
        self._cell_render_cache.maxsize = RENDER_CACHE_ROWS * len(COLUMNS) * 2
        for cache in (self._row_render_cache, self._row_renderable_cache, self._line_cache):
            cache.maxsize = RENDER_CACHE_ROWS

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.restyle())

    def restyle(self) -> None:
        """Draw every row again in the current theme's colours: cells are styled
        Text, made once, which a theme change would otherwise leave as they were
        (dark-theme colours on a light background)."""
        with self.app.batch_update():
            for job_id in list(self._shown):
                # every cell: Text equality ignores a Text's own style, so _show would
                # find the cells unchanged
                cells = self._cells(self.jobs[job_id])
                self._shown[job_id] = cells
                columns = {column: cell for (column, _), cell in zip(COLUMNS, cells, strict=True)}
                self._changed_cells[job_id] = columns
            self._flush_cells()

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
        age = format_age((self.now - job.created_at).total_seconds()) if self.now else ""
        last_event: object = job.last_event or ""
        if job.waiting_permission:
            last_event = Text("⚠ needs y/n", style=theme_style(self.app, "warning", bold=True))
        missing: object = _plain("")
        if job.missing_events:
            missing = Text(f"⚠ {job.missing_events}", style=theme_style(self.app, "warning"))
        return (
            _plain(job.job_id),
            state_text(self.app, job.state),
            _plain(job.agent),
            _plain(_clipped(job.agent_session, SESSION_CELLS)),
            _plain(age),
            missing,
            _plain(last_event) if isinstance(last_event, str) else last_event,
            _plain(_clipped(_progress(job), PROGRESS_CELLS)),
        )

    def _show(self, job: JobRow) -> None:
        cells = self._cells(job)
        previous = self._shown.get(job.job_id)
        if previous is None:
            self.add_row(*cells, key=job.job_id)
        else:
            for (column, _), old, new in zip(COLUMNS, previous, cells, strict=True):
                if old != new:
                    self._changed_cells.setdefault(job.job_id, {})[column] = new
        self._shown[job.job_id] = cells

    def _flush_cells(self) -> None:
        """Write the cells changed since the last flush and redraw only their rows.

        `DataTable.update_cell` bumps a counter that is part of every render-cache
        key, so one changed cell re-renders every visible row (~60 ms for a
        screenful here); at a thousand events a second that is the whole frame
        budget. Instead the values go straight into the table's data, only the
        changed rows' cached renders are dropped, and only those rows are
        repainted. A value wider than its column takes the ordinary path: the
        column must grow, and every row re-renders anyway. Relies on DataTable
        internals (`_data`, its render caches): tests/tui/test_jobs_table_render.py
        checks that an updated cell is what is drawn.
        """
        changed, self._changed_cells = self._changed_cells, {}
        if not changed:
            return
        quiet: set[RowKey] = set()
        for job_id, columns in changed.items():
            row_key = RowKey(job_id)
            if row_key not in self._row_locations:
                continue  # removed since
            for column, value in columns.items():
                column_key = ColumnKey(column)
                if _width(value) > self.columns[column_key].content_width:
                    # Columns only grow: a narrower value asking DataTable to
                    # re-fit would re-measure every row of the column (O(rows)).
                    self.update_cell(row_key, column_key, value, update_width=True)
                else:
                    self._data[row_key][column_key] = value
                    quiet.add(row_key)
        if quiet:
            self._forget_renders(quiet)

    def _forget_renders(self, rows: set[RowKey]) -> None:
        """Drop the cached renders of `rows` and repaint just those rows."""
        indexes = {self._row_locations.get(row_key) for row_key in rows}
        _discard(self._cell_render_cache, 0, rows)  # (row_key, column_key, ...)
        _discard(self._row_render_cache, 0, rows)  # (row_key, line_no, ...)
        _discard(self._row_renderable_cache, 1, indexes)  # (update_count, row_index)
        self._line_cache.clear()  # keyed by y; rebuilt from the row cache
        # Every row is one line high, so row i is line i below the header: no
        # O(rows) `refresh_row`, and rows scrolled out of view cost nothing.
        top = round(self.scroll_y)
        width = max(self.size.width, self.virtual_size.width)
        for row_index in indexes:
            if row_index is not None and top <= row_index < top + self.size.height:
                y = row_index + (self.header_height if self.show_header else 0)
                self._refresh_region(Region(0, y, width, 1))

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Fit the columns to new rows from their plain text (every cell is a
        one-line `Text`), instead of DataTable's Rich measure of each cell, which
        cost ~1 ms a row: a 200-row backfill chunk stalled the UI for 200 ms."""
        for row_key in new_rows:
            cells = self._data.get(row_key)
            if cells is None:
                continue  # removed before the idle pass
            for column_key, value in cells.items():
                column = self.columns[column_key]
                column.content_width = max(column.content_width, _width(value))
        super()._update_dimensions(())

    def _hide(self, job_id: str) -> None:
        self._changed_cells.pop(job_id, None)
        self._orders.pop(job_id, None)
        if self._shown.pop(job_id, None) is not None:
            self.remove_row(job_id)

    def apply(
        self, changed: Iterable[JobRow], removed: Iterable[str], now: datetime | None
    ) -> None:
        """Fold a delta into the model and the view, in one batch."""
        self.now = now or self.now
        selected = self.selected_job_id  # None on the first delta: the cursor stays on top
        with self.app.batch_update():
            for job_id in removed:
                self.jobs.pop(job_id, None)
                self.waiting.discard(job_id)
                self._hide(job_id)
            out_of_order = False
            for job in changed:
                self.jobs[job.job_id] = job
                if job.waiting_permission:
                    self.waiting.add(job.job_id)
                else:
                    self.waiting.discard(job.job_id)
                if matches(job, self.filter_text):
                    order = order_key(job, self.sort_column, self.sort_reverse)
                    previous = self._orders.get(job.job_id)
                    if previous is None:  # a new row is appended: fine below the last one
                        out_of_order |= self._last_order is not None and order < self._last_order
                    else:  # a row whose place moved (it started waiting, it finished)
                        out_of_order |= previous != order
                    self._orders[job.job_id] = order
                    self._last_order = max(self._last_order or order, order)
                    self._show(job)
                else:
                    self._hide(job.job_id)
            self._flush_cells()
            if out_of_order:  # rows can only be appended: restore the table's order
                self._sort_rows(selected)
            self._measure_new_rows()
        self.describe()

    def _sort_rows(self, selected: str | None) -> None:
        """Put every row back in order, the cursor staying on the job it was on."""
        self.sort("job_id", key=lambda cell: self._orders[str(cell)])
        self._last_order = max(self._orders.values(), default=None)
        if selected is not None and selected in self._shown:
            self.move_cursor(row=self.get_row_index(selected), animate=False, scroll=False)

    def sort_by(self, column: str | None) -> None:
        """Order the rows by `column` (a key of SORT_COLUMNS; the same column again
        reverses it), by the default order for "", or leave them for None."""
        if column is None:
            return
        self.sort_reverse = column == self.sort_column and column != "" and not self.sort_reverse
        self.sort_column = column
        for key, label in COLUMNS:
            marker = (" ▼" if self.sort_reverse else " ▲") if key == column else ""
            self.columns[ColumnKey(key)].label = Text(label + marker)
        selected = self.selected_job_id
        for job_id in self._orders:
            self._orders[job_id] = order_key(self.jobs[job_id], column, self.sort_reverse)
        if self._orders:
            self._sort_rows(selected)
        self._require_update_dimensions = True
        self.refresh()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column's header sorts by it (again: the other way round)."""
        event.stop()
        key = str(event.column_key.value)
        if key in SORT_BY_KEY:
            self.sort_by(key)

    def describe(self) -> None:
        """The border's "N of M" and, with no row shown, what the table area says."""
        total, shown = len(self.jobs), self.row_count
        if self.problem:
            self.border_subtitle = "registry unreadable"
            self.empty_text = "" if shown else f"⚠ {self.problem}"
        elif not total:
            self.border_subtitle = "no jobs yet: press + to submit one"
            self.empty_text = ""
        else:
            self.border_subtitle = f"{shown} of {total}"
            filtered = not shown and self.filter_text
            self.empty_text = (
                f"no job matches {self.filter_text!r} (esc clears)" if filtered else ""
            )

    def render_line(self, y: int) -> Strip:
        """The empty text, one line below the column labels, while no row is shown."""
        first = self.header_height if self.show_header else 0
        if self.row_count or not self.empty_text or y != first + 1:
            return super().render_line(y)
        style = self.get_component_rich_style("jobs-table--empty")
        text = Text(f" {self.empty_text}", style=style, no_wrap=True, end="")
        strip = Strip(text.render(self.app.console), text.cell_len)
        return strip.crop_extend(0, self.size.width, self.rich_style)

    def watch_problem(self) -> None:
        if self.is_mounted:
            self.describe()

    def _measure_new_rows(self) -> None:
        """Fit the columns to the rows just added now, not in DataTable's idle
        pass, which runs only after the table handles a message of its own: on a
        busy CI machine the first rows were once drawn, for good, in columns as
        narrow as their labels. Plain widths, once per delta, and the idle pass
        has nothing left to do."""
        if self._new_rows:
            new_rows, self._new_rows = self._new_rows, set()
            self._require_update_dimensions = False
            self._update_dimensions(new_rows)

    def refresh_ages(self, now: datetime) -> None:
        """Redraw the age column (ages move even when no event arrives): only the
        age cells whose text changed, so a thousand rows cost next to nothing.

        The new age is compared as a plain string, and a cell (a sanitised `Text`) is
        made only for the few that changed: making one per row to compare it stalled
        the event loop ~30 ms every `age_refresh_s` at a thousand rows (bench/tui.py,
        the slowest events of publish->row)."""
        self.now = now
        with self.app.batch_update():
            for job_id, cells in list(self._shown.items()):
                text = format_age((now - self.jobs[job_id].created_at).total_seconds())
                shown = cells[AGE_INDEX]
                if isinstance(shown, Text) and shown.plain == text:
                    continue
                age = _plain(text)
                self._shown[job_id] = (*cells[:AGE_INDEX], age, *cells[AGE_INDEX + 1 :])
                self._changed_cells.setdefault(job_id, {})["age"] = age
            self._flush_cells()

    def watch_filter_text(self) -> None:
        if self.is_mounted:
            self.apply(list(self.jobs.values()), (), None)
