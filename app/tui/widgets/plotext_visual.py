"""plotext's drawing handed to Textual as strips, without an ANSI string in between.

textual-plotext has plotext write its canvas as one ANSI string (escape codes around
every run of cells), then Rich parse it back (``Text.from_ansi``) and Textual turn that
Text into strips. On the History screen the round trip cost about as much as plotext's
drawing itself. Here the cells plotext drew (its matrix of markers and colours) become
segments directly. Each distinct colour triple is turned into a style once, through the
very path of the round trip (plotext's own ANSI codes, Rich's decoder, Textual's
``Content``), so the screen looks exactly the same; ``test_plotext_visual`` checks it.

Depends on two internals of plotext's figure that ``build()`` itself calls
(``_set_sizes``, ``_build_matrix``) and on its matrix's four cell grids. The figure
builds with plotext's line helpers swapped for exact faster ones (``plotext_fast``).
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from plotext._dict import themes as plotext_themes  # type: ignore[import-untyped]
from plotext._utility import colors_to_ansi  # type: ignore[import-untyped]
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.app import App
from textual.color import Color
from textual.content import Content
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot, _rgbify_theme, _sequence

from app.tui.widgets.plotext_fast import fast_line_helpers

Run = tuple[str, str]  # text of a run of same-coloured cells, their ANSI codes
# ANSI codes -> their style, as the round trip gives it. The same for every app theme:
# Textual keeps the 16 standard colours as ANSI numbers, resolved when drawn.
_COLOURS: dict[str, Style] = {}


def _cell_colours(cell: tuple[Any, ...]) -> tuple[Any, ...]:
    return cell[1:]


def plot_runs(plot: Plot) -> list[list[Run]]:
    """What ``plot.build()`` draws, top line first, as runs of same-coloured cells.

    The same steps as ``build()`` but the last (writing the ANSI canvas string)."""
    figure: Any = plot  # the internals below are not in textual-plotext's stubs
    figure._set_sizes()
    with fast_line_helpers():
        figure._build_matrix()
    matrix = figure.monitor.matrix
    lines: list[list[Run]] = []
    for row in reversed(range(matrix.rows)):
        cells = zip(
            matrix.marker[row],
            matrix.fullground[row],
            matrix.style[row],
            matrix.background[row],
            strict=True,
        )
        lines.append(
            [
                ("".join(cell[0] for cell in run), colors_to_ansi(*colours))
                for colours, run in groupby(cells, key=_cell_colours)
            ]
        )
    return lines


def _colour_style(codes: str) -> Style:
    """The Textual style the round trip gives a run written with ANSI ``codes``."""
    style = _COLOURS.get(codes)
    if style is None:
        content = Content.from_rich_text(Text.from_ansi(f"{codes}x"))
        spans = content.spans
        style = spans[0].style if spans and isinstance(spans[0].style, Style) else Style()
        _COLOURS[codes] = style
    return style


class PlotVisual(Visual):
    """A plotext drawing as a Textual Visual: a fixed grid, cropped to the region."""

    def __init__(self, lines: list[list[Run]]) -> None:
        self._lines = lines
        self._width = max((sum(len(text) for text, _ in line) for line in lines), default=0)

    def render_strips(
        self, width: int, height: int | None, style: Style, options: RenderOptions
    ) -> list[Strip]:
        resolved: dict[str, RichStyle] = {}
        strips: list[Strip] = []
        for line in self._lines[:height]:
            segments = []
            for text, codes in line:
                rich_style = resolved.get(codes)
                if rich_style is None:
                    rich_style = resolved[codes] = (style + _colour_style(codes)).rich_style
                segments.append(Segment(text, rich_style))
            strips.append(Strip(segments).crop(0, width))
        return strips

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self._width

    def get_height(self, rules: RulesMap, width: int) -> int:
        return len(self._lines)


def render_figure(plot: Plot, width: int, height: int, plotext_theme: str) -> PlotVisual:
    """``plot`` drawn at ``width`` x ``height`` in ``plotext_theme``. It touches only
    the figure (and plotext's registered themes, read), so a thread may draw a figure
    of its own while the event loop goes on."""
    plot.plotsize(width, height)
    plot._set_size(width, height)  # as PlotextPlot.render does (textual-plotext issue 5)
    plot.theme(plotext_theme)
    return PlotVisual(plot_runs(plot))


def render_plot(widget: PlotextPlot) -> PlotVisual:
    """``PlotextPlot.render``, drawing a PlotVisual instead of an ANSI string."""
    width, height = widget.size
    theme = widget._get_plotext_theme_name(widget.app.theme)
    return render_figure(widget.plt, width, height, theme)


def auto_plotext_theme(app: App[Any]) -> str:
    """The plotext theme a PlotextPlot with theme "auto" draws in under ``app``'s
    theme, registered with plotext as the widget registers it when mounted: a figure
    drawn before any such widget is mounted needs it too. Call on the event loop."""
    name = f"textual-auto-{app.theme}"
    if name not in plotext_themes:
        variables = app.theme_variables
        surface = Color.parse(variables.get("surface", "black")).rgb
        foreground = Color.parse(variables.get("foreground", "white")).rgb
        sequence: list[str | int | tuple[int, int, int]] = list(_sequence)
        plotext_themes[name] = _rgbify_theme(surface, surface, foreground, "default", sequence)
    return name
