"""Exact, faster stand-ins for the two plotext helpers that dominate drawing lines.

plotext draws a line by interpolating every pair of points into canvas pixels
(``get_lines``), then folding each 2x2 block of pixels into one "hd" character
(``hd_group``). Both do per-pixel work through generic helpers: a fresh nested list
per pixel, a recursive flatten per segment to check the values are numbers. On the
History screen's throughput chart (5 series, 120 points each) they were about 40 %
of plotext's time. The versions here compute the same lists, element for element,
for the case the charts always hit (integer pixel coordinates, one marker size per
series) and hand anything else to plotext's own code.

They are swapped in only while one of our figures builds (``fast_line_helpers``),
so anything else that uses plotext, and textual-plotext's own render that
``test_plotext_visual`` compares ours with, keeps plotext's originals.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from threading import Lock
from typing import Any

import plotext._utility as plotext_utility  # type: ignore[import-untyped]

ORIGINAL_HD_GROUP = plotext_utility.hd_group
ORIGINAL_GET_LINES = plotext_utility.get_lines
_SWAP_LOCK = Lock()  # held while a figure builds with the helpers swapped in

# (columns, rows, bit mask) of a block of pixels -> plotext's code for it: the rows
# from the top, each from the left, 1 where a pixel is set.
_BLOCK_CODES: dict[tuple[int, int, int], tuple[int, ...]] = {}


def _all_ints(values: Sequence[Any]) -> bool:
    return all(type(value) is int for value in values)


def _block_code(columns: int, rows: int, bits: int) -> tuple[int, ...]:
    key = (columns, rows, bits)
    code = _BLOCK_CODES.get(key)
    if code is None:
        code = _BLOCK_CODES[key] = tuple(
            (bits >> (row * columns + column)) & 1
            for row in reversed(range(rows))
            for column in range(columns)
        )
    return code


def hd_group(
    x: list[Any], y: list[Any], xf: list[int], yf: list[int]
) -> tuple[list[Any], list[Any], list[tuple[int, ...]]]:
    """plotext's ``hd_group``: the character cells the pixels ``x``, ``y`` fall in
    (in order of first appearance) and, per cell, which of its pixels are set."""
    if not x or min(xf) != max(xf) or min(yf) != max(yf) or not (_all_ints(x) and _all_ints(y)):
        return ORIGINAL_HD_GROUP(x, y, xf, yf)  # type: ignore[no-any-return]
    columns, rows = xf[0], yf[0]
    cells: dict[tuple[int, int], int] = {}
    get = cells.get
    for px, py in zip(x, y, strict=True):
        cell = (px // columns, py // rows)
        cells[cell] = get(cell, 0) | 1 << (py % rows * columns + px % columns)
    return (
        [cell[0] for cell in cells],
        [cell[1] for cell in cells],
        [_block_code(columns, rows, bits) for bits in cells.values()],
    )


def get_lines(x: list[Any], y: list[Any], *other: list[Any]) -> list[list[Any]]:
    """plotext's ``get_lines``: the pixels of the straight segments between points,
    each carrying the marker, colour and style (``other``) of the point it leaves."""
    if len(x) != len(y) or not (_all_ints(x) and _all_ints(y)):
        return ORIGINAL_GET_LINES(x, y, *other)  # type: ignore[no-any-return]
    per_point = plotext_utility.transpose(other, len(other))
    xs: list[int] = []
    ys: list[int] = []
    attributes: list[Any] = []
    for n in range(len(x) - 1):
        x0, x1, y0, y1 = x[n], x[n + 1], y[n], y[n + 1]
        steps = max(abs(x1 - x0), abs(y1 - y0))  # pixels from this point to the next
        if steps:
            # plotext's linspace and int(), term for term, so every pixel is the same
            x_slope, y_slope = (x1 - x0) / steps, (y1 - y0) / steps
            xs += [int(x0 + k * x_slope) for k in range(steps)]
            ys += [int(y0 + k * y_slope) for k in range(steps)]
            attributes += [per_point[n]] * steps
    if x:
        xs.append(x[-1])
        ys.append(y[-1])
        attributes.append(per_point[-1])
    return [xs, ys, *plotext_utility.transpose(attributes, len(other))]


@contextmanager
def fast_line_helpers() -> Iterator[None]:
    """plotext's figure builds with the helpers above (it looks them up on its
    ``_utility`` module at each call); the originals are back afterwards. One build
    at a time: the History screen draws ahead in a thread, and two overlapping swaps
    could leave the helpers in place or take them away mid-build."""
    with _SWAP_LOCK:
        plotext_utility.hd_group, plotext_utility.get_lines = hd_group, get_lines
        try:
            yield
        finally:
            plotext_utility.hd_group = ORIGINAL_HD_GROUP
            plotext_utility.get_lines = ORIGINAL_GET_LINES
