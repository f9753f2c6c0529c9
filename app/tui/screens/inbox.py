"""`w`: the permission inbox. Every job waiting on a person, what it asks (the
question, the tool and its command, and which signal saw it), how long it has
waited; `y`, `n` and `a` answer the selected one, `tab` moves to the next."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.widgets.data_table import CellDoesNotExist

from app.tui.commands import BACK, screen_keys
from app.tui.safe_text import as_text
from app.tui.source import JobRow
from app.tui.widgets.inbox_panel import QUESTION_CHARS, question_of, waited
from app.tui.widgets.theme import theme_style
from registry.activity import AGENT_NAMES
from registry.wording import counted

TICK_S = 1.0
COLUMNS = (
    ("job", "job"),
    ("agent", "agent"),
    ("session", "session"),
    ("question", "asks"),
    ("waited", "waited"),
    ("answer", "answer"),
)
ANSWER_KEYS = (("yes", "y"), ("no", "n"), ("always", "a"))


class InboxScreen(Screen[None]):
    """Its rows come from the main screen (which keeps applying deltas underneath),
    so it never reads the registry itself."""

    DEFAULT_CSS = """
    InboxScreen #inbox-title { height: 1; padding: 0 1; background: $panel; }
    InboxScreen #waiting {
        height: auto; max-height: 70%; border: round $warning; background: $surface;
    }
    InboxScreen #asked {
        height: auto; min-height: 5; padding: 0 1; border: round $primary-darken-2;
        border-title-color: $text-muted;
    }
    InboxScreen #nobody { padding: 1 2; color: $text-muted; display: none; }
    InboxScreen.-empty #nobody { display: block; }
    InboxScreen.-empty #waiting, InboxScreen.-empty #asked { display: none; }
    """

    BINDINGS = [BACK, *screen_keys("yes", "no", "always", "next")]

    def compose(self) -> ComposeResult:
        yield Static("", id="inbox-title")
        yield DataTable(id="waiting", cursor_type="row", zebra_stripes=True)
        yield Static("", id="asked")
        yield Static(
            "Nobody is waiting on you. A job that asks a question shows up here, in the "
            "main screen's panel, and in the terminal title.",
            id="nobody",
        )
        yield Footer()

    def __init__(self) -> None:
        super().__init__()
        self.rows: tuple[JobRow, ...] = ()
        self.answering: Mapping[str, str] = {}
        self._order: list[str] = []

    @property
    def selected_job_id(self) -> str | None:
        table = next(self.query("#waiting").results(DataTable), None)
        if table is None or not table.row_count:
            return None
        try:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        except CellDoesNotExist:
            return None

    @property
    def selected_session(self) -> str | None:
        job = self._row(self.selected_job_id)
        return job.agent_session if job is not None else None

    def on_mount(self) -> None:
        table = self.query_one("#waiting", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        main = self.app.main  # type: ignore[attr-defined]
        self.watch(main, "waiting_rows", self._rows_changed)
        self.watch(main, "answering", self._answering_changed)
        self.set_interval(TICK_S, self._tick)
        self.query_one("#asked", Static).border_title = "asks"
        self.query_one("#waiting", DataTable).border_title = "waiting on you"
        table.focus()

    def _now(self) -> datetime | None:
        clock = getattr(self.app, "clock", None)
        return clock() if clock is not None else None

    def _row(self, job_id: str | None) -> JobRow | None:
        return next((row for row in self.rows if row.job_id == job_id), None)

    # -- data from the main screen ---------------------------------------------
    def _rows_changed(self, rows: tuple[JobRow, ...]) -> None:
        self.rows = rows
        self._draw()

    def _answering_changed(self, answering: Mapping[str, str]) -> None:
        self.answering = answering
        self._draw()

    def _tick(self) -> None:
        self._draw()

    def _cells(self, job: JobRow, now: datetime | None) -> tuple[Text, ...]:
        warning = theme_style(self.app, "warning", bold=True)
        state = self.answering.get(job.job_id, "")
        return (
            as_text(job.job_id, warning),
            as_text(job.agent),
            as_text(job.agent_session),
            as_text(question_of(job)[:QUESTION_CHARS]),
            as_text(waited(job, now)),
            as_text(state, warning if state.startswith("⚠") else ""),
        )

    def _draw(self) -> None:
        """Rows by key: the cursor stays on its job while others come and go."""
        table = self.query_one("#waiting", DataTable)
        now = self._now()
        selected = self.selected_job_id
        order = [row.job_id for row in self.rows]
        if order != self._order:
            table.clear()
            for job in self.rows:
                table.add_row(*self._cells(job, now), key=job.job_id)
            self._order = order
            if selected in order:
                table.move_cursor(row=order.index(selected), animate=False)
        else:
            for job in self.rows:
                for (column, _), cell in zip(COLUMNS, self._cells(job, now), strict=True):
                    if table.get_cell(job.job_id, column) != cell:
                        table.update_cell(job.job_id, column, cell)
        self.set_class(not self.rows, "-empty")
        title = f"Waiting for you: {counted(len(self.rows), 'job')}"
        self.query_one("#inbox-title", Static).update(as_text(title, "bold"))
        self._describe(self._row(self.selected_job_id))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._describe(self._row(str(event.row_key.value)))

    def _describe(self, job: JobRow | None) -> None:
        """The selected job's question in full, and the keys that answer it."""
        box = self.query_one("#asked", Static)
        if job is None:
            box.update("")
            return
        text = Text()
        text.append_text(as_text(f"{job.job_id} · {job.agent} · session {job.agent_session}"))
        for label, value in job.asked or (("question", question_of(job)),):
            text.append(f"\n{label}: ", theme_style(self.app, "foreground-darken-2"))
            text.append_text(as_text(value))
        keys = [f"{key} {reply}" for reply, key in ANSWER_KEYS if reply in job.answers]
        text.append("\nanswer: ", theme_style(self.app, "foreground-darken-2"))
        text.append(" · ".join(keys), theme_style(self.app, "accent", bold=True))
        if "always" not in job.answers:
            agent = AGENT_NAMES.get(job.agent, job.agent)
            text.append_text(as_text(f"  (no 'always': {agent} has no such answer)"))
        state = self.answering.get(job.job_id)
        if state:
            text.append("\n")
            text.append_text(as_text(state, theme_style(self.app, "warning", bold=True)))
        box.update(text)
