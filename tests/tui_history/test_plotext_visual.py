"""app.tui.widgets.plotext_visual: plotext's cells turned into strips directly look
exactly like textual-plotext's own path (an ANSI string parsed back by Rich)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from history_fixture import write_history
from rich.style import Style
from textual.app import App, ComposeResult
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual_plotext import PlotextPlot

from app.tui.widgets.history_charts import MAX_MARKER_LINES, ChartData, HistoryChart, build_charts
from app.tui.widgets.plotext_visual import render_plot
from registry.history.reader import load_history

Cell = tuple[str, Style | None]


class OneChart(App[None]):
    def compose(self) -> ComposeResult:
        yield HistoryChart()


def cells(strips: list[Strip]) -> list[list[Cell]]:
    """What a person sees: each cell's character and style (no mouse metadata)."""
    return [
        [
            (char, segment.style.clear_meta_and_links() if segment.style else None)
            for segment in strip
            for char in segment.text
        ]
        for strip in strips
    ]


def both_ways(chart: HistoryChart) -> tuple[list[list[Cell]], list[list[Cell]]]:
    """The chart's strips drawn by textual-plotext's own render, then by ours."""
    width, height = chart.size
    style = chart.visual_style

    def strips(visual: Visual) -> list[Strip]:
        return Visual.to_strips(chart, visual, width, height, style)

    theirs = strips(visualize(chart, PlotextPlot.render(chart)))
    ours = strips(render_plot(chart))
    return cells(theirs), cells(ours)


def many_restarts(chart: ChartData) -> ChartData:
    """The same chart with more restarts than MAX_MARKER_LINES: drawn as marks."""
    markers = tuple(float(x) for x in range(0, chart.hours, 2))
    assert len(markers) > MAX_MARKER_LINES
    return replace(chart, markers=markers)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
@pytest.mark.parametrize("size", [(120, 20), (57, 13)])
async def test_strips_equal_textual_plotext_render(
    tmp_path: Path, theme: str, size: tuple[int, int]
) -> None:
    write_history(tmp_path, days=3, agents=4)
    charts = build_charts(load_history(tmp_path))
    assert charts is not None
    app = OneChart()
    async with app.run_test(size=size) as pilot:
        app.theme = theme
        chart = app.query_one(HistoryChart)
        for data in (
            charts.throughput,
            charts.duration,
            charts.error_rate,
            many_restarts(charts.throughput),
        ):
            chart.data = data
            await pilot.pause()
            theirs, ours = both_ways(chart)
            assert len(ours) == size[1] and all(len(line) == size[0] for line in ours)
            assert ours == theirs, data.title
