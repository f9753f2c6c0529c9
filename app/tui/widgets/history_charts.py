"""The History screen's charts: what each one draws (computed off the event loop) and
the PlotextPlot that draws it through its own `plt`, never the global plotext module."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from textual.app import RenderResult
from textual.geometry import Size
from textual.reactive import reactive
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

from app.tui.safe_text import visible
from app.tui.widgets.plotext_visual import PlotVisual, render_figure, render_plot
from registry.answered import AnswerCounts
from registry.history.prices import PriceTable, price_usage
from registry.history.reader import HistorySnapshot, HourlyAggregate, UsageRow
from registry.history.schema import exact_percentile
from registry.history.summary import RangeSummary, summarize
from registry.vocabulary import Activity

HOUR = timedelta(hours=1)
MARKER_COLOR = "red"  # plotext colour names, not CSS: the restart lines stand out on any theme
MAX_POINTS = 120  # per series; longer histories are drawn in buckets of hours
BUCKET_HOURS = (1, 2, 3, 4, 6, 8, 12, 24, 48, 168)
POINT_MARKER = "●"  # a series of one point: plotext's line marker would draw a quarter block
MAX_MARKER_LINES = 12  # more restarts than this are drawn as marks, not lines
Y_AXIS_WIDTH = 8  # columns plotext takes for the y labels and axis, about
EMPTY_CHART = "no runs in this range"
DEFAULT_RANGE_HOURS = 24
RANGE_BUCKET_HOURS = {24: 1, 7 * 24: 6, 30 * 24: 24}  # one point per bucket of hours
NICE_STEPS = (1, 2, 3, 4, 6, 8, 12, 24, 48, 72, 168, 336, 720, 2160, 8760)


@dataclass(frozen=True)
class Series:
    """One line of a chart: y values at x (hours since the chart's first hour)."""

    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]


@dataclass(frozen=True)
class ChartData:
    """Everything one chart draws; hours are counted from ``first_hour``.

    ``kind`` "lines": series over the hours; "stacked": one horizontal bar per
    ``categories`` entry (an agent), each series a stacked part of it."""

    title: str
    y_label: str
    first_hour: datetime
    hours: int  # number of hours on the x axis (at least 1)
    series: tuple[Series, ...]
    markers: tuple[float, ...]  # x of the hours holding a control-room restart
    y_max: float | None = None  # a fixed top (error rate: 100 %); None: fit the data
    kind: str = "lines"
    categories: tuple[str, ...] = ()
    empty_text: str = EMPTY_CHART


@dataclass(frozen=True)
class HistoryCharts:
    """The four charts, the range's per-agent summary and what the totals line says,
    for all agents or one, over one range of hours."""

    states: ChartData
    throughput: ChartData
    latency: ChartData
    cost: ChartData
    summary: RangeSummary
    restarts: int
    prices_path: Path | None  # where the prices came from
    prices_error: str | None  # why prices.toml could not be used, if it could not
    answers: AnswerCounts | None = None  # who answered the agents (registry/answered.py)


def _hour_index(first: datetime, hour: datetime) -> float:
    return (hour - first) / HOUR


DURATION_UNITS = (("d", 86_400_000.0), ("h", 3_600_000.0), ("min", 60_000.0), ("s", 1000.0))
"""Units a chart's durations are drawn in, largest first, each with its milliseconds."""
UNIT_WORDS = {"d": "days", "h": "hours", "min": "minutes", "s": "seconds"}


def duration_unit(top_ms: float, *, largest: str = "d") -> tuple[float, str]:
    """The largest unit (no larger than ``largest``) that ``top_ms`` holds three of, as
    (its milliseconds, its name): the axis then reads 0 … 3 or more of it, never
    0.0026 h nor 200,000 s. Seconds when nothing larger fits.

    >>> duration_unit(3_600_000), duration_unit(24 * 3_600_000), duration_unit(30 * 86_400_000)
    ((60000.0, 'min'), (3600000.0, 'h'), (86400000.0, 'd'))
    >>> duration_unit(9 * 86_400_000, largest="h"), duration_unit(2_000)
    ((3600000.0, 'h'), (1000.0, 's'))
    """
    names = [name for name, _ in DURATION_UNITS]
    for name, ms in DURATION_UNITS[names.index(largest) :]:
        if top_ms >= 3 * ms:
            return ms, name
    return DURATION_UNITS[-1][1], DURATION_UNITS[-1][0]


STATE_PARTS: tuple[tuple[str, tuple[Activity, ...]], ...] = (
    ("working", (Activity.WORKING,)),
    ("waiting", (Activity.WAITING,)),
    ("idle", (Activity.IDLE,)),
    (
        "other",
        (
            Activity.STARTING,
            Activity.STALLED,
            Activity.EXITED,
            Activity.INTERRUPTED,
            Activity.BLOCKED,
        ),
    ),
)
"""The stacked bars' parts (their labels) and the activities each one sums."""


def build_charts(
    snapshot: HistorySnapshot,
    agent: str | None = None,
    range_hours: int = DEFAULT_RANGE_HOURS,
    prices: PriceTable | None = None,
    prices_error: str | None = None,
) -> HistoryCharts | None:
    """The charts of ``snapshot`` over its newest ``range_hours`` (one ``agent``'s, or
    all agents' when None); None when the history holds nothing to draw. Pure and
    cheap: the screen's load worker calls it.

    Percentiles are exact over each bucket of hours (the hours' sorted values merged),
    for one agent or all."""
    table = prices if prices is not None else PriceTable(())
    summary = summarize(snapshot, range_hours, table, agent)
    if summary.first_hour is None or summary.last_hour is None:
        return None
    first, last = summary.first_hour, summary.last_hour
    rows = [r for r in snapshot.rows if (agent is None or r.agent == agent) and r.hour >= first]
    usage = [u for u in snapshot.usage if (agent is None or u.agent == agent) and u.hour >= first]
    if not rows and not usage:
        return None
    span = int(_hour_index(first, last)) + 1
    restart_hours = [m.hour for m in snapshot.restarts if first <= m.hour <= last]
    markers = tuple(_hour_index(first, hour) for hour in sorted(set(restart_hours)))
    bucket = RANGE_BUCKET_HOURS.get(range_hours) or next(
        (n for n in BUCKET_HOURS if span / n <= MAX_POINTS), BUCKET_HOURS[-1]
    )
    buckets = -(-span // bucket)
    starts = tuple(float(index * bucket) for index in range(buckets))
    by_bucket: dict[int, list[HourlyAggregate]] = defaultdict(list)
    for row in rows:
        by_bucket[int(_hour_index(first, row.hour)) // bucket].append(row)

    completed: dict[str, list[float]] = {
        name: [0.0] * buckets for name in sorted({r.agent for r in rows})
    }
    for index, group in by_bucket.items():
        for row in group:
            completed[row.agent][index] += row.jobs_completed
    throughput = tuple(Series(name, starts, tuple(ys)) for name, ys in completed.items())

    p50: list[tuple[float, float]] = []
    p95: list[tuple[float, float]] = []
    for index in sorted(by_bucket):
        values = [ms for row in by_bucket[index] for ms in row.response_values]
        if values:
            p50.append((index * bucket, exact_percentile(values, 0.5) or 0.0))
            p95.append((index * bucket, exact_percentile(values, 0.95) or 0.0))
    scale, unit = duration_unit(max((y for _, y in p95 + p50), default=0.0), largest="h")
    latency = tuple(
        Series(label, tuple(x for x, _ in points), tuple(y / scale for _, y in points))
        for label, points in (("p50", p50), ("p95", p95))
    )

    dollars = [0.0] * buckets
    usage_by_bucket: dict[int, list[UsageRow]] = defaultdict(list)
    for usage_row in usage:
        usage_by_bucket[int(_hour_index(first, usage_row.hour)) // bucket].append(usage_row)
    for index, spent in usage_by_bucket.items():
        dollars[index] = price_usage(spent, table).usd
    cost_series = (Series("≈ $", starts, tuple(dollars)),) if usage else ()

    agents = summary.agents
    # The unit follows the range (a one-hour history in minutes, a month in days), so
    # one agent's share reads against the whole it is part of.
    state_scale, state_unit = duration_unit(span * 3_600_000)
    states = tuple(
        Series(label, tuple(range(len(agents))),
               tuple(sum(a.activity_ms[n] for n in names) / state_scale for a in agents))
        for label, names in STATE_PARTS
    )  # fmt: skip
    whose = agent or "all agents"
    per = "hour" if bucket == 1 else f"{bucket} h"
    return HistoryCharts(
        states=ChartData(
            f"Time in each activity, {UNIT_WORDS[state_unit]} ({whose})", state_unit, first,
            span, states, (),
            kind="stacked", categories=tuple(a.agent for a in agents),
            empty_text="no agent ran in this range",
        ),
        throughput=ChartData(
            f"Jobs completed per {per} ({whose})", "jobs", first, span, throughput, markers
        ),
        latency=ChartData(
            f"Waiting for a person, {unit}: p50/p95 per {per} ({whose})", unit, first, span,
            latency if p50 else (), markers, empty_text="no agent asked anything in this range",
        ),
        cost=ChartData(
            f"Cost per {per}, $ estimated ({whose})", "$", first, span, cost_series, markers,
            empty_text="no tokens recorded in this range",
        ),
        summary=summary,
        restarts=sum(m.restarts for m in snapshot.restarts if first <= m.hour <= last),
        prices_path=table.path,
        prices_error=prices_error,
    )  # fmt: skip


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
    since they depend on the size drawn at (``fit_to_size``)."""
    # plotext draws text into ANSI that is parsed back (Text.from_ansi): agent names
    # in titles and labels must not carry sequences of their own
    plt.title(visible(data.title))
    if data.kind == "stacked":
        _plot_stacked(plt, data)
        return
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
        plt.text(data.empty_text, middle, (data.y_max or 1) / 2, alignment="center")
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


def _plot_stacked(plt: Plot, data: ChartData) -> None:
    """One horizontal bar per category (agent), its parts stacked: the time in each
    activity. Agent names are data: shown through ``visible``."""
    names = [visible(name) for name in data.categories]
    parts = [list(series.ys) for series in data.series]
    if not names or not any(y > 0 for ys in parts for y in ys):
        plt.xlim(0, 1)
        plt.ylim(0, 1)
        plt.text(data.empty_text, 0.5, 0.5, alignment="center")
        return
    labels = [visible(s.label) for s in data.series]
    # its stub says label; plotext's stacked_bar takes labels, one per part
    plt.stacked_bar(names, parts, labels=labels, orientation="horizontal", width=0.6)  # type: ignore[call-arg]
    plt.xlabel(data.y_label)


LEGEND_ROWS_FREE = 4  # rows a stacked chart keeps free above its bars for the legend
NOT_PLOT_ROWS = 5  # a chart's rows outside its plot area: title, x axis, its labels


def fit_to_size(plt: Plot, data: ChartData, size: Size) -> None:
    """What depends on the size drawn at: the x labels of an hour chart that fit its
    width; the room a stacked chart leaves above its bars, so its legend (plotext
    draws it at the top left) covers no bar."""
    if data.kind == "stacked":
        bars = max(1, len(data.categories))
        rows = max(LEGEND_ROWS_FREE + 1, size.height - NOT_PLOT_ROWS)
        free = LEGEND_ROWS_FREE * (bars + 1) / (rows - LEGEND_ROWS_FREE)
        plt.ylim(0.5, bars + 0.5 + free)
        return
    ticks, labels = hour_ticks(data.first_hour, data.hours, size.width)
    plt.xticks(ticks, labels)


DrawKey = tuple[Size, ChartData, str]  # a chart's size, what it draws, the app's theme
Drawings = dict[DrawKey, PlotVisual]


def draw_chart(data: ChartData, size: Size, plotext_theme: str) -> PlotVisual:
    """What a HistoryChart of ``size`` shows for ``data``, drawn on a figure of its
    own: a thread can draw it before the chart exists (the History screen's
    read-ahead), and the chart then shows it instead of drawing (``drawn_ahead``)."""
    plot = Plot()
    plot_chart(plot, data)
    fit_to_size(plot, data, size)
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
            if self._ticks_for != (self.size.width, self.size.height):
                fit_to_size(self.plt, data, self.size)
                self._ticks_for = (self.size.width, self.size.height)
            drawing = render_plot(self)
        self._drawn = (key, drawing)
        self.draws += 1
        return drawing
