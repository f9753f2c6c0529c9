"""Benchmark of the Spark history pipeline on generated bus traffic, both input formats.

Run: .venv/bin/python -m bench.history [--events 1000000] [--master local[*]]
(DuckDB, a bench-only extra: pip install -e '.[bench]').

Measures, in one run and one Spark session, on the same messages:

* the default input, the bus as parquet segments of facts (what `history build`
  exports): the full build cold (first in the session) and warm (best of 3); the
  restated floor, Spark reading the same segments, every column the build uses,
  then grouping; the floor plus one shuffle of every fact by job (the least any
  exact per-job aggregation does); the build's aggregation alone; an incremental
  build after +1 % (a new segment), first and warm;
* the JSONL export as input (`--input`): the full build warm; Spark's floor on it
  (parsing every field the build uses, then grouping); the build's parse alone;
* what the export costs per message: writing segments (fact extraction in Python,
  parquet) against writing the same messages as JSONL;
* DuckDB's aggregation (the single-machine limit) on both formats;
* the reader the TUI uses (pyarrow only) and the History screen opening.

With --cli it also times what a user waits for: `orchestrate history build` as a
fresh process, full and incremental, without and with the JVM class archive.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from registry.history.synthetic import generate_lines

REPEATS = 3  # best of, for the warm full build and the warm incremental alike
CLI_REPEATS = 2
SEGMENT_ROWS = 250_000  # facts per segment in the full input (as compacted)

# The counts and percentiles of schema.py on JSONL (not the time in each activity).
DUCKDB_SQL = """
WITH f AS (
  SELECT seq, ts_ms, type, job_id, status_to FROM {source}
  WHERE type IN ('job.registered', 'job.event', 'job.status', 'job.usage', 'control.started')
), w AS (
  SELECT *,
    first(CASE WHEN type = 'job.registered' THEN 1 END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq
            ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS registered,
    last(CASE WHEN type = 'job.registered' OR status_to = 'pending' THEN ts_ms END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS enq_ms,
    last(CASE WHEN status_to = 'running' THEN ts_ms END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS run_ms
  FROM f
)
SELECT ts_ms // 3600000 AS hour, registered,
  count(*) FILTER (WHERE type = 'job.event') AS events,
  count(*) FILTER (WHERE status_to = 'completed') AS completed,
  quantile_cont(CASE WHEN status_to IN ('completed', 'error') THEN ts_ms - run_ms END, 0.5),
  quantile_cont(CASE WHEN status_to = 'running' THEN ts_ms - enq_ms END, 0.95)
FROM w GROUP BY ALL ORDER BY ALL
"""
DUCKDB_JSONL = """(SELECT seq, ts_ms, type, coalesce(correlation_id, payload->>'job_id') AS job_id,
  payload->>'to' AS status_to FROM read_json(?, format = 'newline_delimited',
  ignore_errors = true, columns = {seq: 'BIGINT', ts_ms: 'BIGINT', type: 'VARCHAR',
  correlation_id: 'VARCHAR', payload: 'JSON'}))"""
DUCKDB_PARQUET = "read_parquet(?)"


CPU_SECONDS: dict[str, float] = {}  # label -> least CPU seconds (this process + Spark's JVM)
JVM_PID: list[int] = []  # the SparkSession's JVM, once there is one


def _cpu_now() -> float:
    """CPU seconds so far of this process, of Spark's JVM (local mode: its tasks run
    there) and of everything the JVM started (the Python workers of the per-job pass,
    reaped ones included). On a shared machine wall time also counts the neighbours;
    CPU time is the work itself, so the table gives both."""
    total = time.process_time()
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in _descendants(JVM_PID):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks
        except (OSError, IndexError, ValueError):
            pass
    return total


def _descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them (from /proc/<pid>/task/*/children)."""
    found, queue = [], list(roots)
    while queue:
        pid = queue.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            with contextlib.suppress(OSError, ValueError):
                queue.extend(int(child) for child in task.read_text().split())
    return found


def timed(label: str, action: Callable[[], Any]) -> tuple[float, Any]:
    started, cpu = time.perf_counter(), _cpu_now()
    result = action()
    seconds, cpu_seconds = time.perf_counter() - started, _cpu_now() - cpu
    print(f"  {label}: {seconds:.2f} s ({cpu_seconds:.2f} s CPU)", file=sys.stderr)
    CPU_SECONDS[label] = min(CPU_SECONDS.get(label, cpu_seconds), cpu_seconds)
    return seconds, result


def best(label: str, action: Callable[[], Any], repeats: int = REPEATS) -> float:
    return min(timed(label, action)[0] for _ in range(repeats))


def write_facts_segments(state_dir: Path, messages: list[dict[str, Any]]) -> int:
    """The messages as segments of SEGMENT_ROWS messages each: what `history build`'s
    export writes (here from already decoded messages, as the bus hands them over)."""
    from registry.history.facts import MALFORMED, Fact, fact_of_message
    from registry.history.schema import HistoryPaths
    from registry.history.segments import facts_table, write_segment

    paths = HistoryPaths(state_dir)
    for start in range(0, len(messages), SEGMENT_ROWS):
        chunk = messages[start : start + SEGMENT_ROWS]
        outcomes = [fact_of_message(m) for m in chunk]
        facts = [f for f in outcomes if isinstance(f, Fact)]
        bad = sum(1 for f in outcomes if f == MALFORMED)
        write_segment(paths, facts_table(facts), chunk[0]["seq"], chunk[-1]["seq"], bad)
    return len(messages)


def cli_timings(
    work: Path, state_dir: Path, extra: list[dict[str, Any]]
) -> list[tuple[str, float, str]]:
    """Wall time of `orchestrate history build` as a user runs it (best of CLI_REPEATS):
    a fresh process each time, full then incremental +1 %, without the class archive,
    then recording it, then with it. Its own cache dir, so the first archive build
    records."""
    env = {**os.environ, "ORCHESTRATE_CACHE_DIR": str(work / "cache")}
    history = state_dir / "history"
    pristine = work / "segments-before"

    def run(label: str, *flags: str) -> float:
        argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history", "build"]
        started = time.perf_counter()
        subprocess.run([*argv, *flags], env=env, check=True, capture_output=True)
        seconds = time.perf_counter() - started
        print(f"  cli {label}: {seconds:.2f} s", file=sys.stderr)
        return seconds

    def full(label: str, *flags: str) -> float:
        return run(label, "--full", *flags)

    def incremental(label: str, *flags: str) -> float:
        shutil.rmtree(history)
        shutil.copytree(work / "cli-after-full", history)
        write_facts_segments(state_dir, extra)
        return run(label, *flags)

    shutil.copytree(history / "segments", pristine)
    plain_full = full("full, no archive", "--no-class-archive")
    shutil.copytree(history, work / "cli-after-full")
    plain_full = min(plain_full, full("full, no archive", "--no-class-archive"))
    plain_incr = min(
        incremental("incremental, no archive", "--no-class-archive") for _ in range(CLI_REPEATS)
    )
    recording = full("full, recording the archive")
    archive_full = min(full("full, with archive") for _ in range(CLI_REPEATS))
    archive_incr = min(incremental("incremental, with archive") for _ in range(CLI_REPEATS))
    return [
        ("cli full, no class archive", plain_full, "fresh process"),
        ("cli incremental +1 %, no archive", plain_incr, f"{plain_incr / plain_full:.2f}x full"),
        ("cli full, recording the archive", recording, "once per Java/Spark version"),
        ("cli full, with archive", archive_full, f"{archive_full / plain_full:.2f}x no archive"),
        ("cli incremental +1 %, with archive", archive_incr,
         f"{archive_incr / plain_incr:.2f}x no archive, {archive_incr / archive_full:.2f}x full"),
    ]  # fmt: skip


CPU_ROWS = (  # label in CPU_SECONDS -> its name in the CPU table, and its base
    ("segments: floor (read every column + groupBy)", "segments: floor", None),
    ("segments: floor + one shuffle/sort by job", "  floor + one shuffle by job", "floor"),
    ("segments: aggregation up to sorted", "  up to the sorted job partitions", "shuffle"),
    ("segments: aggregation up to passed", "  up to the per-job pass (partials)", "shuffle"),
    ("segments: the build's aggregation", "  the build's aggregation", "shuffle"),
    ("segments: warm full build", "segments: full build, warm", "shuffle"),
    ("segments: incremental +1 %", "segments: incremental +1 %", "build"),
    ("jsonl: floor (parse every field used + groupBy)", "jsonl: floor", None),
    ("jsonl: warm full build", "jsonl: full build, warm", "jsonl floor"),
)


def print_cpu_table() -> None:
    """The Spark measures in CPU seconds (this process, Spark's JVM and its Python
    workers, least of the repeats; "shuffle": the floor plus one shuffle by job):
    what each costs whatever else the machine runs."""
    print(f"\n{'CPU seconds (python + JVM)':<44} {'cpu s':>9}  ratio")
    bases = {
        "floor": CPU_SECONDS.get("segments: floor (read every column + groupBy)"),
        "shuffle": CPU_SECONDS.get("segments: floor + one shuffle/sort by job"),
        "build": CPU_SECONDS.get("segments: warm full build"),
        "jsonl floor": CPU_SECONDS.get("jsonl: floor (parse every field used + groupBy)"),
    }
    for label, name, base in CPU_ROWS:
        cpu = CPU_SECONDS.get(label)
        if cpu is None:
            continue
        denominator = bases.get(base) if base else None
        note = f"{cpu / denominator:.2f}x {base}" if denominator else ""
        print(f"{name:<44} {cpu:>9.3f}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (~400 MB)")
    parser.add_argument("--cli", action="store_true", help="also time the CLI (~3 min more)")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from registry.history.schema import (
        CORRUPT_COLUMN,
        FACT_COLUMNS,
        FACTS_DDL,
        INPUT_DDL,
        HistoryPaths,
    )
    from registry.history.segments import list_segments
    from registry.history.spark_job import run_build
    from registry.history.spark_session import create_session
    from registry.history.spark_sql import (
        AGGREGATE_STEPS,
        aggregate,
        aggregate_step,
        parse_input,
    )
    from registry.history.watermark import plan_read, resolve_input

    work = Path(tempfile.mkdtemp(prefix="history-bench-"))
    seg_dir, json_dir = work / "segments-state", work / "jsonl-state"
    export = json_dir / "export" / "bus.jsonl"
    export.parent.mkdir(parents=True)
    n = args.events
    gen_s, lines = timed("generate", lambda: generate_lines(n + n // 100, seed=3))
    export.write_text("".join(lines[:n]))
    size_mb = export.stat().st_size / 1e6
    messages = [json.loads(line) for line in lines]
    extra = messages[n:]
    print(f"{n} events, {size_mb:.0f} MB JSONL in {work}", file=sys.stderr)

    dumps_s = best(
        "messages -> JSONL text (the JSONL export's own work)",
        lambda: "".join(json.dumps(m, separators=(",", ":")) + "\n" for m in messages[:n]),
        1,
    )
    seg_write_s, _ = timed(
        "messages -> segments", lambda: write_facts_segments(seg_dir, messages[:n])
    )
    seg_files = [str(s.path) for s in list_segments(HistoryPaths(seg_dir))]
    seg_mb = sum(os.path.getsize(f) for f in seg_files) / 1e6

    session_s, spark = timed("session", lambda: create_session(args.master))
    gateway = getattr(spark.sparkContext._gateway, "proc", None)
    if gateway is not None:
        JVM_PID.append(gateway.pid)
    cold_s, _ = timed("segments: cold full build", lambda: run_build(spark, seg_dir, full=True))
    warm_s = best("segments: warm full build", lambda: run_build(spark, seg_dir, full=True))

    def seg_frame() -> Any:
        return spark.read.schema(FACTS_DDL).parquet(*seg_files)

    def seg_floor() -> int:
        used = [c for c in FACT_COLUMNS if c != "type"]
        return len(seg_frame().groupBy("type").agg(*[F.count(c) for c in used]).collect())

    def seg_shuffle() -> None:
        frame = seg_frame().repartition("job_id").sortWithinPartitions("job_id", "seq")
        frame.write.format("noop").mode("overwrite").save()

    floor_s = best("segments: floor (read every column + groupBy)", seg_floor)
    shuffle_s = best("segments: floor + one shuffle/sort by job", seg_shuffle)
    agg_s = best("segments: the build's aggregation", lambda: aggregate(seg_frame(), 0))

    def up_to(step: str) -> None:
        frame = aggregate_step(seg_frame(), 0, step)
        frame.write.format("noop").mode("overwrite").save()

    steps = {step: best(f"segments: aggregation up to {step}", lambda s=step: up_to(s), 2)
             for step in AGGREGATE_STEPS}  # fmt: skip

    built = work / "segments-after-full"
    shutil.copytree(seg_dir / "history", built)

    def incremental(stamp_lines: bool) -> float:
        shutil.rmtree(seg_dir / "history")
        shutil.copytree(built, seg_dir / "history")
        write_facts_segments(seg_dir, extra)
        origin = time.perf_counter()

        def stamp(line: str) -> None:
            if stamp_lines:
                print(f"    {time.perf_counter() - origin:6.2f} {line}", file=sys.stderr)

        seconds, report = timed(
            "segments: incremental +1 %", lambda: run_build(spark, seg_dir, progress=stamp)
        )
        assert not report.full and report.new_facts > 0, report
        return float(seconds)

    incr_first = incremental(True)
    incr_s = min(incremental(i == REPEATS) for i in range(1, REPEATS + 1))

    uri = export.as_uri()
    json_build_s = best(
        "jsonl: warm full build",
        lambda: run_build(spark, json_dir, input_uri=str(export), full=True),
        2,
    )

    def json_floor() -> int:
        frame = spark.read.schema(INPUT_DDL).json(uri)
        used = ["seq", "ts_ms", "correlation_id", CORRUPT_COLUMN]
        used += [f"payload.{name}" for name in ("job_id", "agent", "event", "to", "data.activity",
                                                  "at_ms", "model", "input_tokens", "output_tokens",
                                                  "cache_read_tokens", "cache_write_tokens",
                                                  "cost_micro_usd", "measured")]  # fmt: skip
        return len(frame.groupBy("type").agg(*[F.count(c) for c in used]).collect())

    json_floor_s = best("jsonl: floor (parse every field used + groupBy)", json_floor)

    def json_parse() -> None:
        paths = HistoryPaths(json_dir)
        plan = plan_read(resolve_input(str(export), paths), None, paths, True)
        parse_input(spark, plan)[0].write.format("noop").mode("overwrite").save()

    json_parse_s = best("jsonl: the build's parse, nothing written", json_parse)
    spark.stop()
    cli_rows = cli_timings(work, seg_dir, extra) if args.cli else []

    duck: dict[str, float] = {}
    try:
        import duckdb
    except ImportError:
        print("  duckdb not installed: pip install -e '.[bench]'", file=sys.stderr)
    else:
        connection = duckdb.connect()
        connection.execute("SET threads = 2")
        for name, source, param in (
            ("jsonl", DUCKDB_JSONL, str(export)),
            ("segments", DUCKDB_PARQUET, seg_files),
        ):
            query = DUCKDB_SQL.format(source=source)
            duck[name] = best(
                f"duckdb on {name}", lambda q=query, p=param: connection.execute(q, [p]).fetchall()
            )

    # The TUI's load: a fresh process importing the reader, then a warm call.
    probe = (
        "import time, sys; t = time.perf_counter(); "
        "from registry.history.reader import load_history; "
        f"s = load_history(__import__('pathlib').Path({str(seg_dir)!r})); "
        "cold = time.perf_counter() - t; runs = []\n"
        "for _ in range(20):\n"
        "    t = time.perf_counter(); load_history(__import__('pathlib').Path("
        f"{str(seg_dir)!r})); runs.append(time.perf_counter() - t)\n"
        "runs.sort(); print(cold, runs[len(runs) // 2], len(s.rows))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    reader_cold, reader_warm, agg_rows = out.stdout.split()
    screen_bench = [sys.executable, "-m", "bench.history_screen", "--json"]
    screen = subprocess.run(screen_bench, capture_output=True, text=True, check=True)
    screen_ms = json.loads(screen.stdout)

    def ratio(seconds: float, base: float, what: str) -> str:
        return f"{seconds / base:.2f}x {what}"

    nan = float("nan")
    duck_json, duck_seg = duck.get("jsonl", nan), duck.get("segments", nan)
    sizes = f"{seg_mb:.0f} MB parquet vs {size_mb:.0f} MB"
    open_ms = screen_ms["h (open) -> charts drawn"] / 1000
    ahead_ms = screen_ms["h (open), read ahead -> charts drawn"] / 1000
    rows = [
        ("generate events (python)", gen_s, ""),
        ("export: messages -> JSONL text", dumps_s, "the JSONL export's serialising"),
        (
            "export: messages -> segments",
            seg_write_s,
            f"{ratio(seg_write_s, dumps_s, 'JSONL')}; {sizes}",
        ),
        ("new SparkSession", session_s, ""),
        ("segments: full build, cold", cold_s, ratio(cold_s, warm_s, "warm (target <= 2x)")),
        (
            "segments: full build, warm",
            warm_s,
            ratio(warm_s, shuffle_s, "floor + shuffle (target <= 2.0x)"),
        ),
        ("segments: floor, read + groupBy", floor_s, "1.00x floor (every column the build uses)"),
        (
            "  floor + one shuffle by job",
            shuffle_s,
            ratio(shuffle_s, floor_s, "floor: any exact build"),
        ),
        ("  the build's aggregation", agg_s, ratio(agg_s, shuffle_s, "floor + shuffle")),
        (
            "    up to the sorted job partitions",
            steps["sorted"],
            ratio(steps["sorted"], shuffle_s, "floor + shuffle"),
        ),
        (
            "    up to the per-job pass (partials)",
            steps["passed"],
            ratio(steps["passed"], shuffle_s, "floor + shuffle"),
        ),
        ("segments: incremental +1 %, first", incr_first, ratio(incr_first, warm_s, "full")),
        (
            "segments: incremental +1 %, warm",
            incr_s,
            ratio(incr_s, warm_s, "full (target <= 0.2x)"),
        ),
        (
            "jsonl: full build, warm",
            json_build_s,
            ratio(json_build_s, json_floor_s, "jsonl floor; ")
            + ratio(json_build_s, warm_s, "the segments build"),
        ),
        (
            "jsonl: floor, parse every field + groupBy",
            json_floor_s,
            ratio(json_floor_s, floor_s, "segments floor"),
        ),
        (
            "  the build's parse, nothing written",
            json_parse_s,
            ratio(json_parse_s, json_floor_s, "jsonl floor"),
        ),
        (
            "duckdb on jsonl (counts + percentiles)",
            duck_json,
            ratio(json_build_s, duck_json, "spark jsonl build"),
        ),
        (
            "duckdb on segments (same query)",
            duck_seg,
            ratio(warm_s, duck_seg, "spark's warm build"),
        ),
        ("reader load, fresh process", float(reader_cold), f"{agg_rows} hourly rows"),
        ("reader load, warm", float(reader_warm), "(the screen's read)"),
        ("history screen: h -> charts drawn", open_ms, "median of 20 (h in the first 3 s)"),
        ("  same, read ahead (the usual h)", ahead_ms, "median of 20 (target <= 50 ms)"),
        ("  same, CPU time", screen_ms["  same, CPU time of the process"] / 1000, "median of 20"),
    ]
    print(f"\nhistory bench: {n:,} events ({size_mb:.0f} MB JSONL), master {args.master}")
    print(f"{'measure':<44} {'seconds':>9}  ratio")
    for name, seconds, note in rows + cli_rows:
        print(f"{name:<44} {seconds:>9.3f}  {note}")
    print_cpu_table()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
