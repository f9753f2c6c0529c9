"""app.tui.widgets.plotext_fast: the stand-ins return exactly what plotext's own
helpers return, on the inputs the charts give them and on the ones they hand back."""

from __future__ import annotations

import math
import random
from typing import Any

import plotext._utility as plotext_utility
import pytest

from app.tui.widgets.plotext_fast import (
    ORIGINAL_GET_LINES,
    ORIGINAL_HD_GROUP,
    fast_line_helpers,
    get_lines,
    hd_group,
)

# plotext's marker sizes: 1x1 (plain), 2x2 (hd), 2x3 (fhd), 2x4 (braille)
BLOCKS = [(1, 1), (2, 2), (2, 3), (2, 4)]


def pixels(rng: random.Random, count: int) -> tuple[list[int], list[int]]:
    """Pixel coordinates as plotext's canvas maps data: some off the canvas (negative)."""
    return (
        [rng.randint(-6, 300) for _ in range(count)],
        [rng.randint(-6, 90) for _ in range(count)],
    )


def as_lists(result: Any) -> list[list[Any]]:
    return [list(part) for part in result]


@pytest.mark.parametrize("seed", range(4))
def test_hd_group_equals_plotext(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        count = rng.randint(1, 80)
        columns, rows = rng.choice(BLOCKS)
        x, y = pixels(rng, count)
        if rng.random() < 0.5:  # a line's pixels: many fall in one cell
            x, y = sorted(x), sorted(y)
        xf, yf = [columns] * count, [rows] * count
        assert as_lists(hd_group(x, y, xf, yf)) == as_lists(ORIGINAL_HD_GROUP(x, y, xf, yf))


@pytest.mark.parametrize("seed", range(4))
def test_get_lines_equals_plotext(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        count = rng.randint(0, 40)
        x, y = pixels(rng, count)
        markers = ["hd"] * count
        colours = [rng.choice(["red", "blue", 33]) for _ in range(count)]
        styles = ["default"] * count
        ours = get_lines(x, y, markers, colours, styles)
        assert ours == ORIGINAL_GET_LINES(x, y, markers, colours, styles)


def test_other_inputs_go_to_plotext() -> None:
    """Coordinates that are not integers (plotext keeps NaN and None as they are)
    take plotext's own path, with its results."""
    x: list[Any] = [0, 3, math.nan, 7]
    y: list[Any] = [1, None, 4, 2]
    other = (["hd"] * 4, ["red"] * 4)
    assert get_lines(x, y, *other) == ORIGINAL_GET_LINES(x, y, *other)
    xs: list[Any] = [0, 1, None, 9]
    ys: list[Any] = [0, 3, 3, 8]
    assert as_lists(hd_group(xs, ys, [2] * 4, [2] * 4)) == as_lists(
        ORIGINAL_HD_GROUP(xs, ys, [2] * 4, [2] * 4)
    )


def test_swapped_in_only_while_building() -> None:
    with fast_line_helpers():
        assert plotext_utility.hd_group is hd_group
        assert plotext_utility.get_lines is get_lines
    assert plotext_utility.hd_group is ORIGINAL_HD_GROUP
    assert plotext_utility.get_lines is ORIGINAL_GET_LINES
    with pytest.raises(RuntimeError), fast_line_helpers():
        raise RuntimeError("a failed build")
    assert plotext_utility.hd_group is ORIGINAL_HD_GROUP
