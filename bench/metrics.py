"""Benchmark of `orchestrate metrics`: what one scrape costs on a big registry.

Run: .venv/bin/python -m bench.metrics [--jobs 10000] [--messages 1000000] [--keep DIR]

Builds a state dir: the jobs registered through the registry (spread over
agents, statuses and activities as a busy day leaves them), then job events up
to --messages written through the bus's own insert path in the registry's
shape (type job.event, from the job, id <job>:<seq>). Then times, best and
median of several runs, in one process:

* the baseline: a raw sqlite3 connection opened and `SELECT count(*) FROM
  messages` (what any size gauge must at least do), and the events count alone;
* the registry read (`registry.live_stats.read_live_stats`) counting every event
  (what `orchestrate metrics` does once), and with a kept tally after 1,000 new
  events (what each scrape of the server does after its first);
* a scrape over HTTP of a real `orchestrate metrics --serve 0` process (nothing new);
* `orchestrate metrics` as a fresh process (what a cron job pays), against
  `orchestrate --version` (the CLI's start-up alone).
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from bus.db import transaction
from bus.messages import Outgoing, insert_message
from registry.activity import Observation
from registry.bus_types import JOB_EVENT, event_message_id
from registry.events import build_event
from registry.jobs import Registry
from registry.live_stats import EventTally, read_live_stats

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ("claude", "codex", "gemini", "aider", "demo")
BATCH = 10_000


def populate(state_dir: Path, jobs: int, messages: int) -> None:
    """``jobs`` jobs through the registry, then events until the bus holds ``messages``."""
    registry = Registry.open(state_dir, audited=False)  # an fsync per audit line: not measured here
    ids: list[str] = []
    for first in range(0, jobs, 500):  # registry calls join the caller's transaction
        with registry.db.transaction():
            for n in range(first, min(first + 500, jobs)):
                agent = AGENTS[n % len(AGENTS)]
                job = registry.register(f"task {n}", agent, f"s-{agent}", sign_events=False)
                ids.append(job.job_id)
                spread(registry, job.job_id, n)
    conn = registry.db.conn
    have = int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    seqs = {job_id: registry.get(job_id).last_seq for job_id in ids}
    n = 0
    while have < messages:
        with transaction(conn):
            for _ in range(min(BATCH, messages - have)):
                job_id = ids[n % len(ids)]
                n += 1
                seqs[job_id] += 1
                event = build_event(job_id, seqs[job_id], "progress", f"step {seqs[job_id]}")
                message = Outgoing(
                    type=JOB_EVENT,
                    from_agent=job_id,
                    payload=event.to_dict(),
                    correlation_id=job_id,
                    id=event_message_id(job_id, seqs[job_id]),
                )
                insert_message(conn, registry.bus.blobs, message)
                have += 1
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    registry.db.close()


def spread(registry: Registry, job_id: str, n: int) -> None:
    """A busy day's spread: most jobs finished, some live, a few waiting for a person."""
    kind = n % 20
    if kind < 2:
        return  # pending
    registry.set_status(job_id, "running")
    if kind < 6:
        activity = ("working", "waiting", "idle", "stalled")[kind - 2]
        registry.observe(job_id, Observation(activity, "bench"))
    elif kind == 6:
        registry.cancel(job_id)
    else:
        registry.set_status(job_id, "error" if kind == 7 else "completed")


def timed(
    action: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> list[float]:
    """Seconds per run of ``action``; ``before`` runs first each time, untimed."""
    samples = []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def raw_count(db_path: Path, sql: str) -> Callable[[], object]:
    def count() -> object:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            return conn.execute(sql).fetchone()[0]
        finally:
            conn.close()

    return count


def append_events(state_dir: Path, count: int) -> Callable[[], object]:
    """``count`` more events for one job, as the registry files them (untimed)."""
    registry = Registry.open(state_dir, audited=False)
    job_id = registry.list(status="running")[0].job_id

    def append() -> None:
        with transaction(registry.db.conn) as conn:
            seq = int(
                conn.execute(  # its events' ids are <job>:<seq>
                    "SELECT max(CAST(substr(id, 10) AS INTEGER)) FROM messages "
                    "WHERE type = ? AND from_agent = ?",
                    (JOB_EVENT, job_id),
                ).fetchone()[0]
                or 0
            )
            for n in range(seq + 1, seq + 1 + count):
                event = build_event(job_id, n, "progress", f"step {n}")
                message = Outgoing(
                    type=JOB_EVENT,
                    from_agent=job_id,
                    payload=event.to_dict(),
                    correlation_id=job_id,
                    id=event_message_id(job_id, n),
                )
                insert_message(conn, registry.bus.blobs, message)

    return append


def serve(state_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """A real `orchestrate metrics --serve 0`; returns it and its URL (from its stderr line)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--state-dir", str(state_dir), "metrics", "--serve", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://\S+", line)
    if found is None:
        proc.kill()
        raise SystemExit(f"metrics --serve did not start: {line!r}")
    return proc, found.group(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build (or reuse) the state dir here")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-metrics-"))
    state_dir = scratch / "state"
    if not (state_dir / "state.db").exists():
        start = time.perf_counter()
        populate(state_dir, args.jobs, args.messages)
        print(f"built {state_dir} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    db_path = state_dir / "state.db"
    stats = read_live_stats(state_dir, busy_timeout_ms=5000)
    size_mb = db_path.stat().st_size / 1e6
    print(
        f"state dir: {sum(stats.jobs.values()):,} jobs, {stats.bus_messages:,} messages, "
        f"{sum(stats.events.values()):,} events, state.db {size_mb:.0f} MB; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    proc, url = serve(state_dir)
    try:
        tally = EventTally()
        read_live_stats(state_dir, busy_timeout_ms=5000, tally=tally)
        urllib.request.urlopen(url, timeout=60).read()  # the server's first scrape counts all
        rows: list[tuple[str, Callable[[], object], Callable[[], object] | None]] = [
            (
                "raw sqlite3: open, count(*) messages",
                raw_count(db_path, "SELECT count(*) FROM messages"),
                None,
            ),
            (
                "raw sqlite3: open, count(*) job events",
                raw_count(db_path, f"SELECT count(*) FROM messages WHERE type = '{JOB_EVENT}'"),
                None,
            ),
            (
                "registry read, every event counted (once)",
                lambda: read_live_stats(state_dir, busy_timeout_ms=5000),
                None,
            ),
            (
                "registry read, kept tally, +1,000 new events",
                lambda: read_live_stats(state_dir, busy_timeout_ms=5000, tally=tally),
                append_events(state_dir, 1000),
            ),
            (
                "HTTP GET of metrics --serve (a scrape)",
                lambda: urllib.request.urlopen(url, timeout=60).read(),
                None,
            ),
        ]
        baseline = None
        print(f"\n{'':46} {'best ms':>9} {'median ms':>10} {'x baseline':>11}")
        for label, action, before in rows:
            samples = timed(action, args.runs, before)
            best, median = min(samples), statistics.median(samples)
            baseline = baseline or best
            print(f"{label:46} {best * 1000:9.1f} {median * 1000:10.1f} {best / baseline:11.1f}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    cli = [sys.executable, "-m", "app", "--state-dir", str(state_dir)]
    for label, argv in (
        ("fresh process: orchestrate --version", [*cli, "--version"]),
        ("fresh process: orchestrate metrics", [*cli, "metrics"]),
    ):
        samples = timed(lambda argv=argv: subprocess.run(argv, check=True, capture_output=True), 3)
        print(f"{label:46} {min(samples) * 1000:9.1f} {statistics.median(samples) * 1000:10.1f}")


if __name__ == "__main__":
    main()
