"""The History screen: where the agents' time went, how long they waited for a person,
what got done and what it cost, over a range of hours picked by the user (24 h, 7 d,
30 d), from the Spark-built parquet (read with pyarrow in a worker); its table exports as
CSV, and a rebuild runs the build as a process."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker

from app.settings import find_state_dir
from app.tui.commands import BACK
from app.tui.safe_text import as_text
from app.tui.screens import history_read
from app.tui.screens.history_commands import HistoryCommands
from app.tui.screens.history_layout import chart_data, chart_sizes
from app.tui.screens.history_read import (
    Ahead,
    HistoryLoaded,
    HistoryLoadFailed,
    Prices,
    read_reporting_errors,
)
from app.tui.screens.history_text import title_text, totals_content, when
from app.tui.widgets.agents_table import AgentsTable
from app.tui.widgets.build_panel import BuildPanel, BuildSteps, default_build_steps
from app.tui.widgets.history_charts import (
    DEFAULT_RANGE_HOURS,
    ChartData,
    Drawings,
    HistoryChart,
    HistoryCharts,
    build_charts,
    draw_chart,
)
from app.tui.widgets.plotext_visual import auto_plotext_theme
from app.tui.widgets.range_picker import RangePicker
from registry.history.errors import CorruptHistory, HistoryNotBuilt
from registry.history.reader import FileVersions, HistorySnapshot, history_version
from registry.history.summary import (
    RANGES,
    RangeSummary,
    table_rows,
    write_csv,
)

SCREEN_NAME = "history"
OPEN_WAIT_S = 0.1  # open() waits this long for the first read before showing "loading"


class HistoryScreen(Screen[None]):
    """Reads the aggregates in a thread worker (never on the event loop) and draws four
    charts and a per-agent table over the picked range; states that are not charts
    (not built, damaged, empty) are one notice. `b` rebuilds in a separate process
    whose progress streams into a log; `e` writes the table as CSV."""

    DEFAULT_CSS = """
    HistoryScreen #history-title { height: 1; padding: 0 1; background: $panel; }
    HistoryScreen #history-totals { height: 1; padding: 0 1; color: $text-muted; }
    HistoryScreen #history-body { height: 1fr; }
    HistoryScreen #history-notice {
        display: none; width: 1fr; margin: 1 2; padding: 1 2;
        border: round $primary; background: $panel;
    }
    HistoryScreen #history-notice.-shown { display: block; }
    HistoryScreen #history-notice.-error { border: round $error; color: $text-error; }
    HistoryScreen #charts { height: 1fr; }
    HistoryScreen #charts.-hidden { display: none; }
    HistoryScreen #charts-top, HistoryScreen #charts-bottom { height: 1fr; }
    """

    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        Binding("b", "rebuild", "Rebuild", tooltip="Export the bus and run the history build"),
        Binding("a", "cycle_agent", "Agent", tooltip="Charts of one agent, the next, or all"),
        Binding("r", "cycle_range", "Range", tooltip="24 hours, 7 days or 30 days"),
        Binding("e", "export_csv", "Export CSV", tooltip="Write the table as a CSV file"),
        BACK,
    ]
    COMMANDS = {HistoryCommands}

    build_steps: ClassVar[BuildSteps] = staticmethod(default_build_steps)
    """How a rebuild runs; tests point it at a small script."""

    snapshot: reactive[HistorySnapshot | None] = reactive(None, init=False)
    """The last aggregates read from disk (None until the first successful read)."""
    agent: reactive[str | None] = reactive(None, init=False)
    """The agent the charts show, or None for all agents."""
    range_hours: reactive[int] = reactive(DEFAULT_RANGE_HOURS, init=False)
    """The range the charts and table cover, the newest hours of the history."""
    charts: reactive[HistoryCharts | None] = reactive(None, init=False, always_update=True)
    """What the charts draw, derived from snapshot, agent and range."""
    states: reactive[ChartData | None] = reactive(None, init=False)
    throughput: reactive[ChartData | None] = reactive(None, init=False)
    latency: reactive[ChartData | None] = reactive(None, init=False)
    cost: reactive[ChartData | None] = reactive(None, init=False)

    def __init__(self, state_dir: Path | None = None) -> None:
        super().__init__()
        self._state_dir = state_dir
        self.loading_history = False
        self.load_count = 0  # finished loads; tests wait on it
        self.damaged = False  # the last load found damaged files: rebuild with --full
        self._opening = False  # open() is reading the history before the first push
        self._shown = False  # resumed once: later resumes are coming back to it
        self._first_outcome: HistoryLoaded | HistoryLoadFailed | None = None
        self._shown_version: FileVersions = ()  # the files what is on screen came from
        self._ahead: Ahead | None = None  # what read_ahead read and drew
        self._reading_ahead = False  # a read_ahead thread is running
        self._drawn_ahead: Drawings = {}  # shared with the charts, which use them up
        self._prices: Prices = (None, None)  # the price table of the last read
        self.exported: Path | None = None  # the last CSV `e` wrote

    @classmethod
    def shared(cls, app: App[Any]) -> HistoryScreen:
        """The app's one History screen, installed so that leaving it with esc keeps a
        running rebuild (and its log) alive instead of removing the screen."""
        if app.is_screen_installed(SCREEN_NAME):
            screen = app.get_screen(SCREEN_NAME)
            if isinstance(screen, cls):
                return screen
        screen = cls()
        app.install_screen(screen, SCREEN_NAME)
        return screen

    @property
    def state_dir(self) -> Path:
        """The explicit one, else the app's settings (or its source's), else the
        state dir the CLI would find (ORCHESTRATE_HOME, nearest .orchestrate/)."""
        if self._state_dir is None:
            for holder in (self.app, getattr(self.app, "source", None)):
                settings = getattr(holder, "settings", None)
                if isinstance(getattr(settings, "state_dir", None), Path):
                    self._state_dir = settings.state_dir  # type: ignore[union-attr]
                    break
            else:
                self._state_dir = find_state_dir(None)
        return self._state_dir

    def compose(self) -> ComposeResult:
        yield Static("[b]History[/b]", id="history-title")
        yield RangePicker(RANGES, self.range_hours, id="history-range")
        yield Static("", id="history-totals")
        with Vertical(id="history-body"):
            yield Static("", id="history-notice")
            with Vertical(id="charts"):
                with Horizontal(id="charts-top"):
                    yield self._chart("states", HistoryScreen.states)
                    yield self._chart("throughput", HistoryScreen.throughput)
                with Horizontal(id="charts-bottom"):
                    yield self._chart("latency", HistoryScreen.latency)
                    yield self._chart("cost", HistoryScreen.cost)
                yield AgentsTable(id="agents-table")
        yield Footer()  # the BuildPanel comes with the first rebuild (action_rebuild)

    def _chart(self, chart_id: str, bound: Any) -> HistoryChart:
        return HistoryChart(id=chart_id, drawn_ahead=self._drawn_ahead).data_bind(data=bound)

    def open(self, app: App[Any]) -> None:
        """Show this screen. The first time, read the history first (in a thread) and
        push the screen once the read is in, so it opens with its charts drawn instead
        of flashing a loading indicator for a few frames; a read slower than
        OPEN_WAIT_S pushes it anyway, loading, and the read lands when it is done."""
        if self._opening:
            return  # h pressed again before the first read came back
        if self.is_mounted:  # shown before: resuming looks for a newer build
            app.push_screen(self)
            return
        self._opening = True
        state_dir, agent, hours = self.state_dir, self.agent, self.range_hours
        ahead, self._ahead = self._ahead, None

        def read() -> None:
            if (
                ahead is not None
                and ahead.view == (agent, hours)
                and ahead.outcome.version == history_version(state_dir)
            ):
                outcome = ahead.outcome  # read ahead, and no build since: no read at all
            else:
                outcome = read_reporting_errors(state_dir, agent, hours)
            app.call_from_thread(self._opened, app, outcome)

        app.run_worker(read, thread=True, exit_on_error=False, group="history-open")
        app.set_timer(OPEN_WAIT_S, lambda: self._opened(app, None))

    def read_ahead(self, app: App[Any]) -> None:
        """Read the history before anyone asks for it (the control room does this
        once it has settled), and draw its charts at the size the screen would give
        them now, so that `h` finds it all in memory; ``open`` uses it only if the
        files are still the ones that were read. Called again, it reads and draws
        again only if the files, the app's size or its theme changed since."""
        if self._opening or self._reading_ahead or self.is_mounted or self in app.screen_stack:
            return  # opening, opened (pushed but not mounted yet, too), or already at it
        state_dir, hours = self.state_dir, self.range_hours
        app_theme = app.theme
        drawn_for = (app.size, app_theme)
        sizes = chart_sizes(app.size)
        plotext_theme = auto_plotext_theme(app)
        held = self._ahead

        def read() -> None:
            try:
                if (
                    held is not None
                    and held.drawn_for == drawn_for
                    and held.outcome.version == history_version(state_dir)
                ):
                    return  # what is held is still what `h` would show
                outcome = read_reporting_errors(state_dir, None, hours)
                if isinstance(outcome, HistoryLoaded) and outcome.charts is not None:
                    for chart_id, data in chart_data(outcome.charts).items():
                        drawing = draw_chart(data, sizes[chart_id], plotext_theme)
                        outcome.drawings[(sizes[chart_id], data, app_theme)] = drawing
                if not (self._opening or self.is_mounted):
                    self._ahead = Ahead(drawn_for, (None, hours), outcome)
            finally:
                self._reading_ahead = False

        self._reading_ahead = True  # one at a time, however often the app asks
        app.run_worker(read, thread=True, exit_on_error=False, group="history-ahead")

    def _opened(self, app: App[Any], outcome: HistoryLoaded | HistoryLoadFailed | None) -> None:
        """The first read is in (``outcome``), or OPEN_WAIT_S passed (None)."""
        if outcome is not None and self._opening:
            self._opening = False
            self._first_outcome = outcome
        elif outcome is not None:
            self.post_message(outcome)  # the screen opened loading; this ends it
        if self not in app.screen_stack and not self.is_mounted:  # not pushed yet
            app.push_screen(self)

    def on_mount(self) -> None:
        outcome, self._first_outcome = self._first_outcome, None
        if outcome is None and self._opening:  # opened before its read came back
            self._opening = False
            self._show_loading()
        elif isinstance(outcome, HistoryLoaded):
            self._loaded(outcome)
        elif isinstance(outcome, HistoryLoadFailed):
            self._load_failed(outcome)
        else:
            self.load()

    def on_screen_resume(self) -> None:
        # coming back (the screen is shared): pick up a build run from the CLI meanwhile
        if self._shown and self.load_count and not self.building:
            self._reload_if_rebuilt(
                self.state_dir, self.agent, self.range_hours, self._shown_version
            )
        self._shown = True

    # -- loading --------------------------------------------------------------
    def load(self) -> None:
        """Read the aggregates again, in a worker; the body shows a loading indicator."""
        self._show_loading()
        self._load(self.state_dir, self.agent, self.range_hours)

    def _show_loading(self) -> None:
        self.loading_history = True
        self.query_one("#history-body").loading = True

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-load")
    def _load(self, state_dir: Path, agent: str | None, hours: int) -> None:
        self.post_message(history_read.read_history(state_dir, agent, hours))

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-load")
    def _reload_if_rebuilt(
        self, state_dir: Path, agent: str | None, hours: int, shown: FileVersions
    ) -> None:
        """Read again only if the files changed since what is shown was read (a build,
        an edit of prices.toml): the charts on screen stay up meanwhile (no loading
        indicator for a read of a few ms; coming back to an unchanged history costs
        five stats)."""
        if history_version(state_dir) != shown:
            self.post_message(history_read.read_history(state_dir, agent, hours))

    @on(HistoryLoaded)
    def _loaded(self, message: HistoryLoaded) -> None:
        self._finish_load()  # first: the charts lay out once, without the overlay
        self._shown_version = message.version
        self.damaged = False
        self._drawn_ahead.clear()
        self._drawn_ahead.update(message.drawings)
        self.snapshot = message.snapshot
        self._prices = message.prices
        if self.agent is not None and self.agent not in message.snapshot.agents:
            self.agent = None  # the agent left the history (a --full rebuild)
        self.charts = message.charts

    @on(HistoryLoadFailed)
    def _load_failed(self, message: HistoryLoadFailed) -> None:
        error = message.error
        self._shown_version = message.version
        self.snapshot = None
        self.charts = None
        self.damaged = isinstance(error, CorruptHistory)
        if isinstance(error, HistoryNotBuilt):
            text = Text.assemble(
                "No history has been built yet.\n\nPress ",
                ("b", "bold"),
                " to build it (exports the bus, then runs Spark), "
                "or run `orchestrate history build`.",
            )
            self._notice(text, error=False)
        else:
            text = Text.assemble(
                "The history files cannot be read:\n",
                as_text(str(error), one_line=False),  # an error names files: data
                "\n\nPress ",
                ("b", "bold"),
                " to rebuild them from the bus export (a full build).",
            )
            self._notice(text, error=True)
        self._finish_load()

    def _finish_load(self) -> None:
        self.loading_history = False
        self.load_count += 1
        self.query_one("#history-body").loading = False

    def _notice(self, text: Text, *, error: bool) -> None:
        notice = self.query_one("#history-notice", Static)
        notice.update(text)
        notice.set_class(True, "-shown")
        notice.set_class(error, "-error")
        self.query_one("#charts").set_class(True, "-hidden")

    def watch_charts(self, charts: HistoryCharts | None) -> None:
        self.states = charts.states if charts else None
        self.throughput = charts.throughput if charts else None
        self.latency = charts.latency if charts else None
        self.cost = charts.cost if charts else None
        self.query_one("#history-title", Static).update(
            title_text(self.snapshot, self.agent, charts)
        )
        self.query_one("#history-totals", Static).update(totals_content(self.snapshot, charts))
        if charts is not None:
            self.query_one(AgentsTable).show(table_rows(charts.summary))
            self.query_one("#history-notice").set_class(False, "-shown")
            self.query_one("#charts").set_class(False, "-hidden")
        elif self.snapshot is not None:
            built = when(self.snapshot.built_at)
            whose = as_text(f" for agent {self.agent}" if self.agent else "")
            text = Text.assemble(
                "The history is empty",
                whose,
                f": the last build (at {built}) found no job activity in the bus export."
                "\n\nRun some jobs, then press ",
                ("b", "bold"),
                " to rebuild.",
            )
            self._notice(text, error=False)

    def watch_agent(self, agent: str | None) -> None:
        self._recompute()

    def watch_range_hours(self, hours: int) -> None:
        self.query_one(RangePicker).hours = hours
        self._recompute()

    def _recompute(self) -> None:
        """The charts of another agent or range, from what is loaded (no I/O)."""
        if self.snapshot is not None:
            table, error = self._prices
            self.charts = build_charts(self.snapshot, self.agent, self.range_hours, table, error)

    @on(RangePicker.Picked)
    def _range_picked(self, event: RangePicker.Picked) -> None:
        self.range_hours = event.hours

    def action_cycle_range(self) -> None:
        """24 hours → 7 days → 30 days → 24 hours."""
        choices = list(RANGES.values())
        self.range_hours = choices[(choices.index(self.range_hours) + 1) % len(choices)]

    def action_export_csv(self) -> None:
        """Write the table on screen (the range, all agents or one) as CSV, in a worker;
        a notice says where."""
        if self.charts is None:
            self.notify("Nothing to export: no history shown", severity="warning")
            return
        self._export(self.state_dir, self.charts.summary, self.agent, self.range_hours)

    @work(thread=True, exit_on_error=False, group="history-export")
    def _export(
        self, state_dir: Path, summary: RangeSummary, agent: str | None, hours: int
    ) -> None:
        try:
            path = write_csv(state_dir, summary, agent, hours)
        except OSError as error:
            message = f"Could not write the CSV: {error.strerror or error}"
            self.app.call_from_thread(self.notify, message, severity="error", markup=False)
            return
        self.exported = path
        self.app.call_from_thread(self.notify, f"Wrote {path}", title="CSV", markup=False)

    def action_cycle_agent(self) -> None:
        """All agents → the first → … → the last → all agents."""
        if self.snapshot is None:
            if self.loading_history:
                self.notify("The history is still being read", severity="warning")
            elif self.damaged:
                self.notify("The history cannot be read: press b to rebuild it", severity="warning")
            else:
                self.notify("No history built yet: press b to build it", severity="warning")
            return
        if not self.snapshot.agents:
            self.notify("The history holds no agent yet", severity="warning")
            return
        choices: list[str | None] = [None, *self.snapshot.agents]
        self.agent = choices[(choices.index(self.agent) + 1) % len(choices)]

    # -- rebuilding -------------------------------------------------------------
    @property
    def building(self) -> bool:
        """A rebuild is running (it goes on while the screen is left with esc)."""
        panel = self._build_panel()
        return panel is not None and panel.building

    @property
    def build_error(self) -> str | None:
        """Why the last rebuild failed, if it did."""
        panel = self._build_panel()
        return panel.error if panel is not None else None

    def _build_panel(self) -> BuildPanel | None:
        panels = self.query(BuildPanel)
        return panels.first() if panels else None

    async def action_rebuild(self) -> None:
        """Start a rebuild, mounting the panel that shows it the first time: composed
        with the screen, its log made opening the screen 15-20 % slower, for a panel
        most openings never show."""
        panel = self._build_panel()
        if panel is None:
            panel = BuildPanel(id="build")
            await self.mount(panel, after="#history-body")
        if panel.building:
            self.notify("A history build is already running", severity="warning")
            return
        panel.start(list(type(self).build_steps(self.state_dir, self.damaged)))

    @on(BuildPanel.Finished)
    def _build_finished(self, message: BuildPanel.Finished) -> None:
        if message.error is None:
            self.notify("History rebuilt")
            self.load()
        else:
            self.notify(message.error, title="History build failed", severity="error")

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        """A load worker that raised something unexpected: say so, keep going (the
        app's handler shows the error itself)."""
        if event.worker.error is not None and event.worker.group == "history-load":
            self.post_message(HistoryLoadFailed(CorruptHistory(str(event.worker.error))))
