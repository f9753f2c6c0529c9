"""`w`: the permission inbox. Every job waiting on a person, what it asks (the
question, the tool and its command, and which signal saw it), how long it has
waited, and the agent's own screen; `y`, `n` and `a` answer the selected one, `tab`
moves to the next, enter steps into its pane, `d` opens its page, `l` hides the screen."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Footer, Static
from textual.widgets.data_table import CellDoesNotExist

from app.tui.commands import BACK, ROW_BINDINGS, screen_keys
from app.tui.safe_text import as_text
from app.tui.screens.job_commands import JobCommands
from app.tui.source import JobRow
from app.tui.widgets.inbox_panel import QUESTION_CHARS, question_of, waited
from app.tui.widgets.pane_tail import PREVIEW_BYTES, PaneTail
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


class WaitingTable(DataTable[Text]):
    """The waiting jobs: enter steps into the selected agent's pane, j/k/g/G move."""

    BINDINGS = ROW_BINDINGS


class InboxScreen(JobCommands):
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
    InboxScreen #agent-screen { height: 1fr; min-height: 4; }
    InboxScreen.-no-screen #agent-screen { display: none; }
    InboxScreen #nobody { padding: 1 2; color: $text-muted; display: none; }
    InboxScreen.-empty #nobody { display: block; }
    InboxScreen.-empty #waiting, InboxScreen.-empty #asked, InboxScreen.-empty #agent-screen {
        display: none;
    }
    """

    BINDINGS = [
        BACK,
        *screen_keys("yes", "no", "always", "next"),
        # said under the question instead: the footer keeps y/n/a, ? and q at 80 columns
        *screen_keys("talk", "detail", "log", show=False),
    ]

    class ScreenWanted(Message):
        """The agent's screen is shown and another job is selected: show its pane."""

        def __init__(self, job_id: str) -> None:
            super().__init__()
            self.job_id = job_id

    def compose(self) -> ComposeResult:
        yield Static("", id="inbox-title")
        yield WaitingTable(id="waiting", cursor_type="row", zebra_stripes=True)
        yield Static("", id="asked")
        yield PaneTail(id="agent-screen", replay_bytes=PREVIEW_BYTES)
        yield Static(
            "Nobody is waiting on you. A job that asks a question shows up here, in the "
            "main screen's panel, and in the terminal title.",
            id="nobody",
        )
        yield Footer(compact=True)

    def __init__(self) -> None:
        super().__init__()
        self.rows: tuple[JobRow, ...] = ()
        self.answering: Mapping[str, str] = {}
        self._order: list[str] = []
        self.screen_job: str | None = None
        """The job whose pane the agent-screen view shows (or was asked for)."""

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

    def offers_job_commands(self) -> bool:
        """An empty inbox: esc, ? and q are all its footer offers."""
        return bool(self.rows)

    def offers(self, action: str) -> bool:
        """The inbox is for answering: its footer keeps to that (80 columns), and
        without a waiting job there is nothing to answer or move to."""
        if action in ("inbox", "new_job", "filter"):
            return False
        return bool(self.rows) or action not in ("answer", "next_waiting", "make_rule")

    def action_toggle_log(self) -> None:
        """`l`: hide the agent's screen, or show it again."""
        self.toggle_screen()

    def on_mount(self) -> None:
        table = self.query_one("#waiting", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        # the jobs reactive the main screen is bound to: the app's own
        self.watch(self.app, "waiting_rows", self._rows_changed)
        self.watch(self.app.main, "answering", self._answering_changed)  # type: ignore[attr-defined]
        self.set_interval(TICK_S, self._tick)
        self.query_one("#asked", Static).border_title = "asks"
        self.query_one("#waiting", DataTable).border_title = "waiting on you"
        table.focus()

    def on_screen_resume(self) -> None:
        self.app.main.withdraw_question_notices()  # type: ignore[attr-defined]

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
        if self.has_class("-empty") != (not self.rows):
            self.set_class(not self.rows, "-empty")
            self.refresh_bindings()  # its footer: the answer keys only while someone waits
        title = f"Waiting for you: {counted(len(self.rows), 'job')}"
        self.query_one("#inbox-title", Static).update(as_text(title, "bold"))
        self._describe(self._row(self.selected_job_id))
        self._want_screen(self.selected_job_id)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        job_id = str(event.row_key.value)
        self._describe(self._row(job_id))
        self._want_screen(job_id)

    # -- the agent's own screen ------------------------------------------------
    @property
    def screen_shown(self) -> bool:
        return not self.has_class("-no-screen")

    def toggle_screen(self) -> None:
        """`l`: hide the agent's screen, or show it again."""
        self.toggle_class("-no-screen")
        self.screen_job = None
        if self.screen_shown:
            self._want_screen(self.selected_job_id)

    def _want_screen(self, job_id: str | None) -> None:
        """Ask the app for ``job_id``'s pane log (once per job) while the view is shown."""
        if job_id is None or not self.screen_shown or job_id == self.screen_job:
            return
        self.screen_job = job_id
        self.post_message(self.ScreenWanted(job_id))

    def show_screen(self, job_id: str, path: Path | None) -> None:
        """The app found ``job_id``'s pane log: follow it, if that job is still wanted."""
        if job_id != self.screen_job:
            return
        view = self.query_one("#agent-screen", PaneTail)
        view.follow(path)
        view.border_title = as_text(f"its screen · {job_id} · l hides")

    def _policy_line(self, job: JobRow) -> str | None:
        """Which rule would apply to its question (app/tui/policy_actions.py); None
        when the control room reads no policy."""
        line = getattr(self.app, "policy_line", None)
        return line(job) if line is not None else None

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
        policy = self._policy_line(job)
        if policy is not None:
            text.append("\npolicy: ", theme_style(self.app, "foreground-darken-2"))
            text.append_text(as_text(policy))
            text.append_text(as_text("  (A makes a rule from it)"))
        text.append("\nor: ", theme_style(self.app, "foreground-darken-2"))
        text.append_text(as_text("⏎ step into it · i talk · d its page · l its screen"))
        state = self.answering.get(job.job_id)
        if state:
            text.append("\n")
            text.append_text(as_text(state, theme_style(self.app, "warning", bold=True)))
        box.update(text)
