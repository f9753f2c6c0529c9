"""A deterministic history on disk, written with pyarrow in the exact layout the Spark
job writes (``registry.history.reader`` schemas + state.json), so no test needs Spark."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from registry.history.reader import AGG_SCHEMA, MARKER_SCHEMA
from registry.history.schema import HistoryPaths
from registry.history.watermark import BuildState, save_state

FIRST_HOUR = datetime(2026, 3, 1, 0, tzinfo=UTC)
BUILT_AT = datetime(2026, 3, 3, 0, 5, tzinfo=UTC)
AGENTS = ("claude", "codex", "gemini", "aider", "goose")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def aggregate_rows(days: int = 2, agents: int = 3, seed: int = 7) -> list[dict[str, object]]:
    """Hourly rows with a day/night rhythm, per-agent speed and a bad afternoon."""
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
            runs = [rng.uniform(30_000, 240_000) * (1 + number / 2) for _ in range(completed)]
            runs += [rng.uniform(5_000, 60_000) for _ in range(errored)]
            waits = [rng.uniform(200, 20_000) for _ in range(registered)]
            terminal = completed + errored
            rows.append(
                {
                    "hour": hour,
                    "agent": agent,
                    "events": registered * 6 + rng.randint(0, 9),
                    "jobs_registered": registered,
                    "jobs_started": registered,
                    "jobs_completed": completed,
                    "jobs_errored": errored,
                    "error_rate": errored / terminal if terminal else None,
                    "runs": len(runs),
                    "run_ms_p50": _percentile(runs, 0.5) if runs else None,
                    "run_ms_p95": _percentile(runs, 0.95) if runs else None,
                    "waits": len(waits),
                    "wait_ms_p50": _percentile(waits, 0.5),
                    "wait_ms_p95": _percentile(waits, 0.95),
                }
            )
    return rows


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
) -> HistoryPaths:
    """Write agg_hourly.parquet, markers.parquet and state.json under ``state_dir``."""
    paths = HistoryPaths(state_dir)
    paths.root.mkdir(parents=True, exist_ok=True)
    table_rows = aggregate_rows(days, agents) if rows is None else rows
    aggregates = pa.Table.from_pylist(table_rows, schema=AGG_SCHEMA)
    markers = pa.Table.from_pylist(restart_rows(days) if table_rows else [], schema=MARKER_SCHEMA)
    for table, target in ((aggregates, paths.aggregates), (markers, paths.markers)):
        partial = target.with_suffix(".parquet.tmp")
        pq.write_table(table, partial)
        partial.replace(target)
    events = sum(int(row["events"]) for row in table_rows)  # type: ignore[call-overload]
    state = BuildState(
        input=str(paths.default_input),
        build_id="fixture",
        built_at_ms=int(built_at.timestamp() * 1000),
        facts_rows=events * 2,
        malformed_total=3,
    )
    save_state(paths, state)
    return paths
