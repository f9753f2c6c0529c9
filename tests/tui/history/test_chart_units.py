"""The unit a History chart draws durations in: picked from what it spans, so a
one-hour history reads in minutes (it read 0.0026 h ticks) and a week in days."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from app.tui.widgets.history_charts import build_charts, duration_unit
from registry.history.reader import load_history
from tests.tui.history.history_fixture import FIRST_HOUR, aggregate_rows, write_history

HOUR_MS = 3_600_000


@pytest.mark.parametrize(
    ("top_ms", "unit"),
    [
        (0, "s"),
        (2_999, "s"),
        (3 * 60_000 - 1, "s"),
        (3 * 60_000, "min"),
        (HOUR_MS, "min"),
        (3 * HOUR_MS - 1, "min"),
        (3 * HOUR_MS, "h"),
        (24 * HOUR_MS, "h"),
        (72 * HOUR_MS, "d"),
        (30 * 24 * HOUR_MS, "d"),
    ],
)
def test_the_largest_unit_the_span_holds_three_of(top_ms: int, unit: str) -> None:
    scale, name = duration_unit(top_ms)
    assert name == unit
    assert scale == {"s": 1000, "min": 60_000, "h": HOUR_MS, "d": 24 * HOUR_MS}[unit]


def test_a_largest_unit_caps_the_choice() -> None:
    """The wait for a person stays in hours however long it was (its chart's title
    says seconds, minutes or hours)."""
    assert duration_unit(30 * 24 * HOUR_MS, largest="h") == (HOUR_MS, "h")
    assert duration_unit(90_000, largest="h") == (1000.0, "s")


@pytest.mark.parametrize(
    ("days", "range_hours", "unit", "word"),
    [
        (0, 24, "min", "minutes"),  # one hour of history: the demo's first build
        (2, 24, "h", "hours"),
        (10, 7 * 24, "d", "days"),
    ],
)
def test_time_in_each_activity_follows_the_range(
    tmp_path: Path, days: int, range_hours: int, unit: str, word: str
) -> None:
    """The stacked bars are in the range's unit, and their sum is the time itself."""
    rows = aggregate_rows(days=max(1, days), agents=2)
    if not days:
        rows = [row for row in rows if row["hour"] == FIRST_HOUR + timedelta(hours=9)]
    write_history(tmp_path, days=max(1, days), rows=rows)
    charts = build_charts(load_history(tmp_path), None, range_hours)
    assert charts is not None
    states = charts.states
    assert states.y_label == unit and f"Time in each activity, {word} (" in states.title
    scale = duration_unit(states.hours * HOUR_MS)[0]
    working = charts.summary.agents[0].activity_ms["working"]
    assert states.series[0].ys[0] == pytest.approx(working / scale)
