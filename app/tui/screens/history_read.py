"""Reading the History screen's data off the event loop: the aggregates, the price
table and the charts in one call (``read_history``), and the messages that carry the
result (or why there is none) back to the screen. Kept apart from the screen so the
read is one function a thread, a bench or a test can call without a screen."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from textual.geometry import Size
from textual.message import Message

from app.tui.widgets.history_charts import (
    DEFAULT_RANGE_HOURS,
    Drawings,
    HistoryCharts,
    build_charts,
)
from registry.answered import AnswerCounts, read_answer_counts
from registry.history.errors import CorruptHistory, HistoryNotBuilt
from registry.history.prices import BadPrices, PriceTable, load_prices
from registry.history.reader import FileVersions, HistorySnapshot, history_version, load_history

HOUR = timedelta(hours=1)
Prices = tuple[PriceTable | None, str | None]  # the table, or why prices.toml is unusable


class HistoryLoaded(Message):
    """The load worker read the aggregates and computed the charts."""

    def __init__(
        self,
        snapshot: HistorySnapshot,
        charts: HistoryCharts | None,
        version: FileVersions = (),
        prices: Prices = (None, None),
    ) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.charts = charts
        self.version = version  # of the files read (history_version)
        self.prices = prices  # the price table read, or why it could not be
        self.drawings: Drawings = {}  # charts drawn ahead (read_ahead), if any


class HistoryLoadFailed(Message):
    """Not built yet, or damaged: a notice instead of charts."""

    def __init__(self, error: Exception, version: FileVersions = ()) -> None:
        super().__init__()
        self.error = error
        self.version = version  # of the files that failed (history_version)


@dataclass(frozen=True)
class Ahead:
    """What ``read_ahead`` read (its files' version in it) and drew, and for what."""

    drawn_for: tuple[Size, str]  # the app's size and theme it drew the charts for
    view: tuple[str | None, int]  # the agent and range it computed the charts for
    outcome: HistoryLoaded | HistoryLoadFailed


def read_history(
    state_dir: Path, agent: str | None, hours: int = DEFAULT_RANGE_HOURS
) -> HistoryLoaded | HistoryLoadFailed:
    """The aggregates, the price table and the charts of ``agent`` (None: all) over the
    newest ``hours``, or why there are none, with the version of the files read.
    Reads files: call it off the event loop."""
    version = history_version(state_dir)  # before the read: a build during it shows
    try:
        snapshot = load_history(state_dir)
    except (HistoryNotBuilt, CorruptHistory, OSError) as error:
        return HistoryLoadFailed(error, version)
    prices: Prices
    try:
        prices = (load_prices(state_dir), None)
    except (BadPrices, OSError) as error:  # the rest of the history is still worth showing
        prices = (None, str(error))
    charts = build_charts(snapshot, agent, hours, *prices)
    if charts is not None:
        charts = replace(charts, answers=answers_in(state_dir, charts, agent))
    return HistoryLoaded(snapshot, charts, version, prices)


def answers_in(state_dir: Path, charts: HistoryCharts, agent: str | None) -> AnswerCounts | None:
    """Who answered the agents over the charts' range (None: the registry is busy or
    unreadable; the rest of the screen does not wait for it)."""
    first, last = charts.summary.first_hour, charts.summary.last_hour
    if first is None or last is None:
        return None
    since, until = int(first.timestamp() * 1000), int((last + HOUR).timestamp() * 1000)
    try:
        return read_answer_counts(state_dir, since, until, agent)
    except sqlite3.Error:
        return None


def read_reporting_errors(
    state_dir: Path, agent: str | None, hours: int
) -> HistoryLoaded | HistoryLoadFailed:
    """``read_history`` for a bare thread: anything unexpected is shown on the screen
    (as a load worker's error is), not lost with the thread."""
    try:
        return read_history(state_dir, agent, hours)
    except Exception as error:
        return HistoryLoadFailed(CorruptHistory(str(error)))
