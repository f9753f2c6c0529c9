"""A deterministic history on disk, written with pyarrow in the exact layout the Spark
job writes (``registry.history.reader`` schemas + state.json), so no test needs Spark."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from registry.history.reader import AGG_SCHEMA, MARKER_SCHEMA, USAGE_SCHEMA, empty_row
from registry.history.schema import HistoryPaths
from registry.history.watermark import BuildState, save_state

FIRST_HOUR = datetime(2026, 3, 1, 0, tzinfo=UTC)
BUILT_AT = datetime(2026, 3, 3, 0, 5, tzinfo=UTC)
AGENTS = ("claude", "codex", "gemini", "aider", "goose")
MODELS = {"claude": "claude-sonnet-4-5", "codex": "gpt-5-codex", "gemini": "gemini-2.5-pro",
          "aider": "openai/gpt-4.1", "goose": "no-such-model"}  # fmt: skip
MINUTE = 60_000


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def aggregate_rows(days: int = 2, agents: int = 3, seed: int = 7) -> list[dict[str, object]]:
    """Hourly rows with a day/night rhythm, per-agent speed and a bad afternoon; each
    agent busy by day, waiting for a person now and then (long waits at night)."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    for index in range(days * 24):
        hour = FIRST_HOUR + timedelta(hours=index)
        busy = 1.0 if 8 <= hour.hour < 20 else 0.3
        for number, agent in enumerate(AGENTS[:agents]):
            registered = int(rng.randint(2, 8) * busy) + number
            if registered == 0:
                continue
            errored = rng.randint(0, 1) + (3 if 14 <= hour.hour < 16 and number == 1 else 0)
            completed = max(0, registered - rng.randint(0, 2) - errored // 2)
            runs = [
                round(rng.uniform(30_000, 240_000) * (1 + number / 2)) for _ in range(completed)
            ]
            runs += [round(rng.uniform(5_000, 60_000)) for _ in range(errored)]
            waits = [round(rng.uniform(200, 20_000)) for _ in range(registered)]
            asks = [
                round(rng.uniform(5_000, 600_000) * (3 - 2 * busy))
                for _ in range(rng.randint(0, 3))
            ]
            working = min(60, round(40 * busy) + rng.randint(0, 15)) * MINUTE
            waiting = min(60 * MINUTE - working, sum(asks))
            terminal = completed + errored
            rows.append(
                empty_row(
                    hour,
                    agent,
                    events=registered * 6 + rng.randint(0, 9),
                    jobs_registered=registered,
                    jobs_started=registered,
                    jobs_completed=completed,
                    jobs_errored=errored,
                    jobs_cancelled=rng.randint(0, 1) if number == 2 else 0,
                    retries=errored // 2,
                    error_rate=errored / terminal if terminal else None,
                    runs=len(runs),
                    run_ms_p50=_percentile(runs, 0.5) if runs else None,
                    run_ms_p95=_percentile(runs, 0.95) if runs else None,
                    queue_waits=len(waits),
                    queue_wait_ms_p50=_percentile(waits, 0.5),
                    queue_wait_ms_p95=_percentile(waits, 0.95),
                    working_ms=working,
                    waiting_ms=waiting,
                    idle_ms=max(0, 60 * MINUTE - working - waiting) // 2,
                    starting_ms=registered * 1_500,
                    asks=len(asks),
                    answered=len(asks),
                    response_ms_p50=_percentile(asks, 0.5) if asks else None,
                    response_ms_p95=_percentile(asks, 0.95) if asks else None,
                    run_values=sorted(runs),
                    queue_wait_values=sorted(waits),
                    response_values=sorted(asks),
                )
            )
    return rows


def usage_rows(rows: list[dict[str, Any]], seed: int = 7) -> list[dict[str, object]]:
    """Tokens for each row's agent and hour: Aider's own estimates (and cost), the
    others measured; a model the default prices do not know for the fifth agent."""
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for row in rows:
        agent, messages = str(row["agent"]), int(row["jobs_started"]) * 3
        aider = agent == "aider"
        out.append(
            {
                "hour": row["hour"],
                "agent": agent,
                "model": MODELS[agent],
                "measured": not aider,
                "messages": messages,
                "input_tokens": messages * rng.randint(2_000, 9_000),
                "output_tokens": messages * rng.randint(200, 900),
                "cache_read_tokens": 0 if aider else messages * rng.randint(5_000, 30_000),
                "cache_write_tokens": 0 if aider else messages * rng.randint(0, 2_000),
                "agent_cost_micro_usd": messages * 2_000 if aider else None,
            }
        )
    return out


def restart_rows(days: int = 2) -> list[dict[str, object]]:
    """A control-room start on the first morning, and two more each later day at 13:00."""
    rows: list[dict[str, object]] = [{"hour": FIRST_HOUR + timedelta(hours=9), "restarts": 1}]
    for day in range(1, days):
        rows.append({"hour": FIRST_HOUR + timedelta(days=day, hours=13), "restarts": 2})
    return rows


def write_history(
    state_dir: Path,
    *,
    days: int = 2,
    agents: int = 3,
    rows: list[dict[str, object]] | None = None,
    built_at: datetime = BUILT_AT,
    with_usage: bool = True,
) -> HistoryPaths:
    """Write agg_hourly.parquet, usage_hourly.parquet, markers.parquet and state.json
    under ``state_dir``; the cut-off is the end of the last hour."""
    paths = HistoryPaths(state_dir)
    paths.root.mkdir(parents=True, exist_ok=True)
    table_rows = aggregate_rows(days, agents) if rows is None else rows
    aggregates = pa.Table.from_pylist(table_rows, schema=AGG_SCHEMA)
    usage = pa.Table.from_pylist(usage_rows(table_rows) if with_usage else [], schema=USAGE_SCHEMA)
    markers = pa.Table.from_pylist(restart_rows(days) if table_rows else [], schema=MARKER_SCHEMA)
    for table, target in ((aggregates, paths.aggregates), (usage, paths.usage),
                          (markers, paths.markers)):  # fmt: skip
        partial = target.with_suffix(".parquet.tmp")
        pq.write_table(table, partial)
        partial.replace(target)
    events = sum(int(row["events"]) for row in table_rows)  # type: ignore[call-overload]
    last = max((row["hour"] for row in table_rows), default=FIRST_HOUR)
    state = BuildState(
        input=str(paths.default_input),
        build_id="fixture",
        built_at_ms=int(built_at.timestamp() * 1000),
        facts_rows=events * 2,
        malformed_total=3,
        cutoff_ms=int((last + timedelta(minutes=59)).timestamp() * 1000),  # type: ignore[operator]
        open_jobs=["0000000a", "0000000b"],
    )
    save_state(paths, state)
    return paths
