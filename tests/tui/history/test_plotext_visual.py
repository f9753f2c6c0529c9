"""app.tui.widgets.plotext_visual: plotext's cells turned into strips directly look
exactly like textual-plotext's own path (an ANSI string parsed back by Rich)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from plotext._dict import themes as plotext_themes  # type: ignore[import-untyped]
from rich.style import Style
from textual.app import App, ComposeResult
from textual.strip import Strip
from textual.theme import Theme
from textual.visual import Visual, visualize
from textual_plotext import PlotextPlot

from app.tui.widgets.history_charts import (
    MAX_MARKER_LINES,
    ChartData,
    HistoryChart,
    build_charts,
    draw_chart,
)
from app.tui.widgets.plotext_visual import auto_plotext_theme, render_plot
from registry.history.reader import load_history
from tests.tui.history.history_fixture import write_history

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
    charts = build_charts(load_history(tmp_path), range_hours=7 * 24)
    assert charts is not None
    app = OneChart()
    async with app.run_test(size=size) as pilot:
        app.theme = theme
        chart = app.query_one(HistoryChart)
        for data in (
            charts.states,
            charts.throughput,
            charts.latency,
            charts.cost,
            many_restarts(charts.throughput),
        ):
            chart.data = data
            await pilot.pause()
            theirs, ours = both_ways(chart)
            assert len(ours) == size[1] and all(len(line) == size[0] for line in ours)
            assert ours == theirs, data.title


@pytest.mark.parametrize("size", [(120, 20), (57, 13)])
async def test_a_chart_drawn_ahead_is_the_chart_drawn_live(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """``draw_chart`` (a figure of its own, as the read-ahead's thread draws) gives the
    cells the chart draws itself at that size: x ticks for the width included."""
    write_history(tmp_path, days=3, agents=4)
    charts = build_charts(load_history(tmp_path), range_hours=7 * 24)
    assert charts is not None
    app = OneChart()
    async with app.run_test(size=size) as pilot:
        chart = app.query_one(HistoryChart)
        style = chart.visual_style
        for data in (charts.states, charts.latency, many_restarts(charts.cost)):
            chart.data = data
            await pilot.pause()
            ahead = draw_chart(data, chart.size, auto_plotext_theme(app))
            live = render_plot(chart)
            width, height = chart.size
            assert cells(Visual.to_strips(chart, ahead, width, height, style)) == cells(
                Visual.to_strips(chart, live, width, height, style)
            ), data.title


async def test_the_auto_theme_is_the_one_textual_plotext_registers() -> None:
    """Drawn before any PlotextPlot is mounted, a chart needs the app theme's plotext
    theme registered: ``auto_plotext_theme`` registers what the widget would."""
    app = OneChart()
    app.register_theme(Theme(name="test-ocean", primary="#0077be", surface="#102030", dark=True))
    app.theme = "test-ocean"
    async with app.run_test(size=(40, 10)):
        theirs = plotext_themes.pop("textual-auto-test-ocean")  # the chart registered it
        assert auto_plotext_theme(app) == "textual-auto-test-ocean"
        assert plotext_themes["textual-auto-test-ocean"] == theirs
