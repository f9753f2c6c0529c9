"""The Spark job: bus JSONL export -> facts parquet (by date) -> hourly aggregates.

The only module of orchestrate that imports pyspark. Facts are appended per
build (only lines after the watermark). Aggregates are never merged number by
number: a full build recomputes them from all facts, an incremental one
recomputes the hours the new facts touch from every fact of the jobs seen in
those hours, so a job that starts in one build and ends in the next is
measured exactly as in a full rebuild. See ``registry.history.schema`` for
what every aggregate means; the pyarrow scans and writes around the Spark
work are in ``registry.history.arrow_io``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F

from registry.history.arrow_io import (
    affected_hours,
    context_table,
    jobs_in_hours,
    write_tables,
)
from registry.history.errors import (
    HistoryBuildFailed,
    JavaNotFound,
    java_available,
)
from registry.history.schema import (
    CONTROL_STARTED,
    CORRUPT_COLUMN,
    EVENT_KINDS,
    FACT_COLUMNS,
    INPUT_DDL,
    JOB_EVENT,
    JOB_REGISTERED,
    JOB_STATUS,
    JOB_TYPES,
    KEPT_TYPES,
    TERMINAL_KINDS,
    UNKNOWN_AGENT,
    HistoryPaths,
)
from registry.history.watermark import (
    BuildState,
    ReadPlan,
    load_state,
    move_facts,
    plan_read,
    resolve_input,
    roll_back_interrupted_append,
    save_state,
    swap_in,
    write_journal,
)

Progress = Callable[[str], None]

FACTS_DDL = (
    "seq BIGINT, ts TIMESTAMP, type STRING, job_id STRING, event STRING, "
    "agent STRING, status_to STRING, date DATE"
)
CONTEXT_DDL = FACTS_DDL.removesuffix(", date DATE")
# Past this many jobs in the touched hours, one Spark pass over all facts beats
# picking their facts on the driver and shipping them to Spark as a local relation.
MAX_CONTEXT_JOBS = 20_000
SESSION_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "16",
    "spark.sql.files.maxPartitionBytes": str(64 << 20),
    # collect_list per (hour, agent) runs in ObjectHashAggregate, which falls back
    # to sorting past 128 groups per task; a week of hours x agents is more.
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "65536",
}


@contextlib.contextmanager
def _stderr_to(log_path: Path | None) -> Iterator[None]:
    """Point fd 2 at ``log_path`` while the JVM is spawned, so it inherits the file
    and its log lines never interleave with our progress lines."""
    if log_path is None:
        yield
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.dup2(log_fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log_fd)


def create_session(
    master: str = "local[*]",
    *,
    driver_memory: str = "2g",
    log_path: Path | None = None,
    app_name: str = "orchestrate-history",
) -> SparkSession:
    """A SparkSession set up as FIELD-NOTES measured best (UTC, micros, no UI, AQE)."""
    if not java_available():
        raise JavaNotFound()
    if master.startswith("local"):
        # Loopback only; a real cluster's executors must reach the driver's address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    builder = builder.config("spark.driver.memory", driver_memory)
    for key, value in SESSION_CONF.items():
        builder = builder.config(key, value)
    try:
        with _stderr_to(log_path):
            spark = builder.getOrCreate()
    except (PySparkException, Py4JError, OSError) as exc:
        where = f" (JVM log: {log_path})" if log_path else ""
        raise HistoryBuildFailed(f"cannot start Spark with master {master!r}{where}") from exc
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@dataclass(frozen=True)
class BuildReport:
    """What one build did, for the CLI's summary and the tests."""

    full: bool
    lines_read: int
    malformed: int
    new_facts: int
    facts_rows: int
    agg_rows: int  # -1 when nothing was new and the aggregates were left as they were
    seconds: float


def _parse(spark: SparkSession, plan: ReadPlan) -> tuple[DataFrame, Observation, Observation]:
    """Read the JSONL with an explicit schema; flag (never fail on) malformed lines."""
    raw = (
        spark.read.schema(INPUT_DDL)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .json(list(plan.uris))
    )
    payload = F.col("payload")
    job_id = F.coalesce(F.col("correlation_id"), payload["job_id"])
    kind = F.col("type")
    is_event = kind == JOB_EVENT
    # PERMISSIVE keeps the fields parsed before an error, so a bad payload in a
    # message type we ignore still shows its type and is not counted.
    malformed = (
        F.col("seq").isNull()
        | F.col("ts_ms").isNull()
        | kind.isNull()
        | (F.col(CORRUPT_COLUMN).isNotNull() & kind.isin(*KEPT_TYPES))
        | (kind.isin(*JOB_TYPES) & job_id.isNull())
        | (is_event & ~F.coalesce(payload["event"].isin(*EVENT_KINDS), F.lit(False)))
    )
    lines = Observation("lines")
    kept = Observation("kept")
    flagged = raw.select(
        "seq",
        "ts_ms",
        "type",
        job_id.alias("job_id"),
        "payload",
        malformed.alias("malformed"),
    ).observe(
        lines,
        F.count(F.lit(1)).alias("lines"),
        F.sum(F.col("malformed").cast("long")).alias("malformed"),
    )
    ts = F.timestamp_millis("ts_ms")
    facts = (
        flagged.where(
            ~F.col("malformed") & F.col("type").isin(*KEPT_TYPES) & (F.col("seq") > plan.min_seq)
        )
        .select(
            "seq",
            ts.alias("ts"),
            "type",
            F.when(F.col("type") != CONTROL_STARTED, F.col("job_id")).alias("job_id"),
            F.when(is_event, F.col("payload.event")).alias("event"),
            F.when(F.col("type") == JOB_REGISTERED, F.col("payload.agent")).alias("agent"),
            F.when(F.col("type") == JOB_STATUS, F.col("payload.to")).alias("status_to"),
            F.to_date(ts).alias("date"),
        )
        .observe(
            kept,
            F.count(F.lit(1)).alias("rows"),
            F.max("seq").alias("max_seq"),
            F.max(F.unix_millis("ts")).alias("max_ts_ms"),
        )
    )
    return facts.select(*FACT_COLUMNS), lines, kept


def _percentile(sorted_values: str, fraction: float) -> Column:
    """Spark's exact ``percentile`` (schema.exact_percentile), from a sorted array.

    Same result to the last bit, but 2-3x cheaper than four ``percentile``
    aggregates, whose per-group hash maps dominated the whole aggregation.
    """
    values = F.col(sorted_values)
    position = (F.size(values) - 1) * F.lit(fraction)
    lower, higher = F.floor(position), F.ceil(position)
    low = F.element_at(values, (lower + 1).cast("int")).cast("double")
    high = F.element_at(values, (higher + 1).cast("int")).cast("double")
    return F.when(F.size(values) > 0, low + (position - lower) * (high - low))


def aggregate(facts: DataFrame) -> DataFrame:
    """Hourly per-agent aggregates from the facts (definitions in schema.py).

    One shuffle by job_id feeds a window that finds, for each message, the
    job's agent and its latest earlier enqueue and start; one more groups by
    hour and agent. Restart markers ride along as rows whose agent is null
    (``control.started`` has no job), so the whole thing is a single Spark job.
    """
    ts_ms = F.unix_millis("ts")
    kind = F.col("type")
    registered = kind == JOB_REGISTERED
    enqueue = registered | ((kind == JOB_STATUS) & (F.col("status_to") == "pending"))
    started = (kind == JOB_EVENT) & (F.col("event") == "started")
    by_job = Window.partitionBy("job_id").orderBy("seq")
    earlier = by_job.rowsBetween(Window.unboundedPreceding, -1)
    whole = by_job.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    # The first registration's agent; "unknown" when it named none.
    agent_at_registration = F.when(registered, F.coalesce("agent", F.lit(UNKNOWN_AGENT)))
    first_agent = F.first(agent_at_registration, ignorenulls=True).over(whole)
    timed = facts.select(
        "ts",
        "type",
        "event",
        ts_ms.alias("ts_ms"),
        F.when(kind != CONTROL_STARTED, F.coalesce(first_agent, F.lit(UNKNOWN_AGENT))).alias(
            "agent"
        ),
        F.last(F.when(enqueue, F.col("seq")), ignorenulls=True).over(earlier).alias("enq_seq"),
        F.last(F.when(enqueue, ts_ms), ignorenulls=True).over(earlier).alias("enq_ms"),
        F.last(F.when(started, F.col("seq")), ignorenulls=True).over(earlier).alias("start_seq"),
        F.last(F.when(started, ts_ms), ignorenulls=True).over(earlier).alias("start_ms"),
    )
    terminal = F.col("event").isin(*TERMINAL_KINDS)
    in_attempt = F.col("start_seq").isNotNull() & (
        F.col("enq_seq").isNull() | (F.col("enq_seq") < F.col("start_seq"))
    )
    rows = timed.where(kind != JOB_STATUS).select(
        F.date_trunc("hour", "ts").alias("hour"),
        "agent",
        "type",
        "event",
        F.when(started & F.col("enq_ms").isNotNull(), F.col("ts_ms") - F.col("enq_ms")).alias(
            "wait_ms"
        ),
        F.when(terminal & in_attempt, F.col("ts_ms") - F.col("start_ms")).alias("run_ms"),
    )

    return _hourly(rows)


def _hourly(rows: DataFrame) -> DataFrame:
    """Group the timed rows of ``aggregate`` by hour and agent."""
    kind = F.col("type")

    def count_where(condition: Column) -> Column:
        return F.count(F.when(condition, F.lit(1)))

    completed = count_where(F.col("event") == "completed")
    errored = count_where(F.col("event") == "error")
    return (
        rows.groupBy("hour", "agent")
        .agg(
            count_where(kind == JOB_EVENT).alias("events"),
            count_where(kind == JOB_REGISTERED).alias("jobs_registered"),
            count_where(F.col("event") == "started").alias("jobs_started"),
            completed.alias("jobs_completed"),
            errored.alias("jobs_errored"),
            F.count("run_ms").alias("runs"),
            F.array_sort(F.collect_list("run_ms")).alias("run_values"),
            F.count("wait_ms").alias("waits"),
            F.array_sort(F.collect_list("wait_ms")).alias("wait_values"),
            count_where(kind == CONTROL_STARTED).alias("restarts"),
        )
        .withColumns(
            {
                "run_ms_p50": _percentile("run_values", 0.5),
                "run_ms_p95": _percentile("run_values", 0.95),
                "wait_ms_p50": _percentile("wait_values", 0.5),
                "wait_ms_p95": _percentile("wait_values", 0.95),
            }
        )
        .withColumn(
            "error_rate",
            F.when(
                (F.col("jobs_completed") + F.col("jobs_errored")) > 0,
                F.col("jobs_errored") / (F.col("jobs_completed") + F.col("jobs_errored")),
            ),
        )
    )


def _context(
    spark: SparkSession, paths: HistoryPaths, hours_us: list[int], jobs: list[str]
) -> DataFrame:
    """All facts needed to recompute ``hours_us`` exactly, as a Spark local relation.

    They are a few thousand rows picked with pyarrow (``arrow_io.context_table``):
    a Spark scan of the whole facts directory (listing, a task per file) cost more
    than the aggregation itself.
    """
    table = context_table(paths, hours_us, jobs)
    if table is None:
        return spark.createDataFrame([], CONTEXT_DDL)
    return spark.createDataFrame(table, CONTEXT_DDL)


def _write_tables(hourly: DataFrame, paths: HistoryPaths, hours_us: list[int] | None) -> int:
    """Collect the (small) result once and write it with pyarrow (``arrow_io``)."""
    return write_tables(hourly.toArrow(), paths, hours_us)


def _metric(observation: Observation, name: str) -> int:
    value: Any = observation.get.get(name)
    return int(value) if value is not None else 0


def run_build(
    spark: SparkSession,
    state_dir: Path,
    *,
    input_uri: str | None = None,
    full: bool = False,
    progress: Progress = lambda line: None,
) -> BuildReport:
    """One build: read new input, append facts, recompute aggregates, move the watermark."""
    started_at = time.monotonic()
    paths = HistoryPaths(state_dir)
    spec = resolve_input(input_uri, paths)
    roll_back_interrupted_append(paths, progress)
    previous = None if full else load_state(paths)
    plan = plan_read(spec, previous, paths, full)
    progress(f"input {spec.label}: {plan.reason}")
    try:
        return _run(spark, paths, spec.label, plan, previous, progress, started_at)
    except (PySparkException, Py4JError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HistoryBuildFailed(f"spark build failed: {first}") from exc
    finally:
        shutil.rmtree(paths.staging, ignore_errors=True)


def _run(
    spark: SparkSession,
    paths: HistoryPaths,
    label: str,
    plan: ReadPlan,
    previous: BuildState | None,
    progress: Progress,
    started_at: float,
) -> BuildReport:
    paths.root.mkdir(parents=True, exist_ok=True)
    base = previous if (previous is not None and not plan.full) else BuildState(input=label)
    lines = malformed = new_facts = 0
    hours_us: list[int] = []
    state = BuildState(
        input=label,
        build_id=uuid.uuid4().hex,
        mode="full" if plan.full else "incremental",
        max_seq=base.max_seq,
        max_ts_ms=base.max_ts_ms,
        files=plan.marks,
        facts_rows=base.facts_rows,
        malformed_total=base.malformed_total,
    )
    if plan.uris:
        facts, line_obs, kept_obs = _parse(spark, plan)
        progress(f"reading {len(plan.uris)} file(s), writing facts")
        if plan.full:
            building = paths.facts.with_name("facts.building")
            shutil.rmtree(building, ignore_errors=True)
            facts.write.mode("overwrite").partitionBy("date").parquet(str(building))
            swap_in(building, paths.facts)
        else:
            new_dir = paths.staging / "facts"
            facts.write.mode("overwrite").partitionBy("date").parquet(str(new_dir))
        lines, malformed = _metric(line_obs, "lines"), _metric(line_obs, "malformed")
        new_facts = _metric(kept_obs, "rows")
        if new_facts:
            state.max_seq = max(state.max_seq, _metric(kept_obs, "max_seq"))
            state.max_ts_ms = max(state.max_ts_ms, _metric(kept_obs, "max_ts_ms"))
        progress(f"read {lines} line(s): {new_facts} new fact(s), {malformed} malformed skipped")
        if new_facts and not plan.full:
            hours_us = affected_hours(paths, new_dir)
            write_journal(paths, state.build_id)
            move_facts(new_dir, paths.facts)
    else:
        progress("no new lines since the last build")
    state.facts_rows += new_facts
    state.malformed_total += malformed
    state.malformed_last = malformed
    state.new_rows_last = new_facts
    agg_rows = -1

    def facts_all() -> DataFrame:
        return spark.read.schema(FACTS_DDL).parquet(str(paths.facts))

    if plan.full or not paths.aggregates.exists():
        progress("aggregating per hour and agent")
        agg_rows = _write_tables(aggregate(facts_all()), paths, None)
    elif hours_us:
        jobs = jobs_in_hours(paths, hours_us)
        if len(jobs) > MAX_CONTEXT_JOBS:  # a big catch-up: one full pass is cheaper
            progress(f"aggregating per hour and agent ({len(hours_us)} hour(s) touched)")
            agg_rows = _write_tables(aggregate(facts_all()), paths, None)
        else:
            progress(f"re-aggregating {len(hours_us)} hour(s) touched by new facts")
            context = _context(spark, paths, hours_us, jobs)
            agg_rows = _write_tables(aggregate(context), paths, hours_us)
    state.built_at_ms = int(time.time() * 1000)
    save_state(paths, state)
    paths.journal.unlink(missing_ok=True)
    seconds = time.monotonic() - started_at
    progress(f"done in {seconds:.1f} s")
    return BuildReport(
        full=plan.full,
        lines_read=lines,
        malformed=malformed,
        new_facts=new_facts,
        facts_rows=state.facts_rows,
        agg_rows=agg_rows,
        seconds=seconds,
    )
