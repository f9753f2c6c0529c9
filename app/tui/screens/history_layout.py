"""Where the History screen puts its charts, so they can be drawn before it exists."""

from __future__ import annotations

from textual.geometry import Size

from app.tui.widgets.history_charts import ChartData, HistoryCharts

# Lines the History screen gives to what is not a chart: title, range picker,
# totals, the per-agent table (AGENTS_TABLE_HEIGHT) and the footer.
AGENTS_TABLE_HEIGHT = 7
NOT_CHARTS = 1 + 1 + 1 + AGENTS_TABLE_HEIGHT + 1


def chart_sizes(screen: Size) -> dict[str, Size]:
    """Where the History screen's layout puts each chart on a screen of this size: two
    rows of two, sharing what the other lines leave (the first row and the left column
    rounded down), as Textual shares out 1fr. ``read_ahead`` draws at these sizes
    before the screen exists; a wrong guess costs only time (the chart then draws
    itself), and ``test_chart_sizes_are_the_laid_out_ones`` keeps it right."""
    width, height = screen.width, max(0, screen.height - NOT_CHARTS)
    top, left = height // 2, width // 2
    return {
        "states": Size(left, top),
        "throughput": Size(width - left, top),
        "latency": Size(left, height - top),
        "cost": Size(width - left, height - top),
    }


def chart_data(charts: HistoryCharts) -> dict[str, ChartData]:
    """Each chart's data, by the id of the chart that draws it."""
    return {
        "states": charts.states,
        "throughput": charts.throughput,
        "latency": charts.latency,
        "cost": charts.cost,
    }
