"""Benchmark the SQLite bus against raw sqlite3 loops and litequeue, in one run.

Run:  .venv/bin/python -m bench.bus [--n 20000]
Needs the bench extra for the litequeue baseline: pip install -e '.[bench]'.
Prints a table: ours, the baseline, and ours/baseline (higher is better for
throughput; for latency the raw numbers are shown).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bus import claims
from bus.db import BusDB, connect, now_ms
from bus.messages import Bus, Outgoing

PRAGMAS = (
    "PRAGMA busy_timeout = 5000",
    "PRAGMA foreign_keys = ON",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
)


def raw_conn(path: Path) -> sqlite3.Connection:
    """A bare connection with the same PRAGMAs and schema as the bus."""
    connect(path).close()  # create the same schema
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in PRAGMAS:
        conn.execute(pragma)
    return conn


def fresh(tmp: Path, name: str) -> Path:
    directory = tmp / name
    directory.mkdir()
    return directory


PAYLOAD = {"progress": 0.5, "step": "tests"}
INSERT = (
    "INSERT INTO messages (id, ts_ms, from_agent, to_agent, type, payload) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


def bench_publish(tmp: Path, n: int) -> tuple[float, float]:
    bus = Bus(BusDB(fresh(tmp, "pub")))
    start = time.perf_counter()
    for _ in range(n):
        bus.publish(Outgoing(type="status", from_agent="a", payload=PAYLOAD))
    ours = n / (time.perf_counter() - start)

    import json

    conn = raw_conn(fresh(tmp, "pubraw") / "state.db")
    start = time.perf_counter()
    for _ in range(n):
        conn.execute("BEGIN")
        conn.execute(
            INSERT, (str(uuid.uuid4()), now_ms(), "a", None, "status", json.dumps(PAYLOAD))
        )
        conn.execute("COMMIT")
    raw = n / (time.perf_counter() - start)
    return ours, raw


def bench_batch(tmp: Path, n: int, batch: int = 100) -> tuple[float, float]:
    import json

    bus = Bus(BusDB(fresh(tmp, "batch")))
    start = time.perf_counter()
    for _ in range(n // batch):
        bus.publish_many(
            Outgoing(type="status", from_agent="a", payload=PAYLOAD) for _ in range(batch)
        )
    ours = n / (time.perf_counter() - start)

    conn = raw_conn(fresh(tmp, "batchraw") / "state.db")
    start = time.perf_counter()
    for _ in range(n // batch):
        rows = [
            (str(uuid.uuid4()), now_ms(), "a", None, "status", json.dumps(PAYLOAD))
            for _ in range(batch)
        ]
        conn.execute("BEGIN")
        conn.executemany(INSERT, rows)
        conn.execute("COMMIT")
    raw = n / (time.perf_counter() - start)
    return ours, raw


def bench_poll(tmp: Path, n: int) -> tuple[float, float]:
    directory = fresh(tmp, "poll")
    bus = Bus(BusDB(directory))
    for _ in range(n // 1000):
        bus.publish_many(
            Outgoing(type="status", from_agent="a", payload=PAYLOAD) for _ in range(1000)
        )
    start = time.perf_counter()
    seq = got = 0
    while batch := bus.read_after(seq, limit=1000):
        seq, got = batch[-1].seq, got + len(batch)
    ours = got / (time.perf_counter() - start)

    conn = sqlite3.connect(directory / "state.db")
    for pragma in PRAGMAS:
        conn.execute(pragma)
    import json

    start = time.perf_counter()
    seq = got = 0
    while rows := conn.execute(
        "SELECT * FROM messages WHERE seq > ? ORDER BY seq LIMIT 1000", (seq,)
    ).fetchall():
        for row in rows:
            json.loads(row[8])  # decode the payload as the bus does
        seq, got = rows[-1][0], got + len(rows)
    raw = got / (time.perf_counter() - start)
    return ours, raw


# -- claims --------------------------------------------------------------------
RAW_CLAIM = (
    "UPDATE task_claims SET state='claimed', claimed_by=?, claimed_at_ms=?, lease_until_ms=?, "
    "attempts=attempts+1 WHERE task_id = (SELECT task_id FROM task_claims WHERE queue=? AND "
    "state!='done' AND lease_until_ms <= ? ORDER BY lease_until_ms LIMIT 1) "
    "RETURNING task_id, attempts"
)
RAW_DONE = (
    "UPDATE task_claims SET state='done', completed_at_ms=?, result=? WHERE task_id=? "
    "AND claimed_by=? AND attempts=? AND state='claimed'"
)


def _ours_worker(state_dir: str, name: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    db = BusDB(Path(state_dir))
    done = 0
    while (claim := claims.claim_next(db.conn, "default", name)) is not None:
        done += claims.complete(db.conn, claim, "ok")
    out.put(done)


def _raw_worker(state_dir: str, name: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    conn = sqlite3.connect(Path(state_dir) / "state.db", isolation_level=None)
    for pragma in PRAGMAS:
        conn.execute(pragma)
    done = 0
    while True:
        now = now_ms()
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(RAW_CLAIM, (name, now, now + 60_000, "default", now)).fetchone()
        conn.execute("COMMIT")
        if row is None:
            break
        conn.execute("BEGIN IMMEDIATE")
        cur = conn.execute(RAW_DONE, (now_ms(), '"ok"', row[0], name, row[1]))
        conn.execute("COMMIT")
        done += cur.rowcount
    out.put(done)


def _litequeue_worker(path: str, name: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from litequeue import LiteQueue

    queue = LiteQueue(path)
    done = 0
    while (message := queue.pop()) is not None:
        queue.done(message.message_id)
        done += 1
    out.put(done)


def _fill_claims(directory: Path, n: int) -> None:
    conn = connect(directory / "state.db")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO task_claims (task_id, lease_until_ms, created_at_ms) VALUES (?, ?, ?)",
        ((f"t{i}", i, i) for i in range(n)),
    )
    conn.execute("COMMIT")
    conn.close()


def _run_procs(target, arg: str, procs: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    workers = [ctx.Process(target=target, args=(arg, f"w{i}", out)) for i in range(procs)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    total = sum(out.get() for _ in workers)
    elapsed = time.perf_counter() - start
    for w in workers:
        w.join()
    return elapsed, total


def bench_claims(tmp: Path, n: int, procs: int) -> dict[str, float]:
    ours_dir = fresh(tmp, f"claims{procs}")
    _fill_claims(ours_dir, n)
    elapsed, total = _run_procs(_ours_worker, str(ours_dir), procs)
    check = connect(ours_dir / "state.db")
    double = check.execute("SELECT count(*) FROM task_claims WHERE attempts > 1").fetchone()[0]
    assert total == n, (total, n)

    raw_dir = fresh(tmp, f"rawclaims{procs}")
    _fill_claims(raw_dir, n)
    raw_elapsed, raw_total = _run_procs(_raw_worker, str(raw_dir), procs)
    assert raw_total == n

    result = {"ours": n / elapsed, "raw": n / raw_elapsed, "double": float(double)}
    try:
        from litequeue import LiteQueue
    except ImportError:
        result["litequeue"] = float("nan")
        return result
    lq_path = str(fresh(tmp, f"lq{procs}") / "lq.db")
    queue = LiteQueue(lq_path)
    for i in range(n):
        queue.put(f"t{i}")
    queue.close()
    lq_elapsed, lq_total = _run_procs(_litequeue_worker, lq_path, procs)
    result["litequeue"] = lq_total / lq_elapsed
    return result


# -- follow latency --------------------------------------------------------------
def _publisher(state_dir: str, count: int, gap: float, stamps: mp.Queue) -> None:  # type: ignore[type-arg]
    bus = Bus(BusDB(Path(state_dir)))
    time.sleep(0.3)
    for i in range(count):
        bus.publish(Outgoing(type="tick", from_agent="p", payload={"i": i, "t": time.time()}))
        time.sleep(gap)


def bench_follow(tmp: Path, count: int = 300, gap: float = 0.01) -> tuple[float, float]:
    directory = fresh(tmp, "follow")
    bus = Bus(BusDB(directory))
    ctx = mp.get_context("fork")
    stamps: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    proc = ctx.Process(target=_publisher, args=(str(directory), count, gap, stamps))
    latencies: list[float] = []
    proc.start()
    for message in bus.follow():
        latencies.append((time.time() - message.payload["t"]) * 1000)
        if len(latencies) == count:
            break
    proc.join()
    qs = statistics.quantiles(latencies, n=100)
    return qs[49], qs[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000, help="messages per throughput test")
    parser.add_argument("--tasks", type=int, default=5_000, help="tasks per claim test")
    args = parser.parse_args()
    rows: list[tuple[str, str, str, str]] = []

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x"

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        ours, raw = bench_publish(tmp, args.n)
        rows.append(
            (
                "publish, commit per message (msg/s)",
                f"{ours:,.0f}",
                f"raw INSERT+COMMIT {raw:,.0f}",
                ratio(ours, raw),
            )
        )
        ours, raw = bench_batch(tmp, args.n * 5)
        rows.append(
            (
                "publish_many, 100 per txn (msg/s)",
                f"{ours:,.0f}",
                f"raw executemany {raw:,.0f}",
                ratio(ours, raw),
            )
        )
        ours, raw = bench_poll(tmp, args.n * 5)
        rows.append(
            (
                "read 1000/batch (msg/s)",
                f"{ours:,.0f}",
                f"raw SELECT seq>? {raw:,.0f}",
                ratio(ours, raw),
            )
        )
        for procs in (1, 4):
            c = bench_claims(tmp, args.tasks, procs)
            rows.append(
                (
                    f"claim+complete, {procs} proc (tasks/s)",
                    f"{c['ours']:,.0f}",
                    f"raw lease SQL {c['raw']:,.0f}",
                    ratio(c["ours"], c["raw"]),
                )
            )
            rows.append(
                (
                    "  same, vs litequeue pop+done",
                    f"{c['ours']:,.0f}",
                    f"litequeue {c['litequeue']:,.0f}",
                    ratio(c["ours"], c["litequeue"]),
                )
            )
            rows.append((f"  double completions, {procs} proc", f"{c['double']:.0f}", "-", "-"))
        p50, p99 = bench_follow(tmp)
        rows.append(
            (
                "follow wake-up after commit (ms)",
                f"p50 {p50:.1f} / p99 {p99:.1f}",
                "other process, 100 msg/s",
                "-",
            )
        )

    width = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("measure", "orchestrate", "baseline", "ratio")
    width = [max(w, len(h)) for w, h in zip(width, header, strict=False)]
    print(f"cpus={os.cpu_count()} python={sys.version.split()[0]} sqlite={sqlite3.sqlite_version}")
    print(" | ".join(h.ljust(w) for h, w in zip(header, width, strict=False)))
    print("-+-".join("-" * w for w in width))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, width, strict=False)))


if __name__ == "__main__":
    main()
