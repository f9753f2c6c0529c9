"""Benchmark of the Spark history pipeline on generated bus exports.

Run: .venv/bin/python bench/history.py [--events 1000000] [--master local[*]]
(DuckDB, a bench-only extra: pip install -e '.[bench]').

Measures, side by side: a full build in a fresh JVM (cold) and again in the same
session (warm); Spark's floor (a bare read of the same JSONL + groupBy count in that
session), and the build's own phases against it (its parse with nothing written,
its aggregation of the written facts); DuckDB doing the same aggregation (the
single-machine limit); an incremental build after +1 % events, first and warm
(like the full build, the best of several in the session); and the reader the
TUI uses (pyarrow only).

With --cli it also times what a user waits for: `orchestrate history build` as a
fresh process, full and incremental, without and with the JVM class archive
(registry.history.jvm), including the one build that records the archive.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from registry.history.synthetic import generate_lines

REPEATS = 3  # best of, for the warm full build and the warm incremental alike
CLI_REPEATS = 2  # best of, for each --cli measure but the one recording the archive

DUCKDB_SQL = """
WITH raw AS (
  SELECT * FROM read_json(?, format = 'newline_delimited', ignore_errors = true,
    columns = {seq: 'BIGINT', ts_ms: 'BIGINT', type: 'VARCHAR',
               correlation_id: 'VARCHAR', payload: 'JSON'})
), f AS (
  SELECT seq, ts_ms, type, correlation_id AS job_id,
         payload->>'event' AS event, payload->>'agent' AS agent, payload->>'to' AS status_to
  FROM raw WHERE type IN ('job.registered', 'job.event', 'job.status', 'control.started')
), w AS (
  SELECT *,
    first(CASE WHEN type = 'job.registered' THEN coalesce(agent, 'unknown') END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq
            ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS job_agent,
    last(CASE WHEN type = 'job.registered' OR status_to = 'pending' THEN seq END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS enq_seq,
    last(CASE WHEN type = 'job.registered' OR status_to = 'pending' THEN ts_ms END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS enq_ms,
    last(CASE WHEN event = 'started' THEN seq END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS start_seq,
    last(CASE WHEN event = 'started' THEN ts_ms END IGNORE NULLS)
      OVER (PARTITION BY job_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS start_ms
  FROM f
), r AS (
  SELECT ts_ms // 3600000 AS hour, coalesce(job_agent, 'unknown') AS agent, type, event,
    status_to,
    CASE WHEN event = 'started' AND enq_ms IS NOT NULL THEN ts_ms - enq_ms END AS wait_ms,
    CASE WHEN status_to IN ('completed', 'error') AND start_seq IS NOT NULL
              AND (enq_seq IS NULL OR enq_seq < start_seq) THEN ts_ms - start_ms END AS run_ms
  FROM w WHERE type IN ('job.registered', 'job.event')
    OR (type = 'job.status' AND status_to IN ('completed', 'error'))
)
SELECT hour, agent, count(*) FILTER (WHERE type = 'job.event') AS events,
  count(*) FILTER (WHERE status_to = 'completed') AS completed,
  count(*) FILTER (WHERE status_to = 'error') AS errored,
  quantile_cont(run_ms, 0.5) AS run_p50, quantile_cont(run_ms, 0.95) AS run_p95,
  quantile_cont(wait_ms, 0.5) AS wait_p50, quantile_cont(wait_ms, 0.95) AS wait_p95
FROM r GROUP BY ALL ORDER BY hour, agent
"""


def timed(label: str, action):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = action()
    seconds = time.perf_counter() - started
    print(f"  {label}: {seconds:.2f} s", file=sys.stderr)
    return seconds, result


def cli_timings(
    work: Path, state_dir: Path, export: Path, full_text: str, extra_text: str
) -> list[tuple[str, float, str]]:
    """Wall time of `orchestrate history build` as a user runs it (best of CLI_REPEATS):
    a fresh process each time, full then incremental +1 %, without the class archive,
    then recording it, then with it. Its own cache dir, so the first archive build
    records."""
    env = {**os.environ, "ORCHESTRATE_CACHE_DIR": str(work / "cache")}

    def run(label: str, *flags: str) -> float:
        argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history", "build"]
        started = time.perf_counter()
        subprocess.run([*argv, *flags], env=env, check=True, capture_output=True)
        seconds = time.perf_counter() - started
        print(f"  cli {label}: {seconds:.2f} s", file=sys.stderr)
        return seconds

    def full(label: str, *flags: str) -> float:
        export.write_text(full_text, encoding="utf-8")
        return run(label, "--full", *flags)

    def incremental(label: str, *flags: str) -> float:
        shutil.rmtree(state_dir / "history")
        shutil.copytree(work / "cli-after-full", state_dir / "history")
        export.write_text(full_text + extra_text, encoding="utf-8")
        return run(label, *flags)

    plain_full = full("full, no archive", "--no-class-archive")
    shutil.copytree(state_dir / "history", work / "cli-after-full")
    plain_full = min(plain_full, full("full, no archive", "--no-class-archive"))
    plain_incr = min(
        incremental("incremental, no archive", "--no-class-archive") for _ in range(CLI_REPEATS)
    )
    recording = full("full, recording the archive")
    archive_full = min(full("full, with archive") for _ in range(CLI_REPEATS))
    archive_incr = min(incremental("incremental, with archive") for _ in range(CLI_REPEATS))
    return [
        ("cli full, no class archive", plain_full, "fresh process (C1+C2: 335 MB read)"),
        (
            "cli incremental +1 %, no archive (C1)",
            plain_incr,
            f"{plain_incr / plain_full:.2f}x cli full",
        ),
        ("cli full, recording the archive", recording, "once per Java/Spark version"),
        ("cli full, with archive", archive_full, f"{archive_full / plain_full:.2f}x no archive"),
        (
            "cli incremental +1 %, with archive",
            archive_incr,
            f"{archive_incr / plain_incr:.2f}x no archive, {archive_incr / archive_full:.2f}x full",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (~350 MB)")
    parser.add_argument("--cli", action="store_true", help="also time the CLI (~3 min more)")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from registry.history.schema import CORRUPT_COLUMN, INPUT_DDL, HistoryPaths
    from registry.history.spark_job import FACTS_DDL, aggregate, parse_input, run_build
    from registry.history.spark_session import create_session
    from registry.history.watermark import plan_read, resolve_input

    work = Path(tempfile.mkdtemp(prefix="history-bench-"))
    state_dir = work / "state"
    export = state_dir / "export" / "bus.jsonl"
    export.parent.mkdir(parents=True)
    extra = args.events // 100
    gen_s, lines = timed("generate", lambda: generate_lines(args.events + extra, seed=3))
    export.write_text("".join(lines[: args.events]))
    size_mb = export.stat().st_size / 1e6
    print(f"{args.events} events, {size_mb:.0f} MB JSONL in {work}", file=sys.stderr)

    session_s, spark = timed("session", lambda: create_session(args.master))
    cold_s, _ = timed("cold full build", lambda: run_build(spark, state_dir, full=True))
    warm = [
        timed("warm full build", lambda: run_build(spark, state_dir, full=True))[0]
        for _ in range(REPEATS)
    ]
    uri = export.as_uri()

    def floor() -> int:
        frame = spark.read.schema(INPUT_DDL).json(uri)
        return len(frame.groupBy("type").count().collect())

    floor_s = min(timed("spark floor (read + groupBy count)", floor)[0] for _ in range(REPEATS))

    # Not the floor, context for it: the floor's query needs only `type`, so Spark's
    # JSON reader converts nothing else; any build must also convert the fields below.
    def parse_fields() -> int:
        frame = spark.read.schema(INPUT_DDL).json(uri)
        used = ["seq", "ts_ms", "correlation_id", CORRUPT_COLUMN]
        used += [f"payload.{name}" for name in ("job_id", "agent", "event", "to")]
        return len(frame.groupBy("type").agg(*[F.count(c) for c in used]).collect())

    parse_s = min(
        timed("read of every field the build uses", parse_fields)[0] for _ in range(REPEATS)
    )

    # The build's phases on their own: its parse and checks of every line with the
    # result dropped (Spark's noop sink), and its aggregation of the written facts.
    paths = HistoryPaths(state_dir)

    def build_parse() -> None:
        plan = plan_read(resolve_input(None, paths), None, paths, True)
        parse_input(spark, plan)[0].write.format("noop").mode("overwrite").save()

    def build_aggregate() -> int:
        return aggregate(spark.read.schema(FACTS_DDL).parquet(str(paths.facts))).toArrow().num_rows

    phase_parse_s = min(
        timed("build's parse, nothing written", build_parse)[0] for _ in range(REPEATS)
    )
    phase_agg_s = min(timed("build's aggregation", build_aggregate)[0] for _ in range(REPEATS))

    built = work / "history-after-full"
    shutil.copytree(state_dir / "history", built)
    full_text = export.read_text(encoding="utf-8")
    extra_text = "".join(lines[args.events :])

    def add_one_percent() -> None:
        """Back to the state of the full build, then +1 % lines in the export."""
        shutil.rmtree(state_dir / "history")
        shutil.copytree(built, state_dir / "history")
        export.write_text(full_text + extra_text, encoding="utf-8")

    def incremental(stamp_lines: bool) -> float:
        add_one_percent()
        origin = time.perf_counter()

        def stamp(line: str) -> None:
            if stamp_lines:
                print(f"    {time.perf_counter() - origin:6.2f} {line}", file=sys.stderr)

        seconds, report = timed(
            "incremental +1 %", lambda: run_build(spark, state_dir, progress=stamp)
        )
        assert not report.full and report.lines_read == extra, report
        return float(seconds)

    incr_first = incremental(True)
    incr_s = min(incremental(i == REPEATS) for i in range(1, REPEATS + 1))
    spark.stop()
    cli_rows = cli_timings(work, state_dir, export, full_text, extra_text) if args.cli else []

    duck_s: float | None = None
    try:
        import duckdb
    except ImportError:
        print("  duckdb not installed: pip install -e '.[bench]'", file=sys.stderr)
    else:
        connection = duckdb.connect()
        connection.execute("SET threads = 2")
        duck_s = min(
            timed("duckdb same aggregation", lambda: connection.execute(DUCKDB_SQL, [str(export)]))[
                0
            ]
            for _ in range(REPEATS)
        )

    # The TUI's load: a fresh process importing the reader, then a warm call.
    probe = (
        "import time, sys; t = time.perf_counter(); "
        "from registry.history.reader import load_history; "
        f"s = load_history(__import__('pathlib').Path({str(state_dir)!r})); "
        "cold = time.perf_counter() - t; runs = []\n"
        "for _ in range(20):\n"
        "    t = time.perf_counter(); load_history(__import__('pathlib').Path("
        f"{str(state_dir)!r})); runs.append(time.perf_counter() - t)\n"
        "runs.sort(); print(cold, runs[len(runs) // 2], len(s.rows))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    reader_cold, reader_warm, agg_rows = out.stdout.split()
    # The screen itself on these aggregates: `h` to all three charts drawn (medians).
    screen_bench = [sys.executable, str(Path(__file__).with_name("history_screen.py"))]
    screen = subprocess.run(
        [*screen_bench, "--state-dir", str(state_dir), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    screen_ms = json.loads(screen.stdout)

    warm_s = min(warm)
    rows = [
        ("generate events (python)", gen_s, ""),
        ("new SparkSession", session_s, ""),
        ("full build, cold JVM", cold_s, f"{cold_s / warm_s:.2f}x warm"),
        ("full build, warm", warm_s, f"{warm_s / floor_s:.2f}x floor (target <= 1.5x)"),
        ("spark floor: read + groupBy count", floor_s, "1.00x floor"),
        ("  same, parsing every field used", parse_s, f"{parse_s / floor_s:.2f}x floor (context)"),
        (
            "  build's parse, nothing written",
            phase_parse_s,
            f"{phase_parse_s / floor_s:.2f}x floor",
        ),
        ("  build's aggregation of the facts", phase_agg_s, f"{phase_agg_s / floor_s:.2f}x floor"),
        (
            "duckdb, same aggregation",
            duck_s if duck_s is not None else float("nan"),
            f"{warm_s / duck_s:.1f}x faster than warm spark" if duck_s else "not installed",
        ),
        ("incremental +1 %, first in session", incr_first, f"{incr_first / warm_s:.2f}x full"),
        ("incremental +1 %, warm", incr_s, f"{incr_s / warm_s:.2f}x full (target <= 0.2x)"),
        ("reader load, fresh process", float(reader_cold), f"{agg_rows} hourly rows"),
        ("reader load, warm", float(reader_warm), "(the screen's read)"),
        (
            "history screen: h -> charts drawn",
            screen_ms["h (open) -> 3 charts drawn"] / 1000,
            "median of 20 (h in the first 3 s)",
        ),
        (
            "  same, read ahead (the usual h)",
            screen_ms["h (open), read ahead -> 3 charts drawn"] / 1000,
            "median of 20 (target <= 50 ms)",
        ),
    ]
    print(f"\nhistory bench: {args.events:,} events ({size_mb:.0f} MB), master {args.master}")
    print(f"{'measure':<40} {'seconds':>9}  ratio")
    for name, seconds, ratio in rows + cli_rows:
        print(f"{name:<40} {seconds:>9.3f}  {ratio}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
