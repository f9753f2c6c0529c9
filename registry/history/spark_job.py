"""The Spark job: facts -> hourly aggregates, usage and restart markers.

The facts are the bus's parquet segments (``registry.history.segments``, the
default: read as typed columns), or facts Spark parses from a JSONL export and
writes by date. It, ``spark_sql`` and ``spark_session`` (which starts and stops the
session) are the only modules of orchestrate that import pyspark. Facts are appended per build
(only what is past the watermark). Aggregates are never merged number by number:
a full build recomputes them from all facts, an incremental one recomputes every
hour from the first one the new facts (or a job still running) can change, from
every fact of the jobs active since, so a job that starts in one build and ends in
the next, or waits across builds, is measured exactly as in a full rebuild. See
``registry.history.schema`` for what every aggregate means. This module is the
build driver: what to read, what to recompute and the watermark. The Spark SQL it
runs is in ``registry.history.spark_sql``; the pyarrow scans and writes around the
Spark work are in ``registry.history.arrow_io``.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Observation, SparkSession

from registry.history.arrow_io import (
    context_table,
    outputs_usable,
    since_hour,
    touched_jobs,
    write_tables,
)
from registry.history.errors import HistoryBuildFailed, NoHistoryInput
from registry.history.job_pass import HOUR_MS
from registry.history.schema import FACTS_DDL, HistoryPaths
from registry.history.segments import (
    compact,
    list_segments,
    segment_malformed,
    segments_from_lines,
)
from registry.history.spark_sql import aggregate, parse_input
from registry.history.stage_progress import STAGE_POLL_S, stage_progress
from registry.history.synthetic import generate_lines
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
from registry.wording import counted

Progress = Callable[[str], None]

# A warm-up build (``warm_up``): enough events for every stage of a build to run.
WARM_UP_EVENTS = 3_000
# Past this many jobs in the touched hours, one Spark pass over all facts beats
# picking their facts on the driver and shipping them to Spark as a local relation.
MAX_CONTEXT_JOBS = 20_000


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


def _context(
    spark: SparkSession, files: list[Path], since_hour_ms: int, jobs: list[str]
) -> DataFrame:
    """All facts needed to recompute the hours from ``since_hour_ms`` exactly, as a
    Spark local relation.

    They are a few thousand rows picked with pyarrow (``arrow_io.context_table``):
    a Spark scan of the whole facts directory (listing, a task per file) cost more
    than the aggregation itself.
    """
    table = context_table(files, since_hour_ms, jobs)
    if table is None:
        return spark.createDataFrame([], FACTS_DDL)
    # One partition satisfies both the window's and the group's distribution, so
    # Spark plans no shuffle at all: 0.2 s instead of 0.4 s on 15,000 facts.
    return spark.createDataFrame(table, FACTS_DDL).coalesce(1)


def _metric(observation: Observation, name: str) -> int:
    value: Any = observation.get.get(name)
    return int(value) if value is not None else 0


def run_build(
    spark: SparkSession,
    state_dir: Path,
    *,
    input_uri: str | None = None,
    full: bool = False,
    cutoff_ms: int | None = None,
    progress: Progress = lambda line: None,
    stage_poll_s: float = STAGE_POLL_S,
) -> BuildReport:
    """One build: read new input, append facts, recompute aggregates, move the watermark.

    The input is the bus's segments when `history build` exported them (and no
    ``input_uri`` is given), else the JSONL export (or ``input_uri``). A job still
    running is counted up to ``cutoff_ms`` (when the bus was exported), at least up
    to the newest fact."""
    started_at = time.monotonic()
    paths = HistoryPaths(state_dir)
    try:
        with stage_progress(spark, progress, stage_poll_s):
            if input_uri is None and paths.segments.is_dir():
                return _run_segments(spark, paths, full, cutoff_ms, progress, started_at)
            spec = resolve_input(input_uri, paths)
            roll_back_interrupted_append(paths, progress)
            previous = None if full else load_state(paths)
            plan = plan_read(spec, previous, paths, full)
            progress(f"input {spec.label}: {plan.reason}")
            return _run(spark, paths, spec.label, plan, previous, cutoff_ms, progress, started_at)
    except (PySparkException, Py4JError) as exc:
        raise HistoryBuildFailed(f"spark build failed: {_first_line(exc)}") from exc
    finally:
        shutil.rmtree(paths.staging, ignore_errors=True)


def _first_line(exc: BaseException) -> str:
    """The line that says what went wrong. A Py4JJavaError's own first line only names
    the call ("An error occurred while calling o50.json"); its Java exception says why
    ("UnsupportedFileSystemException: No FileSystem for scheme "s3a"")."""
    text = str(exc).strip()
    if isinstance(exc, Py4JJavaError):
        with contextlib.suppress(Py4JError):
            text = str(exc.java_exception.toString()).strip() or text
    return text.splitlines()[0] if text else type(exc).__name__


def _new_state(label: str, base: BuildState, full: bool) -> BuildState:
    return BuildState(
        input=label,
        build_id=uuid.uuid4().hex,
        mode="full" if full else "incremental",
        max_seq=base.max_seq,
        max_ts_ms=base.max_ts_ms,
        files=base.files,
        facts_rows=base.facts_rows,
        malformed_total=base.malformed_total,
        cutoff_ms=base.cutoff_ms,
        open_jobs=list(base.open_jobs),
        segments_seq=base.segments_seq,
    )


def _run(
    spark: SparkSession,
    paths: HistoryPaths,
    label: str,
    plan: ReadPlan,
    previous: BuildState | None,
    cutoff_ms: int | None,
    progress: Progress,
    started_at: float,
) -> BuildReport:
    """A build from JSONL: Spark parses the new lines into facts parquet (by date)."""
    paths.root.mkdir(parents=True, exist_ok=True)
    base = previous if (previous is not None and not plan.full) else BuildState(input=label)
    state = _new_state(label, base, plan.full)
    state.files = plan.marks
    lines = malformed = new_facts = 0
    new_files: list[Path] = []
    if plan.uris:
        facts, line_obs, kept_obs = parse_input(spark, plan)
        progress(f"reading {counted(len(plan.uris), 'file')}, writing facts")
        if plan.full:
            building = paths.facts.with_name("facts.building")
            shutil.rmtree(building, ignore_errors=True)
            facts.write.mode("overwrite").partitionBy("date").parquet(str(building))
            # The old watermark goes before the facts it describes: a build stopped
            # between here and save_state leaves no state, so the next one is full
            # instead of appending lines these facts already hold.
            paths.state.unlink(missing_ok=True)
            swap_in(building, paths.facts)
        else:
            new_dir = paths.staging / "facts"
            facts.write.mode("overwrite").partitionBy("date").parquet(str(new_dir))
        lines, malformed = _metric(line_obs, "lines"), _metric(line_obs, "malformed")
        new_facts = _metric(kept_obs, "rows")
        if new_facts:
            state.max_seq = max(state.max_seq, _metric(kept_obs, "max_seq"))
            state.max_ts_ms = max(state.max_ts_ms, _metric(kept_obs, "max_ts_ms"))
        progress(
            f"read {counted(lines, 'line')}: {counted(new_facts, 'new fact')}, "
            f"{malformed} malformed skipped"
        )
        if new_facts and not plan.full:
            new_files = sorted(new_dir.glob("date=*/*.parquet"))
            old_files = _facts_files(paths)
            since = since_hour(old_files, new_files, base.cutoff_ms or state.max_ts_ms)
            write_journal(paths, state.build_id)
            move_facts(new_dir, paths.facts)
            new_files = [paths.facts / p.parent.name / p.name for p in new_files]
    else:
        progress("no new lines since the last build")
    state.malformed_last = malformed
    state.malformed_total += malformed
    state.new_rows_last = new_facts
    state.facts_rows += new_facts

    def facts_all() -> DataFrame:
        return spark.read.schema(FACTS_DDL + ", date DATE").parquet(str(paths.facts))

    agg_rows = _aggregate(
        spark,
        paths,
        state,
        base,
        full=plan.full,
        since=since if new_files else None,
        all_facts=facts_all,
        files=lambda: _facts_files(paths),
        cutoff_ms=cutoff_ms,
        progress=progress,
    )
    return _finish(paths, state, plan.full, lines, malformed, new_facts, agg_rows, progress,
                   started_at)  # fmt: skip


def _facts_files(paths: HistoryPaths) -> list[Path]:
    return sorted(paths.facts.glob("date=*/*.parquet"))


def _run_segments(
    spark: SparkSession,
    paths: HistoryPaths,
    full: bool,
    cutoff_ms: int | None,
    progress: Progress,
    started_at: float,
) -> BuildReport:
    """A build from the bus's parquet segments: nothing to parse or write but the
    aggregates."""
    label = f"segments {paths.segments}"
    previous = None if full else load_state(paths)
    segments = list_segments(paths)
    if not segments:
        raise NoHistoryInput(f"{paths.segments} holds no fact yet: nothing to build")
    files = [s.path for s in segments]
    incremental = previous is not None and previous.input == label
    base = previous if incremental and previous is not None else BuildState(input=label)
    state = _new_state(label, base, not incremental)
    watermark = base.segments_seq if incremental else 0
    new = [s for s in segments if s.last_seq > watermark]
    reason = "full" if not incremental else f"incremental after seq {watermark}"
    progress(f"input {label}: {counted(len(new), 'new segment')}, {reason}")
    if new and any(s.first_seq <= watermark for s in new):  # a merged file spans it
        incremental, base, watermark = False, BuildState(input=label), 0
        state = _new_state(label, base, True)
        new = segments
    new_facts = malformed = 0
    since: int | None = None
    if new:
        stats = _segment_stats([s.path for s in new])
        new_facts, malformed = stats["rows"], stats["malformed"]
        state.max_seq = max(state.max_seq, stats["max_seq"])
        state.max_ts_ms = max(state.max_ts_ms, stats["max_ts_ms"])
        state.segments_seq = new[-1].last_seq
        if incremental:
            old = [s.path for s in segments if s.last_seq <= watermark]
            since = since_hour(old, [s.path for s in new], base.cutoff_ms or state.max_ts_ms)
        progress(f"{counted(new_facts, 'new fact')} in {counted(len(new), 'segment')}, "
                 f"{malformed} malformed skipped")  # fmt: skip
    else:
        progress("no new facts since the last build")
    state.facts_rows = (base.facts_rows if incremental else 0) + new_facts
    state.malformed_last = malformed
    state.malformed_total = (base.malformed_total if incremental else 0) + malformed
    state.new_rows_last = new_facts

    def facts_all() -> DataFrame:
        return spark.read.schema(FACTS_DDL).parquet(*[str(f) for f in files])

    agg_rows = _aggregate(
        spark,
        paths,
        state,
        base,
        full=not incremental,
        since=since,
        all_facts=facts_all,
        files=lambda: files,
        cutoff_ms=cutoff_ms,
        progress=progress,
    )
    report = _finish(paths, state, not incremental, new_facts, malformed, new_facts, agg_rows,
                     progress, started_at)  # fmt: skip
    merged = compact(paths, state.segments_seq)
    if merged:
        progress(f"merged {counted(merged + 1, 'small segment')} into fewer files")
    return report


def _segment_stats(files: list[Path]) -> dict[str, int]:
    """Rows, malformed count, newest seq and fact time of some segments (footers only)."""
    rows = malformed = max_seq = max_ts = 0
    for path in files:
        metadata = pq.ParquetFile(path).metadata
        rows += metadata.num_rows
        malformed += segment_malformed(path)
        for group in range(metadata.num_row_groups):
            for column, name in ((0, "seq"), (1, "ts_ms")):
                stats = metadata.row_group(group).column(column).statistics
                if stats is not None and stats.has_min_max:
                    if name == "seq":
                        max_seq = max(max_seq, int(stats.max))
                    else:
                        max_ts = max(max_ts, int(stats.max))
    return {"rows": rows, "malformed": malformed, "max_seq": max_seq, "max_ts_ms": max_ts}


def _aggregate(
    spark: SparkSession,
    paths: HistoryPaths,
    state: BuildState,
    base: BuildState,
    *,
    full: bool,
    since: int | None,
    all_facts: Callable[[], DataFrame],
    files: Callable[[], list[Path]],
    cutoff_ms: int | None,
    progress: Progress,
) -> int:
    """Recompute what the new facts (or a moved cut-off) change; the aggregate rows
    written, -1 when nothing changed and the outputs were left as they were."""
    cutoff = max(cutoff_ms or 0, state.max_ts_ms)
    state.cutoff_ms = cutoff
    if not full and since is None and base.open_jobs and cutoff != base.cutoff_ms:
        old = base.cutoff_ms or cutoff
        since = min(old, cutoff) - min(old, cutoff) % HOUR_MS  # running jobs ran on
    if full or not outputs_usable(paths):
        if not full and paths.aggregates.exists():
            progress("the last aggregates cannot be read: recomputing them from every fact")
        progress("aggregating per hour and agent")
        written = write_tables(aggregate(all_facts(), cutoff), paths, None)
    elif since is not None:
        facts = files()
        jobs = touched_jobs(facts, since, base.open_jobs)
        if len(jobs) > MAX_CONTEXT_JOBS:  # a big catch-up: one full pass is cheaper
            progress(f"aggregating per hour and agent ({counted(len(jobs), 'job')} touched)")
            written = write_tables(aggregate(all_facts(), cutoff), paths, None)
        else:
            when = datetime.fromtimestamp(since / 1000, tz=UTC).strftime("%Y-%m-%d %H:00")
            progress(f"re-aggregating the hours from {when} UTC ({counted(len(jobs), 'job')})")
            context = _context(spark, facts, since, jobs)
            written = write_tables(aggregate(context, cutoff), paths, since)
    else:
        return -1
    state.open_jobs = written.open_jobs
    return written.agg_rows


def _finish(
    paths: HistoryPaths,
    state: BuildState,
    full: bool,
    lines: int,
    malformed: int,
    new_facts: int,
    agg_rows: int,
    progress: Progress,
    started_at: float,
) -> BuildReport:
    state.built_at_ms = int(time.time() * 1000)
    save_state(paths, state)
    paths.journal.unlink(missing_ok=True)
    seconds = time.monotonic() - started_at
    progress(f"done in {seconds:.1f} s")
    return BuildReport(
        full=full,
        lines_read=lines,
        malformed=malformed,
        new_facts=new_facts,
        facts_rows=state.facts_rows,
        agg_rows=agg_rows,
        seconds=seconds,
    )


def warm_up(spark: SparkSession, events: int = WARM_UP_EVENTS) -> float:
    """A full build of ``events`` generated events in a temporary state dir (removed
    after; nothing of the user's history is touched), so the real build finds Spark
    warm; returns its seconds.

    The first build in a session cost several times a warm one (bench/history.py):
    loading Spark's classes, compiling each stage's generated code, starting the
    Python workers of the per-job pass. That is per plan, not per row, and Spark
    caches generated code by its text, which does not name the files read: a tiny
    build through the same code pays it ahead of time (`history build --when-told`,
    started when the History screen opens)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="orchestrate-warm-up-") as scratch:
        state_dir = Path(scratch)
        lines = generate_lines(events, seed=11)
        segments_from_lines(HistoryPaths(state_dir), lines, per_segment=events // 3)
        run_build(spark, state_dir, full=True)
    return time.monotonic() - started
