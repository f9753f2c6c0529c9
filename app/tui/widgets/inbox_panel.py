"""The main screen's "waiting for you" panel: every job waiting on a person, what it
asks and how long it has waited; shown only while some job waits."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from app.tui.safe_text import as_text
from app.tui.source import JobRow
from app.tui.widgets.jobs_table import format_age
from app.tui.widgets.theme import theme_style
from registry.wording import counted

TICK_S = 1.0  # "waited" counts up by the second
PANEL_ROWS = 5  # jobs listed; more are counted on the last line (w lists them all)
QUESTION_CHARS = 300  # the column cuts it with an ellipsis; this bounds the work


def keys_hint(rows: tuple[JobRow, ...]) -> str:
    """The keys that answer these jobs (`a` only if one of their agents has always)."""
    always = " · a always" if any("always" in job.answers for job in rows) else ""
    return f"y yes · n no{always} · tab next · w inbox"


def waited(job: JobRow, now: datetime | None) -> str:
    """How long ``job`` has waited, as the jobs table says ages ("45s", "3m")."""
    if now is None:
        return ""
    since = job.state_since or job.updated_at
    return format_age((now - since).total_seconds())


def question_of(job: JobRow) -> str:
    """What the job asks, in a few words (its last event's detail is no question: an
    activity event's reads "waiting")."""
    return job.question or "a permission answer"


class InboxPanel(Widget):
    """Rows and answers flow in from the main screen; the clock ticks `now`."""

    DEFAULT_CSS = """
    InboxPanel {
        height: auto; display: none; padding: 0 1;
        border: round $warning; border-title-color: $warning; border-title-style: bold;
        border-subtitle-color: $text-muted; background: $surface;
    }
    InboxPanel.-waiting { display: block; }
    """

    rows: reactive[tuple[JobRow, ...]] = reactive((), layout=True)
    """The jobs waiting on a person, in the jobs table's order."""
    answering: reactive[Mapping[str, str]] = reactive(dict)
    """Job id -> how its answer is going ("answering yes…", "not confirmed: …")."""
    now: reactive[datetime | None] = reactive(None)
    """The app clock at the last tick: "waited" counts from it."""

    def on_mount(self) -> None:
        self._tick()
        self.set_interval(TICK_S, self._tick)

    def _tick(self) -> None:
        clock = getattr(self.app, "clock", None)
        self.now = clock() if clock is not None else None

    def watch_rows(self, rows: tuple[JobRow, ...]) -> None:
        self.set_class(bool(rows), "-waiting")
        self.border_title = as_text(f"⚠ waiting for you: {len(rows)}")
        self.border_subtitle = as_text(keys_hint(rows))

    def render(self) -> Table:
        table = Table.grid(padding=(0, 2), expand=True)
        table.add_column(no_wrap=True)  # job
        table.add_column(no_wrap=True)  # agent
        table.add_column(no_wrap=True, max_width=24, overflow="ellipsis")  # session
        table.add_column(ratio=1, no_wrap=True, overflow="ellipsis")  # question
        table.add_column(no_wrap=True, justify="right")  # waited
        table.add_column(no_wrap=True)  # answer
        warning = theme_style(self.app, "warning", bold=True)
        muted = theme_style(self.app, "foreground-darken-2")
        for job in self.rows[:PANEL_ROWS]:
            state = self.answering.get(job.job_id, "")
            table.add_row(
                as_text(job.job_id, warning),
                as_text(job.agent),
                as_text(job.agent_session, muted),
                as_text(question_of(job)[:QUESTION_CHARS]),
                as_text(waited(job, self.now), muted),
                as_text(state, warning if state.startswith("⚠") else muted),
            )
        hidden = len(self.rows) - PANEL_ROWS
        if hidden > 0:
            more = Text(f"… and {counted(hidden, 'more job')}: w lists them all", style=muted)
            table.add_row(more)
        return table
