"""Agent sessions: tmux state and heartbeat liveness, updated in place by key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.text import Text
from textual.widgets import DataTable

from app.tui.commands import NAVIGATION_BINDINGS
from app.tui.safe_text import as_text, visible
from app.tui.source import SessionRow
from app.tui.widgets.theme import LIVENESS_COLOURS, look_of, look_style, theme_style
from registry.vocabulary import Activity

COLUMNS = (
    ("label", "session"),
    ("job", "jobs"),  # second: what runs there matters more than the tmux details after it
    ("state", "state"),
    ("tmux", "tmux"),
    ("liveness", "liveness"),
    ("heartbeat", "beat"),
)
JOBS_SHOWN = 3  # per session; more are counted (`+2`)


class SessionsPanel(DataTable[object]):
    """One row per agent session; liveness coloured ok / WARN / STALE / DEAD."""

    DEFAULT_CSS = """
    SessionsPanel { background: $surface; }
    """
    BINDINGS = NAVIGATION_BINDINGS

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", **kwargs)  # type: ignore[arg-type]
        self._shown: dict[str, tuple[object, ...]] = {}
        self.sessions: dict[str, SessionRow] | None = None  # label -> row; None: not read yet
        self.job_states: Mapping[str, str] = {}  # job id -> its state word (JobRow.state)
        for key, label in COLUMNS:  # before mount, so an early delta has columns to fill
            self.add_column(label, key=key)

    @property
    def labels(self) -> list[str]:
        return list(self._shown)

    def _cells(self, session: SessionRow) -> tuple[object, ...]:
        colour = LIVENESS_COLOURS.get(session.liveness, "foreground")
        age = "" if session.heartbeat_age_s is None else f"{session.heartbeat_age_s:.0f}s"
        liveness = as_text(session.liveness, style=theme_style(self.app, colour, bold=True))
        if session.liveness == "idle" and not session.tmux_alive:
            liveness = Text("—")  # nothing runs there to be idle: a killed tmux session
        # Text cells: DataTable parses a str cell as markup, and a label is data
        return (
            as_text(session.label),
            self._jobs_cell(session),
            as_text(session.state),
            Text("alive" if session.tmux_alive else "gone"),
            liveness,
            Text(age),
        )

    def _jobs_cell(self, session: SessionRow) -> Text:
        """Every running job of the session, each with its state's glyph and colour,
        those waiting for a person first: `⚠ 7b0e99a1 ● 3fa2c1d0 +1`."""
        job_ids = list(session.jobs) or ([session.current_job] if session.current_job else [])
        job_ids.sort(key=lambda job_id: self.job_states.get(job_id) != Activity.WAITING)
        cell = Text(end="")
        for job_id in job_ids[:JOBS_SHOWN]:
            state = self.job_states.get(job_id, "running")
            if cell:
                cell.append(" ")
            cell.append(look_of(state).glyph, look_style(self.app, state))
            cell.append(f" {visible(job_id)}")
        if len(job_ids) > JOBS_SHOWN:
            cell.append(f" +{len(job_ids) - JOBS_SHOWN}")
        return cell

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.restyle())

    def restyle(self) -> None:
        """Draw the rows again (a new theme, or a job's state changed)."""
        if self.sessions is not None:
            self.show_sessions(list(self.sessions.values()), restyle=True)

    def show_sessions(
        self,
        sessions: Iterable[SessionRow],
        job_states: Mapping[str, str] | None = None,
        *,
        restyle: bool = False,
    ) -> None:
        """Make the panel show exactly `sessions` (the source sends the full list);
        `job_states`: the state of each job, for its glyph (default: as last given)."""
        if job_states is not None:
            self.job_states = job_states
        self.sessions = {session.label: session for session in sessions}
        wanted = {label: self._cells(session) for label, session in self.sessions.items()}
        with self.app.batch_update():
            for label in [label for label in self._shown if label not in wanted]:
                del self._shown[label]
                self.remove_row(label)
            for label, cells in wanted.items():
                previous = self._shown.get(label)
                if previous is None:
                    self.add_row(*cells, key=label)
                else:
                    for (column, _), old, new in zip(COLUMNS, previous, cells, strict=True):
                        if old != new or restyle:  # Text equality ignores Text.style
                            self.update_cell(label, column, new, update_width=True)
                self._shown[label] = cells
