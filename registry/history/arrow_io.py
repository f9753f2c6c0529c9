"""The pyarrow half of a history build: facts scans and result writes on the driver.

A build's bookkeeping (from which hour the new facts can change the aggregates,
which jobs those hours hold, the facts needed to recompute them) is a few parquet
column scans, and its result is small; pyarrow does both far cheaper than a round
of Spark jobs. Kept apart from ``spark_job``: the Spark side (it,
``spark_sql`` and ``spark_session``) alone imports pyspark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from registry.history.reader import AGG_SCHEMA, MARKER_SCHEMA, USAGE_SCHEMA
from registry.history.schema import (
    AGG_COLUMNS,
    CONTROL_STARTED,
    FACT_COLUMNS,
    JOB_REGISTERED,
    MARKER_COLUMNS,
    USAGE_COLUMNS,
    HistoryPaths,
)

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


def _scan(files: list[Path], columns: list[str], **kwargs: Any) -> pa.Table:
    """Columns of some facts files, read on the driver with pyarrow."""
    if not files:
        return pa.table({name: pa.array([], pa.string()) for name in columns})
    return pq.ParquetDataset([str(f) for f in files], **kwargs).read(columns=columns)


def files_since(files: list[Path], since_ms: int) -> list[Path]:
    """The facts files that may hold a fact at or after ``since_ms``: a date partition
    (``date=YYYY-MM-DD``) is skipped when its whole day is earlier; a segment (no
    date in its path) is always kept (its row groups' statistics prune the read)."""
    day = datetime.fromtimestamp(since_ms // 1000, tz=UTC).date().isoformat()
    kept = []
    for path in files:
        date = path.parent.name.removeprefix("date=")
        if date == path.parent.name or date >= day:
            kept.append(path)
    return kept


@dataclass(frozen=True)
class Touched:
    """What new facts change: every aggregate row from ``since_hour_ms`` on."""

    since_hour_ms: int
    jobs: list[str]  # the jobs that have a fact at or after since_hour_ms, or run then


def since_hour(old: list[Path], new: list[Path], old_cutoff_ms: int) -> int:
    """The first hour whose aggregates the ``new`` facts can change: the hour of the
    last build's cut-off (a job that ran then runs on, or ends), of the earliest new
    fact, and, for a job whose first registration is new, of its older facts (their
    agent changes)."""
    facts = _scan(new, ["ts_ms", "type", "job_id"])
    earliest = [old_cutoff_ms]
    if facts.num_rows:
        earliest.append(int(pc.min(facts["ts_ms"]).as_py()))
        registered = pc.unique(facts.filter(pc.equal(facts["type"], JOB_REGISTERED))["job_id"])
        if len(registered) and old:
            wanted = [("job_id", "in", registered.to_pylist())]
            older = _scan(old, ["ts_ms"], filters=wanted)
            if older.num_rows:
                earliest.append(int(pc.min(older["ts_ms"]).as_py()))
    first = min(earliest)
    return first - first % HOUR_MS


def touched_jobs(files: list[Path], since_hour_ms: int, open_jobs: list[str]) -> list[str]:
    """The jobs with a fact at or after ``since_hour_ms``, and those running at the last
    cut-off: every job that can have activity in those hours (a job active then with
    no fact since was running at the last cut-off)."""
    # The filter skips row groups whose statistics say they end earlier (segments are
    # written in bus order), then keeps the rows at or after since_hour_ms.
    recent = [("ts_ms", ">=", since_hour_ms)]
    facts = _scan(files_since(files, since_hour_ms), ["job_id"], filters=recent)
    jobs = set(open_jobs)
    if facts.num_rows:
        jobs.update(str(job) for job in pc.unique(facts["job_id"].drop_null()).to_pylist())
    return sorted(jobs)


def context_table(files: list[Path], since_hour_ms: int, jobs: list[str]) -> pa.Table | None:
    """All facts needed to recompute the hours from ``since_hour_ms`` exactly (None if
    there are none): every fact of ``jobs`` and the restarts in those hours, picked
    with a filtered column scan."""
    columns = list(FACT_COLUMNS)
    of_jobs = _scan(files, columns, filters=[("job_id", "in", jobs)]) if jobs else None
    recent = files_since(files, since_hour_ms)
    wanted = [("type", "=", CONTROL_STARTED), ("ts_ms", ">=", since_hour_ms)]
    restarts = _scan(recent, columns, filters=wanted)
    parts = [t for t in (of_jobs, restarts) if t is not None and t.num_rows]
    if not parts:
        return None
    # One chunk: PySpark 4.3's createDataFrame(pa.Table) silently drops every row
    # after an empty chunk, and each facts file that matched nothing is one.
    return pa.concat_tables([p.cast(parts[0].schema) for p in parts]).combine_chunks()


def outputs_usable(paths: HistoryPaths) -> bool:
    """Whether the last build's outputs can take a merge: all there, readable, with
    every column. Reads only their footers."""
    outputs = (
        (paths.aggregates, AGG_SCHEMA),
        (paths.usage, USAGE_SCHEMA),
        (paths.markers, MARKER_SCHEMA),
    )
    for target, schema in outputs:
        try:
            found = pq.read_schema(target)
        except (OSError, pa.ArrowException):
            return False
        if not set(schema.names) <= set(found.names):
            return False
    return True


@dataclass(frozen=True)
class Written:
    """What ``write_tables`` wrote."""

    agg_rows: int
    usage_rows: int
    open_jobs: list[str]


def write_tables(table: pa.Table, paths: HistoryPaths, since_hour_ms: int | None) -> Written:
    """Write the collected result's aggregates, usage and markers, each as one file
    replaced atomically, so a reader never sees half a build. With ``since_hour_ms``,
    only the rows of those hours are replaced in the existing files."""
    open_rows = pc.is_valid(table["open_job"])
    is_usage = pc.is_valid(table["model"])
    is_marker = pc.and_(pc.is_null(table["agent"]), pc.invert(open_rows))
    plain = pc.and_(pc.invert(open_rows), pc.invert(is_usage))
    agg = table.filter(pc.and_(plain, pc.invert(is_marker)))
    outputs = [
        (agg.select(list(AGG_COLUMNS)).cast(AGG_SCHEMA), paths.aggregates, AGG_SCHEMA, 2),
        (
            table.filter(is_usage).select(list(USAGE_COLUMNS)).cast(USAGE_SCHEMA),
            paths.usage,
            USAGE_SCHEMA,
            4,
        ),
        (
            table.filter(is_marker).select(list(MARKER_COLUMNS)).cast(MARKER_SCHEMA),
            paths.markers,
            MARKER_SCHEMA,
            1,
        ),
    ]
    written = []
    for result, target, schema, key_count in outputs:
        if since_hour_ms is not None:
            since = pa.scalar(since_hour_ms * 1000, pa.int64()).cast(schema.field("hour").type)
            kept = pq.read_table(target) if target.exists() else schema.empty_table()
            kept = kept.filter(pc.less(kept["hour"], since))
            fresh = result.filter(pc.greater_equal(result["hour"], since))
            result = pa.concat_tables([kept.cast(schema), fresh])
        keys = [(name, "ascending") for name in schema.names[:key_count]]
        result = result.sort_by(keys)
        tmp = target.with_name(target.name + ".tmp")
        pq.write_table(result, tmp)
        os.replace(tmp, target)
        written.append(result.num_rows)
    open_jobs = sorted(str(job) for job in table.filter(open_rows)["open_job"].to_pylist())
    return Written(written[0], written[1], open_jobs)
