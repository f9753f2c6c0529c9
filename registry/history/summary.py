"""What the history says about a range of hours, per agent: where the time went, how
long agents waited for a person, how jobs ended, and what it cost.

Pure functions over a loaded ``HistorySnapshot``, shared by `history show` and the
History screen. Percentiles over a range are exact: each hourly row keeps its
sorted values, and a range's percentile is that of their concatenation. Costs are
priced from the user's table when computed (``prices``), never stored.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from registry.activity import ACTIVITIES
from registry.history.prices import Cost, PriceTable, price_usage
from registry.history.schema import exact_percentile
from registry.vocabulary import Activity

if TYPE_CHECKING:  # the reader imports pyarrow; this module stays light for the CLI
    from registry.history.reader import HistorySnapshot, HourlyAggregate, UsageRow

RANGES: dict[str, int] = {"24 h": 24, "7 d": 7 * 24, "30 d": 30 * 24}
"""The ranges a person picks from, in hours."""
ALL_AGENTS = "all agents"
_ACTIVITY_COLUMNS = tuple((activity, f"{activity}_ms") for activity in ACTIVITIES)
HOUR = timedelta(hours=1)


@dataclass
class AgentSummary:
    """One agent's (or all agents') figures over a range of hours."""

    agent: str
    registered: int = 0
    started: int = 0
    completed: int = 0
    errored: int = 0
    cancelled: int = 0
    retries: int = 0
    activity_ms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIVITIES, 0))
    asks: int = 0
    answered: int = 0
    response_values: list[int] = field(default_factory=list)
    queue_wait_values: list[int] = field(default_factory=list)
    run_values: list[int] = field(default_factory=list)
    cost: Cost = field(default_factory=Cost)

    def add(self, row: HourlyAggregate) -> None:
        self.registered += row.jobs_registered
        self.started += row.jobs_started
        self.completed += row.jobs_completed
        self.errored += row.jobs_errored
        self.cancelled += row.jobs_cancelled
        self.retries += row.retries
        spent = self.activity_ms
        for activity, column in _ACTIVITY_COLUMNS:
            spent[activity] += getattr(row, column)
        self.asks += row.asks
        self.answered += row.answered
        self.response_values.extend(row.response_values)
        self.queue_wait_values.extend(row.queue_wait_values)
        self.run_values.extend(row.run_values)

    def percentile(self, values: str, fraction: float) -> float | None:
        """Exact p50/p95 (schema.exact_percentile) of ``response``, ``queue_wait`` or ``run``."""
        found: list[int] = getattr(self, f"{values}_values")
        return exact_percentile(found, fraction)

    @property
    def error_rate(self) -> float | None:
        ended = self.completed + self.errored
        return self.errored / ended if ended else None

    @property
    def other_ms(self) -> int:
        """Time starting, stalled, exited or interrupted."""
        main = (Activity.WORKING, Activity.WAITING, Activity.IDLE)
        return sum(ms for activity, ms in self.activity_ms.items() if activity not in main)


@dataclass(frozen=True)
class RangeSummary:
    """A range of hours: its per-agent summaries (and all agents'), and its bounds."""

    first_hour: datetime | None  # the first hour in the range
    last_hour: datetime | None
    agents: tuple[AgentSummary, ...]  # sorted by agent
    total: AgentSummary


def range_end(snapshot: HistorySnapshot) -> datetime | None:
    """The last hour the history knows: its cut-off's, else its newest row's."""
    hours = [row.hour for row in snapshot.rows] + [row.hour for row in snapshot.usage]
    newest = max(hours, default=None)
    if snapshot.cutoff is not None:
        cut = snapshot.cutoff.replace(minute=0, second=0, microsecond=0)
        return max(cut, newest) if newest else cut
    return newest


def in_range(
    snapshot: HistorySnapshot, hours: int | None
) -> tuple[datetime | None, datetime | None]:
    """The first and last hour of the newest ``hours`` hours (None: all of it), never
    before the history's first hour (a day-old history's week is that day)."""
    last = range_end(snapshot)
    if last is None:
        return None, None
    hours_seen = [row.hour for row in snapshot.rows] + [u.hour for u in snapshot.usage]
    first = min(hours_seen, default=last)
    return (first if hours is None else max(first, last - (hours - 1) * HOUR)), last


def summarize(
    snapshot: HistorySnapshot,
    hours: int | None,
    prices: PriceTable,
    agent: str | None = None,
) -> RangeSummary:
    """Per-agent figures over the newest ``hours`` hours (None: all), or one agent's."""
    first, last = in_range(snapshot, hours)
    by_agent: dict[str, AgentSummary] = {}
    total = AgentSummary(agent or ALL_AGENTS)

    def wanted(name: str, hour: datetime) -> bool:
        return (agent is None or name == agent) and (first is None or first <= hour)

    for row in snapshot.rows:
        if wanted(row.agent, row.hour):
            by_agent.setdefault(row.agent, AgentSummary(row.agent)).add(row)
            total.add(row)
    usage: dict[str, list[UsageRow]] = {}
    for usage_row in snapshot.usage:
        if wanted(usage_row.agent, usage_row.hour):
            usage.setdefault(usage_row.agent, []).append(usage_row)
            by_agent.setdefault(usage_row.agent, AgentSummary(usage_row.agent))
    for name, rows in usage.items():
        by_agent[name].cost = price_usage(rows, prices)
    total.cost = price_usage((u for rows in usage.values() for u in rows), prices)
    return RangeSummary(first, last, tuple(by_agent[a] for a in sorted(by_agent)), total)


def duration(ms: float | None) -> str:
    """A duration for a person: 4.2s, 3m05s, 2h07m, 3d04h; "-" for none."""
    if ms is None:
        return "-"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def tokens_text(count: int) -> str:
    """12, 3.4k, 12k, 1.2M."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    return f"{count / 1_000_000:.1f}M"


def cost_text(cost: Cost) -> str:
    """≈$1.23 (an estimate), with "+?" when some tokens have no price."""
    if not cost.tokens:
        return "-"
    text = f"≈${cost.usd:.2f}" if cost.usd >= 0.01 or not cost.usd else f"≈${cost.usd:.4f}"
    return text + ("+?" if cost.unpriced_tokens else "")


TABLE_COLUMNS = (
    "agent",
    "done",
    "errors",
    "cancelled",
    "retries",
    "working",
    "waiting for a person",
    "idle",
    "other",
    "asks",
    "answered",
    "response p50",
    "response p95",
    "queue p50",
    "queue p95",
    "run p50",
    "tokens",
    "cost (estimated)",
)


def table_rows(summary: RangeSummary) -> list[tuple[str, ...]]:
    """The per-agent table (TABLE_COLUMNS) of a range, all agents last; what the screen
    shows and `e` exports."""
    rows: list[tuple[str, ...]] = []
    summaries: Sequence[AgentSummary] = summary.agents
    if len(summaries) != 1:
        summaries = [*summaries, summary.total]
    for item in summaries:
        tokens = tokens_text(item.cost.tokens) if item.cost.tokens else "-"
        if item.cost.tokens_estimated:
            tokens += "*"
        rows.append(
            (
                item.agent,
                str(item.completed),
                str(item.errored),
                str(item.cancelled),
                str(item.retries),
                duration(item.activity_ms[Activity.WORKING]),
                duration(item.activity_ms[Activity.WAITING]),
                duration(item.activity_ms[Activity.IDLE]),
                duration(item.other_ms),
                str(item.asks),
                str(item.answered),
                duration(item.percentile("response", 0.5)),
                duration(item.percentile("response", 0.95)),
                duration(item.percentile("queue_wait", 0.5)),
                duration(item.percentile("queue_wait", 0.95)),
                duration(item.percentile("run", 0.5)),
                tokens,
                cost_text(item.cost),
            )
        )
    return rows


CSV_COLUMNS = (
    "range_first_hour_utc",
    "range_last_hour_utc",
    "agent",
    "registered",
    "started",
    "completed",
    "errored",
    "cancelled",
    "retries",
    *[f"{activity}_ms" for activity in ACTIVITIES],
    "asks",
    "answered",
    "response_ms_p50",
    "response_ms_p95",
    "queue_wait_ms_p50",
    "queue_wait_ms_p95",
    "run_ms_p50",
    "run_ms_p95",
    "tokens_measured",
    "tokens_estimated",
    "cost_usd_estimated",
    "cost_usd_estimated_by_agent",
    "tokens_without_price",
)


def to_csv(summary: RangeSummary) -> str:
    """The per-agent table of a range as CSV, in raw units (ms, tokens, dollars) so a
    spreadsheet or dashboard can compute with it; every cost column says estimated."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)

    def stamp(moment: datetime | None) -> str:
        return moment.strftime("%Y-%m-%dT%H:00:00Z") if moment else ""

    def number(value: float | None) -> str:
        return "" if value is None else f"{value:g}"

    items: Iterable[AgentSummary] = [*summary.agents, summary.total]
    for item in items:
        writer.writerow(
            [
                stamp(summary.first_hour),
                stamp(summary.last_hour),
                _csv_safe(item.agent),
                item.registered,
                item.started,
                item.completed,
                item.errored,
                item.cancelled,
                item.retries,
                *[item.activity_ms[activity] for activity in ACTIVITIES],
                item.asks,
                item.answered,
                number(item.percentile("response", 0.5)),
                number(item.percentile("response", 0.95)),
                number(item.percentile("queue_wait", 0.5)),
                number(item.percentile("queue_wait", 0.95)),
                number(item.percentile("run", 0.5)),
                number(item.percentile("run", 0.95)),
                item.cost.tokens_measured,
                item.cost.tokens_estimated,
                f"{item.cost.usd_from_table:.6f}",
                f"{item.cost.usd_from_agents:.6f}",
                item.cost.unpriced_tokens,
            ]
        )
    return out.getvalue()


def _csv_safe(text: str) -> str:
    """An agent's name is data a spreadsheet may take for a formula: defuse it."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_csv(state_dir: Path, summary: RangeSummary, agent: str | None, hours: int) -> Path:
    """Write ``to_csv(summary)`` to ``<state>/history/exports/``, named after the range,
    the agent and the range's last hour; returns the file (replaced if it exists)."""
    who = re.sub(r"[^A-Za-z0-9._-]+", "_", agent)[:40] if agent else "all-agents"
    last = summary.last_hour.strftime("%Y%m%dT%H00Z") if summary.last_hour else "empty"
    label = next((name for name, n in RANGES.items() if n == hours), f"{hours} h")
    target = (
        state_dir / "history" / "exports" / f"history-{label.replace(' ', '')}-{who}-{last}.csv"
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".csv.tmp")
    tmp.write_text(to_csv(summary), encoding="utf-8")
    os.replace(tmp, target)
    return target
