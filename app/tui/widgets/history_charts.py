"""The History screen's charts: what each one draws (computed off the event loop) and
the PlotextPlot that draws it through its own `plt`, never the global plotext module."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from textual.app import RenderResult
from textual.geometry import Size
from textual.reactive import reactive
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

from app.tui.safe_text import visible
from app.tui.widgets.plotext_visual import PlotVisual, render_figure, render_plot
from registry.history.reader import HistorySnapshot, HourlyAggregate

HOUR = timedelta(hours=1)
MARKER_COLOR = "red"  # plotext colour names, not CSS: the restart lines stand out on any theme
MAX_POINTS = 120  # per series; longer histories are drawn in buckets of hours
BUCKET_HOURS = (1, 2, 3, 4, 6, 8, 12, 24, 48, 168)
POINT_MARKER = "●"  # a series of one point: plotext's line marker would draw a quarter block
MAX_MARKER_LINES = 12  # more restarts than this are drawn as marks, not lines
Y_AXIS_WIDTH = 8  # columns plotext takes for the y labels and axis, about
EMPTY_CHART = "no runs in this range"
NICE_STEPS = (1, 2, 3, 4, 6, 8, 12, 24, 48, 72, 168, 336, 720, 2160, 8760)


@dataclass(frozen=True)
class Series:
    """One line of a chart: y values at x (hours since the chart's first hour)."""

    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]


@dataclass(frozen=True)
class ChartData:
    """Everything one chart draws; hours are counted from ``first_hour``."""

    title: str
    y_label: str
    first_hour: datetime
    hours: int  # number of hours on the x axis (at least 1)
    series: tuple[Series, ...]
    markers: tuple[float, ...]  # x of the hours holding a control-room restart
    y_max: float | None = None  # a fixed top (error rate: 100 %); None: fit the data


@dataclass(frozen=True)
class HistoryTotals:
    """The figures of the summary line, over the whole history (or one agent)."""

    completed: int
    errored: int
    events: int
    registered: int
    restarts: int
    first_hour: datetime | None
    last_hour: datetime | None

    @property
    def error_rate(self) -> float | None:
        terminal = self.completed + self.errored
        return self.errored / terminal if terminal else None


@dataclass(frozen=True)
class HistoryCharts:
    """The three charts and the totals, for all agents or one."""

    throughput: ChartData
    duration: ChartData
    error_rate: ChartData
    totals: HistoryTotals


def _hour_index(first: datetime, hour: datetime) -> float:
    return (hour - first) / HOUR


def _duration_unit(values: list[float]) -> tuple[float, str]:
    """Seconds, minutes or hours: whichever keeps the axis numbers readable."""
    top = max(values, default=0.0)
    if top >= 3 * 3600_000:
        return 3600_000.0, "h"
    if top >= 180_000:
        return 60_000.0, "min"
    return 1000.0, "s"


def build_charts(snapshot: HistorySnapshot, agent: str | None = None) -> HistoryCharts | None:
    """The charts of ``snapshot`` (one ``agent``'s, or all agents' when None); None
    when there is nothing to draw. Pure and cheap: the screen's load worker calls it.

    Percentiles cannot be merged exactly across agents, so with all agents the
    duration chart shows the runs-weighted mean of the agents' p50 and the largest
    agent p95 (an upper bound of the combined p95); one agent's are exact."""
    rows = [row for row in snapshot.rows if agent is None or row.agent == agent]
    restart_hours = [marker.hour for marker in snapshot.restarts]
    hours_seen = [row.hour for row in rows] + restart_hours
    if not rows:
        return None
    first, last = min(hours_seen), max(hours_seen)
    span = int(_hour_index(first, last)) + 1
    markers = tuple(_hour_index(first, hour) for hour in sorted(set(restart_hours)))
    # plotext's cost grows with points: past MAX_POINTS hours, plot buckets of hours
    bucket = next((n for n in BUCKET_HOURS if span / n <= MAX_POINTS), BUCKET_HOURS[-1])
    by_bucket: dict[int, list[HourlyAggregate]] = defaultdict(list)
    for row in rows:
        by_bucket[int(_hour_index(first, row.hour)) // bucket].append(row)

    completed: dict[str, list[float]] = {}
    for name in sorted({row.agent for row in rows}):
        completed[name] = [0.0] * -(-span // bucket)
    for index, group in by_bucket.items():
        for row in group:
            completed[row.agent][index] += row.jobs_completed
    starts = tuple(float(index * bucket) for index in range(-(-span // bucket)))
    throughput = tuple(Series(name, starts, tuple(ys)) for name, ys in completed.items())

    p50_x: list[float] = []
    p50_y: list[float] = []
    p95_x: list[float] = []
    p95_y: list[float] = []
    rate_x: list[float] = []
    rate_y: list[float] = []
    for index in sorted(by_bucket):
        group = by_bucket[index]
        x = float(index * bucket)
        timed = [r for r in group if r.runs and r.run_ms_p50 is not None]
        if timed:
            runs = sum(r.runs for r in timed)
            p50_x.append(x)
            p50_y.append(sum(r.runs * (r.run_ms_p50 or 0.0) for r in timed) / runs)
        worst = [r.run_ms_p95 for r in group if r.runs and r.run_ms_p95 is not None]
        if worst:
            p95_x.append(x)
            p95_y.append(max(worst))
        done = sum(r.jobs_completed for r in group)
        errors = sum(r.jobs_errored for r in group)
        if done + errors:
            rate_x.append(x)
            rate_y.append(100.0 * errors / (done + errors))
    scale, unit = _duration_unit(p95_y + p50_y)
    whose = agent or "all agents"
    per = "hour" if bucket == 1 else f"{bucket} h"
    p50_label = "p50" if agent else "p50 (mean)"
    p95_label = "p95" if agent else "p95 (max)"
    duration = (
        Series(p50_label, tuple(p50_x), tuple(y / scale for y in p50_y)),
        Series(p95_label, tuple(p95_x), tuple(y / scale for y in p95_y)),
    )
    totals = HistoryTotals(
        completed=sum(row.jobs_completed for row in rows),
        errored=sum(row.jobs_errored for row in rows),
        events=sum(row.events for row in rows),
        registered=sum(row.jobs_registered for row in rows),
        restarts=sum(marker.restarts for marker in snapshot.restarts),
        first_hour=first,
        last_hour=last,
    )
    return HistoryCharts(
        throughput=ChartData(
            f"Jobs completed per {per} ({whose})", "jobs", first, span, throughput, markers
        ),
        duration=ChartData(
            f"Run duration per {per}, {unit} ({whose})", unit, first, span, duration, markers
        ),
        error_rate=ChartData(
            f"Error rate per {per}, % ({whose})",
            "%",
            first,
            span,
            (Series("errors", tuple(rate_x), tuple(rate_y)),),
            markers,
            y_max=100.0,
        ),
        totals=totals,
    )


def hour_ticks(first: datetime, hours: int, width: int) -> tuple[list[float], list[str]]:
    """X labels on round hours, in UTC, as many as fit with room to spare.

    plotext places each label in the free space around its tick, in an order that
    varies per process (it de-duplicates ticks through a set of strings): labels at
    least two label-widths apart never compete for space, so the chart is the same
    on every run (snapshots depend on it)."""
    columns = max(10, width - Y_AXIS_WIDTH)
    for step in NICE_STEPS:
        form = "%H:00" if hours <= 24 else "%m-%d" if step % 24 == 0 else "%m-%d %H:00"
        label_width = len(first.strftime(form))
        if step >= hours or columns * step / max(1, hours) >= 2 * label_width + 2:
            break
    ticks = [float(x) for x in range(0, hours, step)]
    return ticks, [(first + x * HOUR).astimezone(UTC).strftime(form) for x in ticks]


def plot_chart(plt: Plot, data: ChartData) -> None:
    """Set up a fresh (or cleared) plotext figure to draw ``data``; x ticks apart,
    since they depend on the width drawn at (``set_hour_ticks``)."""
    # plotext draws text into ANSI that is parsed back (Text.from_ansi): agent names
    # in titles and labels must not carry sequences of their own
    plt.title(visible(data.title))
    if data.hours == 1:  # one hour (a first demo run): its points mid-chart, not on the edge
        plt.xlim(-1, 1)
    else:
        plt.xlim(0, data.hours - 1)
    values = [y for series in data.series for y in series.ys]
    if data.y_max is not None:
        plt.ylim(0, data.y_max)
    elif not any(y > 0 for y in values):  # plotext would centre a flat 0 line: -1 … 0
        plt.ylim(0, 1)
    if not values:  # an agent with no runs in these hours: say so, not an empty box
        middle = 0.0 if data.hours == 1 else (data.hours - 1) / 2
        plt.text(EMPTY_CHART, middle, (data.y_max or 1) / 2, alignment="center")
    for series in data.series:
        if len(series.xs) == 1:  # a line needs two points; one is a dot a person can see
            label = visible(series.label)
            plt.scatter(list(series.xs), list(series.ys), marker=POINT_MARKER, label=label)
        elif series.xs:
            plt.plot(list(series.xs), list(series.ys), label=visible(series.label))
    if len(data.markers) <= MAX_MARKER_LINES:
        for x in data.markers:
            plt.vertical_line(x, color=MARKER_COLOR)
    elif data.markers:  # dozens of lines would hide the data: marks along the top
        top = data.y_max or max((y for s in data.series for y in s.ys), default=1.0)
        xs = list(data.markers)
        plt.scatter(xs, [top] * len(xs), marker="▼", color=MARKER_COLOR, label="restart")


def set_hour_ticks(plt: Plot, data: ChartData, width: int) -> None:
    """The x labels that fit ``width`` columns."""
    ticks, labels = hour_ticks(data.first_hour, data.hours, width)
    plt.xticks(ticks, labels)


DrawKey = tuple[Size, ChartData, str]  # a chart's size, what it draws, the app's theme
Drawings = dict[DrawKey, PlotVisual]


def draw_chart(data: ChartData, size: Size, plotext_theme: str) -> PlotVisual:
    """What a HistoryChart of ``size`` shows for ``data``, drawn on a figure of its
    own: a thread can draw it before the chart exists (the History screen's
    read-ahead), and the chart then shows it instead of drawing (``drawn_ahead``)."""
    plot = Plot()
    plot_chart(plot, data)
    set_hour_ticks(plot, data, size.width)
    return render_figure(plot, size.width, size.height, plotext_theme)


class HistoryChart(PlotextPlot):
    """One chart of the History screen; redraws when its ``data`` changes."""

    DEFAULT_CSS = """
    HistoryChart { height: 1fr; width: 1fr; }
    """

    data: reactive[ChartData | None] = reactive(None, init=False)
    """What to draw; set by the screen (bound with data_bind), None draws nothing."""

    def __init__(
        self,
        *,
        drawn_ahead: Drawings | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """``drawn_ahead``: drawings made before this chart could draw (``draw_chart``),
        shared with the screen that fills it; one that fits a render is used (once)
        instead of drawing."""
        super().__init__(id=id, classes=classes)
        self.draws = 0  # renders so far: tests and the load bench wait on it
        self._drawn_ahead = drawn_ahead if drawn_ahead is not None else {}
        self._plotted = False  # the figure holds a chart's settings
        self._ticks_for = (-1, -1)
        self._drawn: tuple[DrawKey, PlotVisual] | None = None

    def watch_data(self, data: ChartData | None) -> None:
        if self._plotted:  # a fresh figure needs no clearing (it deep-copies defaults)
            self.plt.clear_figure()
        self._plotted = data is not None
        self._ticks_for = (-1, -1)
        self._drawn = None
        if data is not None:
            plot_chart(self.plt, data)
        self.refresh()

    def render(self) -> RenderResult:
        """Set the x ticks for the current width (how many labels fit), then draw;
        plotext is slow, so a re-render at the same size and data reuses the drawing,
        and so does a first render that finds its drawing made ahead."""
        data = self.data
        if data is None:  # nothing to draw yet: skip plotext's empty frame
            return ""
        key = (self.size, data, self.app.theme)
        if self._drawn is not None and self._drawn[0] == key:
            return self._drawn[1]
        drawing = self._drawn_ahead.pop(key, None)
        if drawing is None:
            if self._ticks_for != (self.size.width, data.hours):
                set_hour_ticks(self.plt, data, self.size.width)
                self._ticks_for = (self.size.width, data.hours)
            drawing = render_plot(self)
        self._drawn = (key, drawing)
        self.draws += 1
        return drawing
