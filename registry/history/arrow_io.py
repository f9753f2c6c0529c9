"""The pyarrow half of a history build: facts scans and result writes on the driver.

A build's bookkeeping (which hours new facts touch, which jobs those hours hold,
the facts needed to recompute them) is a few parquet column scans, and its
result is small; pyarrow does both far cheaper than a round of Spark jobs. Kept
apart from ``spark_job``: the Spark side (it and ``spark_session``) alone imports pyspark.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from registry.history.reader import AGG_SCHEMA, MARKER_SCHEMA
from registry.history.schema import (
    AGG_COLUMNS,
    CONTROL_STARTED,
    FACT_COLUMNS,
    JOB_REGISTERED,
    MARKER_COLUMNS,
    HistoryPaths,
)


def _scan(files: list[Path], columns: list[str], **kwargs: Any) -> pa.Table:
    """Columns of some facts files, read on the driver with pyarrow: the affected-hours
    bookkeeping is a few column scans, far cheaper than a round of Spark jobs."""
    if not files:
        return pa.table({name: pa.array([], pa.string()) for name in columns})
    return pq.ParquetDataset([str(f) for f in files], **kwargs).read(columns=columns)


def _hour_micros(table: pa.Table) -> pa.Array:
    """Each fact's hour (ts truncated, UTC) as epoch microseconds."""
    return pc.floor_temporal(table["ts"], unit="hour").cast(pa.int64())


def _hours_of(table: pa.Table) -> set[int]:
    return set(pc.unique(_hour_micros(table)).to_pylist()) if table.num_rows else set()


def affected_hours(paths: HistoryPaths, new_dir: Path) -> list[int]:
    """Hours (epoch micros) whose aggregates the new facts in ``new_dir`` can change:
    the hours of the new facts, plus, for a job whose first registration is new,
    the hours of its older facts (their agent changes). Window values depend only
    on earlier rows, so no other old hour can move."""
    new = _scan(sorted(new_dir.glob("date=*/*.parquet")), ["ts", "type", "job_id"])
    hours = _hours_of(new)
    registered = pc.unique(new.filter(pc.equal(new["type"], JOB_REGISTERED))["job_id"])
    if len(registered):
        old_files = sorted(paths.facts.glob("date=*/*.parquet"))
        wanted = [("job_id", "in", registered.to_pylist())]
        old = _scan(old_files, ["ts", "job_id"], filters=wanted)
        hours |= _hours_of(old)
    return sorted(hours)


def jobs_in_hours(paths: HistoryPaths, hours_us: list[int]) -> list[str]:
    """The jobs with any fact in ``hours_us`` (reading only those dates' files)."""
    dates = {datetime.fromtimestamp(us / 1e6, tz=UTC).date().isoformat() for us in hours_us}
    files = [f for d in sorted(dates) for f in sorted(paths.facts.glob(f"date={d}/*.parquet"))]
    facts = _scan(files, ["ts", "job_id"])
    if not facts.num_rows:
        return []
    in_hours = pc.is_in(_hour_micros(facts), value_set=pa.array(hours_us, pa.int64()))
    jobs = facts.filter(in_hours)["job_id"].drop_null()
    return sorted(str(job) for job in pc.unique(jobs).to_pylist())


def context_table(paths: HistoryPaths, hours_us: list[int], jobs: list[str]) -> pa.Table | None:
    """All facts needed to recompute ``hours_us`` exactly (None if there are none):
    every fact of the jobs seen in those hours (for agents, waits and run durations)
    and the restarts in them, picked with a filtered column scan.
    """
    columns = [c for c in FACT_COLUMNS if c != "date"]
    files = sorted(paths.facts.glob("date=*/*.parquet"))
    of_jobs = _scan(files, columns, filters=[("job_id", "in", jobs)]) if jobs else None
    dates = {datetime.fromtimestamp(us / 1e6, tz=UTC).date().isoformat() for us in hours_us}
    in_dates = [f for f in files if f.parent.name.removeprefix("date=") in dates]
    restarts = _scan(in_dates, columns, filters=[("type", "=", CONTROL_STARTED)])
    if restarts.num_rows:
        hours = pa.array(hours_us, pa.int64())
        restarts = restarts.filter(pc.is_in(_hour_micros(restarts), value_set=hours))
    parts = [t for t in (of_jobs, restarts) if t is not None and t.num_rows]
    if not parts:
        return None
    # One chunk: PySpark 4.3's createDataFrame(pa.Table) silently drops every row
    # after an empty chunk, and each facts file that matched nothing is one.
    return pa.concat_tables([p.cast(parts[0].schema) for p in parts]).combine_chunks()


def outputs_usable(paths: HistoryPaths) -> bool:
    """Whether the last build's aggregates and markers can take a merge: both there,
    readable, with every column. Reads only their footers."""
    for target, schema in ((paths.aggregates, AGG_SCHEMA), (paths.markers, MARKER_SCHEMA)):
        try:
            found = pq.read_schema(target)
        except (OSError, pa.ArrowException):
            return False
        if not set(schema.names) <= set(found.names):
            return False
    return True


def write_tables(table: pa.Table, paths: HistoryPaths, hours_us: list[int] | None) -> int:
    """Write the collected result's aggregates and markers, each as one file replaced
    atomically, so a reader never sees half a build; returns the aggregate rows.
    With ``hours_us``, only those hours are replaced in the existing files."""
    is_marker = pc.is_null(table["agent"])
    agg = table.filter(pc.invert(is_marker)).select(list(AGG_COLUMNS)).cast(AGG_SCHEMA)
    markers = table.filter(is_marker).select(list(MARKER_COLUMNS)).cast(MARKER_SCHEMA)
    outputs = [(agg, paths.aggregates, AGG_SCHEMA), (markers, paths.markers, MARKER_SCHEMA)]
    written = []
    for result, target, schema in outputs:
        if hours_us is not None:
            hours = pa.array(hours_us, type=pa.int64()).cast(schema.field("hour").type)
            kept = pq.read_table(target) if target.exists() else schema.empty_table()
            kept = kept.filter(pc.invert(pc.is_in(kept["hour"], value_set=hours)))
            fresh = result.filter(pc.is_in(result["hour"], value_set=hours))
            result = pa.concat_tables([kept.cast(schema), fresh])
        keys = [("hour", "ascending"), ("agent", "ascending")][
            : 2 if target == paths.aggregates else 1
        ]
        result = result.sort_by(keys)
        tmp = target.with_name(target.name + ".tmp")
        pq.write_table(result, tmp)
        os.replace(tmp, target)
        written.append(result.num_rows)
    return int(written[0])
