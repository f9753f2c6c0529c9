"""Benchmark the control room on a big registry: first paint, peak RSS, live latency.

Run:  .venv/bin/python -m bench.tui [--jobs 10000] [--messages 1000000] [--rate 1000]
                                    [--seconds 10] [--state DIR]

State: 10,000 jobs and 1,000,000 bus messages are written straight into a fresh
state.db with `executemany` in batches of 50,000 (one real `Registry.register`
gives the row template; the API would take minutes for a million rows).
`--live` jobs stay pending so events can be published to them; the rest are
completed. With `--state DIR` an existing state is reused.

Each case runs in its own subprocess (so `ru_maxrss` is that case's peak):
* paint: a minimal Textual app showing an empty DataTable vs ControlRoomApp
  over the registry, both headless via `run_test(size=(120, 40))`, timed from
  constructing the app to the refresh after its content is in place (for the
  control room: after the first delta from the registry is drawn).
* latency: ControlRoomApp runs headless while another process publishes
  `--rate` events/s with `Registry.publish` (audited=False: the audit log's
  fsync per line is not what is measured) for `--seconds`; for each event,
  publish (the bus row's ts_ms) -> the jobs row updated in the UI, i.e. the
  delta carrying the event has been applied to the DataTable's data (the
  `publish->row` rows), and -> the next frame the compositor draws after that
  apply (`publish->frame drawn`, measured with `call_after_refresh`). The second
  includes rendering; both count every event, also those whose row is scrolled
  out of view (the 100 live jobs sit at the top of the table, above the finished).
  Meanwhile `--preview` (10) of the live jobs print into their pane logs (20 coloured
  lines a second each, from another process), the live preview (the `l` split) is open
  and the cursor moves to the next of them every 0.5 s, so the preview re-reads and
  re-renders a pane through the terminal emulator; its redraws per second are counted.
* waiting -> bell and title: the same app and the same 1k ev/s of progress, while
  another process makes one job of its own ask permission `--waits` times (a
  `permission_required` event, then, 1 s later, progress: it works again). For each
  wait, from the moment the registry records it (the activity change stamped in the
  event's own transaction, as publish->row starts from the bus row) to the moment
  the app has written
  both the bell and the `orchestrate (1 waiting)` title to its terminal (the
  needs-you signals' one writer, `TerminalSignals.write`, which records each write).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = [sys.executable, "-m", "bench.tui"]  # this benchmark again, in a child process

SIZE = (120, 40)
BATCH = 50_000


# -- building the state ---------------------------------------------------------
def build_state(state_dir: Path, jobs: int, messages: int, live: int) -> None:
    """`jobs` job rows (`live` of them pending, the rest completed) and `messages`
    job.event rows spread over them, written with executemany."""
    from registry.jobs import Registry

    registry = Registry.open(state_dir, audited=False)
    template = registry.register("bench template", "bench", "bench-0", sign_events=False)
    conn = sqlite3.connect(state_dir / "state.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    row = conn.execute("SELECT * FROM jobs WHERE job_id = ?", (template.job_id,)).fetchone()
    columns = [d[0] for d in conn.execute("SELECT * FROM jobs LIMIT 0").description]
    base = dict(zip(columns, row, strict=True))
    conn.execute("DELETE FROM messages")
    conn.execute("DELETE FROM job_transitions")
    conn.execute("DELETE FROM task_claims")
    conn.execute("DELETE FROM jobs")
    start_ms = int(time.time() * 1000) - jobs * 1000
    ids = [f"{n:08x}" for n in range(jobs)]
    per_job = max(1, messages // jobs)
    rows = []
    for n, job_id in enumerate(ids):
        finished = n < jobs - live
        values = dict(base)
        values.update(
            job_id=job_id,
            status="completed" if finished else "pending",
            created_at_ms=start_ms + n * 1000,
            agent_session=f"bench-{n % 20}",
            topic_prefix=f"jobs/{job_id}",
            last_event="completed" if finished else None,
            last_detail="done" if finished else None,
            last_seq=per_job,
            max_seen_seq=per_job,
            seq_floor=per_job,
        )
        rows.append(tuple(values[c] for c in columns))
    marks = ",".join("?" * len(columns))
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO jobs ({','.join(columns)}) VALUES ({marks})", rows)
    conn.execute("COMMIT")
    insert = (
        "INSERT INTO messages (id, ts_ms, from_agent, to_agent, type, correlation_id, payload) "
        "VALUES (?, ?, ?, NULL, 'job.event', ?, ?)"
    )
    for first in range(0, messages, BATCH):
        batch = []
        for n in range(first, min(messages, first + BATCH)):
            job_id = ids[(n // per_job) % jobs]
            seq = n % per_job + 1
            payload = json.dumps(
                {
                    "schema_version": 1,
                    "seq": seq,
                    "job_id": job_id,
                    "event": "progress",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "detail": f"step {seq}",
                    "data": {},
                }
            )
            batch.append((f"{job_id}:{seq}", start_ms + n, job_id, job_id, payload))
        conn.execute("BEGIN")
        conn.executemany(insert, batch)
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # as a long-lived state would be
    conn.close()
    registry.db.close()


# -- cases (each in its own subprocess) -------------------------------------------
def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def paint_minimal() -> dict[str, float]:
    """Seconds to the first refresh after mount, wall and the event loop's CPU."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    painted = asyncio.get_running_loop().create_future()

    class Minimal(App[None]):
        def compose(self) -> ComposeResult:
            yield DataTable()

        def on_mount(self) -> None:
            self.call_after_refresh(
                lambda: painted.done() or painted.set_result(time.thread_time())
            )

    start, cpu = time.perf_counter(), time.thread_time()
    app = Minimal()
    async with app.run_test(size=SIZE):
        cpu_at = await asyncio.wait_for(painted, 60)
        return {"paint_s": time.perf_counter() - start, "paint_cpu_s": cpu_at - cpu}


def control_room(state_dir: Path) -> Any:
    from app.settings import Settings
    from app.tui.app import ControlRoomApp
    from app.tui.registry_source import RegistrySource

    source = RegistrySource(Settings(state_dir))
    return ControlRoomApp(source, reconcile_interval_s=None)


async def paint_control_room(state_dir: Path) -> dict[str, float]:
    """Seconds to the first refresh after mount (as for the minimal app), and to the
    refresh after the first registry delta is drawn (rows on screen)."""
    from app.settings import Settings
    from app.tui.app import ControlRoomApp
    from app.tui.registry_source import RegistrySource

    loop = asyncio.get_running_loop()
    mounted, painted = loop.create_future(), loop.create_future()

    def settle(future: asyncio.Future[tuple[float, float]]) -> None:
        if not future.done():
            future.set_result((time.perf_counter(), time.thread_time()))

    class Timed(ControlRoomApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.call_after_refresh(lambda: settle(mounted))

        def on_delta_ready(self) -> None:
            super().on_delta_ready()
            if self.polls_applied:
                self.call_after_refresh(lambda: settle(painted))

    start, cpu = time.perf_counter(), time.thread_time()
    app = Timed(RegistrySource(Settings(state_dir)), reconcile_interval_s=None)
    async with app.run_test(size=SIZE):
        first, first_cpu = await asyncio.wait_for(mounted, 60)
        with_rows, _ = await asyncio.wait_for(painted, 60)
        rows = app.main.query_one("#jobs").row_count  # type: ignore[attr-defined]
        print(json.dumps({"rows": rows}), file=sys.stderr)
        return {
            "paint_s": first - start,
            "paint_cpu_s": first_cpu - cpu,
            "data_s": with_rows - start,
        }


PANE_LINE = (
    "\x1b[32m✓\x1b[0m step {n}: \x1b[1mediting\x1b[0m src/module_{n}.py \x1b[2m(12 lines)\x1b[0m\n"
)


def preview_jobs(state_dir: Path, count: int) -> list[str]:
    """The first `count` live jobs, each given a pane log for the preview to follow."""
    from registry.jobs import Registry

    registry = Registry.open(state_dir, audited=False)
    live = [job.job_id for job in registry.list(status="pending")]
    jobs = (live + [job.job_id for job in registry.list(status="running")])[:count]
    for job_id in jobs:
        log = state_dir / "logs" / job_id / "pane.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(PANE_LINE.format(n=n) for n in range(500)))
    return jobs


def write_panes(state_dir: Path, job_ids: list[str], seconds: float) -> None:
    """Agents printing: each pane log grows by 20 coloured lines a second."""
    logs = [(state_dir / "logs" / job_id / "pane.log").open("a") for job_id in job_ids]
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        for log in logs:
            log.write(PANE_LINE.format(n=n))
            log.flush()
        n += 1
        time.sleep(0.05)


class GcPauses:
    """The garbage collector's passes while it is on: how many full (gen2) ones and
    their CPU each (the thread that triggers a pass runs it), since their pauses set
    publish->row's tail. CPU, so the numbers do not follow the machine's load."""

    def __init__(self) -> None:
        self.full_ms: list[float] = []
        self.young_ms = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
            return
        spent = (time.thread_time() - self._started) * 1000
        if info["generation"] == 2:
            self.full_ms.append(spent)
        else:
            self.young_ms += spent

    def start(self) -> GcPauses:
        import gc

        gc.callbacks.append(self)
        return self

    def stop(self) -> None:
        import gc

        gc.callbacks.remove(self)

    def summary(self) -> dict[str, float]:
        full = sorted(self.full_ms)
        return {
            "gc_full": len(full),
            "gc_full_ms": sum(full),
            "gc_full_max_ms": full[-1] if full else 0.0,
            "gc_full_p50_ms": statistics.median(full) if full else 0.0,
            "gc_young_ms": self.young_ms,
        }


async def latency(state_dir: Path, rate: int, seconds: float, previewed: int) -> dict[str, Any]:
    from app.tui.widgets.jobs_table import JobsTable
    from app.tui.widgets.pane_tail import PaneTail
    from bus.db import now_ms

    preview = preview_jobs(state_dir, previewed)
    app = control_room(state_dir)
    latencies: list[float] = []  # publish -> row in the DataTable's data
    painted: list[float] = []  # publish -> first frame drawn after that
    started_ms = 2**62  # events before the publisher starts are not measured
    original = app.main.apply_delta

    def timed_apply(delta: Any, now: Any) -> bool:
        applied = original(delta, now)
        done = time.time() * 1000
        published = [
            e.ts.timestamp() * 1000
            for e in delta.events
            if e.detail.startswith("bench ") and e.ts.timestamp() * 1000 >= started_ms
        ]
        latencies.extend(done - ts for ts in published)

        def drawn() -> None:
            at = time.time() * 1000
            painted.extend(at - ts for ts in published)

        app.call_after_refresh(drawn)  # runs once the compositor has drawn the frame
        return applied

    app.main.apply_delta = timed_apply  # type: ignore[method-assign]
    renders: list[float] = []  # when the preview drew a new screen of its pane
    tail_shown = PaneTail._show

    def counted_show(tail: PaneTail, lines: Any, width: int) -> None:
        if lines and tail.id == "log-tail":
            renders.append(time.monotonic())
        tail_shown(tail, lines, width)

    PaneTail._show = counted_show  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        while not app.polls_applied:
            await pilot.pause(0.05)
        table = app.main.query_one("#jobs", JobsTable)
        # CPU, not wall: on a shared machine the wall times follow the load, the work
        # the event loop (and the whole process) does per delta does not
        main_cpu, process_cpu, deltas = time.thread_time(), time.process_time(), app.polls_applied
        if preview:  # the live preview open, on one of the printing agents
            table.move_cursor(row=table.get_row_index(preview[0]))
            await pilot.press("l")
        started_ms = now_ms()
        pauses = GcPauses().start()
        writer = subprocess.Popen([*HERE, "_panes", str(state_dir), str(seconds), *preview])
        publisher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.tui",
                "_publish",
                str(state_dir),
                str(rate),
                str(seconds),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        moves = 0
        while publisher.poll() is None:
            await pilot.pause(0.5)
            if preview:  # the person looks at each printing agent in turn
                moves += 1
                table.move_cursor(row=table.get_row_index(preview[moves % len(preview)]))
        writer.wait()
        sent = json.loads(publisher.stdout.read())  # type: ignore[union-attr]
        deadline = time.monotonic() + 10
        while len(painted) < sent["events"] and time.monotonic() < deadline:
            await pilot.pause(0.05)
        caught_up_ms = now_ms() - sent["ended_ms"]
        pauses.stop()
        main_cpu, process_cpu = time.thread_time() - main_cpu, time.process_time() - process_cpu
        deltas = app.polls_applied - deltas
    latencies.sort()
    painted.sort()
    return {
        "painted_p50_ms": statistics.median(painted) if painted else float("nan"),
        "painted_p99_ms": painted[int(len(painted) * 0.99) - 1] if painted else float("nan"),
        "sent": sent["events"],
        "achieved_rate": sent["events"] / sent["seconds"],
        "seen": len(latencies),
        "p50_ms": statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] if latencies else float("nan"),
        "max_ms": latencies[-1] if latencies else float("nan"),
        "caught_up_ms": caught_up_ms,
        "rss_mb": peak_rss_mb(),
        "previewed": len(preview),
        "preview_moves": moves,
        "preview_max_per_s": _max_per_second(renders),
        "preview_renders": len(renders),
        "deltas": deltas,
        "main_cpu_per_delta_ms": main_cpu * 1000 / max(deltas, 1),
        "main_cpu_per_event_ms": main_cpu * 1000 / max(sent["events"], 1),
        "process_cpu_s": process_cpu,
        **pauses.summary(),
    }


def _max_per_second(times: list[float]) -> int:
    """The most preview redraws in any one-second window."""
    best, start = 0, 0
    for end, at in enumerate(times):
        while at - times[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


ASKER = "bench-asker"  # the agent of the job that asks (the publisher leaves it alone)
WAIT_ON_S, WAIT_OFF_S = 1.0, 0.5  # a person's wait is seconds long; merged deltas hide shorter


async def waits(state_dir: Path, rate: int, count: int) -> dict[str, Any]:
    """Each wait of the asker's job -> the bell and the title written (see the docstring)."""
    from collections import deque

    app = control_room(state_dir)
    app.signals.sent = deque(maxlen=100_000)
    seconds = count * (WAIT_ON_S + WAIT_OFF_S) + 1
    async with app.run_test(size=SIZE) as pilot:
        while not app.polls_applied:
            await pilot.pause(0.05)
        here = HERE
        publisher = subprocess.Popen([*here, "_publish", str(state_dir), str(rate), str(seconds)])
        asker = subprocess.Popen(
            [*here, "_ask", str(state_dir), str(count)], stdout=subprocess.PIPE, text=True
        )
        while asker.poll() is None:
            await pilot.pause(0.1)
        asked = json.loads(asker.stdout.read())  # type: ignore[union-attr]
        await pilot.pause(1.0)
        publisher.wait()
    sent = [(at * 1000, what) for at, what in app.signals.sent]
    bells = [at for at, what in sent if what == "bell"]
    titles = [(at, what) for at, what in sent if what.startswith("title ")]
    latencies = []
    starts = asked["asked_ms"]
    for asked_ms, next_ms in zip(starts, [*starts[1:], float("inf")], strict=True):
        # its own bell, rung before the next wait began; and the title saying so by then
        # (it may say so already: the app saw no working in between, only a new wait)
        bell = next((at for at in bells if asked_ms <= at < next_ms), None)
        if bell is None:
            continue
        shown = [(at, what) for at, what in titles if at <= bell + 50]
        if shown and shown[-1][1] == "title orchestrate (1 waiting)":
            latencies.append(max(bell, shown[-1][0]) - asked_ms)
    latencies.sort()
    return {
        "waits": len(asked["asked_ms"]),
        "signalled": len(latencies),
        "bells": len(bells),
        "p50_ms": statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": latencies[max(0, int(len(latencies) * 0.99) - 1)] if latencies else float("nan"),
        "max_ms": latencies[-1] if latencies else float("nan"),
    }


def ask(state_dir: Path, count: int) -> None:
    """One job of its own asks permission `count` times, working in between."""
    from registry.jobs import Registry

    registry = Registry.open(state_dir, audited=False)
    job = registry.register("ask and ask", ASKER, "bench-asker", sign_events=False)
    registry.publish(job.job_id, "started", "asking")
    time.sleep(WAIT_OFF_S)
    asked_ms = []
    for n in range(count):
        registry.publish(job.job_id, "permission_required", f"Allow step {n}?")
        # when the registry says the wait began (stamped in the event's transaction)
        asked_ms.append(registry.get(job.job_id).activity_at_ms)
        time.sleep(WAIT_ON_S)
        registry.publish(job.job_id, "progress", f"step {n} allowed")
        time.sleep(WAIT_OFF_S)
    print(json.dumps({"asked_ms": asked_ms}))


def publish(state_dir: Path, rate: int, seconds: float) -> None:
    """Publish `rate` events/s round-robin over the live (pending/running) jobs."""
    from bus.db import now_ms
    from registry.jobs import Registry

    registry = Registry.open(state_dir, audited=False)
    live = [job.job_id for job in registry.list(status="pending") if job.agent != ASKER]
    live += [job.job_id for job in registry.list(status="running") if job.agent != ASKER]
    total = int(rate * seconds)
    start = time.perf_counter()
    for n in range(total):
        due = start + n / rate
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        registry.publish(live[n % len(live)], "progress", f"bench {n}")
    elapsed = time.perf_counter() - start
    print(json.dumps({"events": total, "seconds": elapsed, "ended_ms": now_ms()}))


def child(argv: list[str]) -> None:
    case, state = argv[0], Path(argv[1]) if len(argv) > 1 else Path()
    if case == "_publish":
        publish(state, int(argv[2]), float(argv[3]))
        return
    if case == "_panes":
        write_panes(state, argv[3:], float(argv[2]))
        return
    if case == "_ask":
        ask(state, int(argv[2]))
        return
    if case == "_minimal":
        result: dict[str, Any] = dict(asyncio.run(paint_minimal()))
    elif case == "_control":
        result = asyncio.run(paint_control_room(state))
    elif case == "_waits":
        result = asyncio.run(waits(state, int(argv[2]), int(argv[3])))
    else:
        result = asyncio.run(latency(state, int(argv[2]), float(argv[3]), int(argv[4])))
    result.setdefault("rss_mb", peak_rss_mb())
    print(json.dumps(result))


def run_child(*args: str) -> dict[str, Any]:
    out = subprocess.run([*HERE, *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{args[0]} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=100, help="jobs left pending for events")
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--state", type=Path, help="reuse (or build into) this state dir")
    parser.add_argument("--repeat", type=int, default=3, help="paint runs per app (median)")
    parser.add_argument(
        "--preview", type=int, default=10, help="agents printing into their panes, previewed"
    )
    parser.add_argument("--waits", type=int, default=20, help="permission waits to signal")
    args = parser.parse_args()
    if args.waits < 1:
        parser.error("--waits must be at least 1 (the bell's latency needs a wait)")
    with tempfile.TemporaryDirectory() as scratch:
        state = args.state or Path(scratch) / "state"
        if not (state / "state.db").exists():
            began = time.perf_counter()
            build_state(state, args.jobs, args.messages, args.live)
            print(
                f"built {args.jobs:,} jobs + {args.messages:,} messages "
                f"in {time.perf_counter() - began:.1f} s ({state})"
            )
        minimal = [run_child("_minimal") for _ in range(args.repeat)]
        control = [run_child("_control", str(state)) for _ in range(args.repeat)]
        live = run_child(
            "_latency", str(state), str(args.rate), str(args.seconds), str(args.preview)
        )
        signals = run_child("_waits", str(state), str(args.rate), str(args.waits))
        quiet = run_child("_waits", str(state), "0", str(args.waits))
    paint_min = statistics.median(r["paint_s"] for r in minimal) * 1000
    paint_ctl = statistics.median(r["paint_s"] for r in control) * 1000
    data_ctl = statistics.median(r["data_s"] for r in control) * 1000
    cpu_min = statistics.median(r["paint_cpu_s"] for r in minimal) * 1000
    cpu_ctl = statistics.median(r["paint_cpu_s"] for r in control) * 1000
    rss_min = max(r["rss_mb"] for r in minimal)
    rss_ctl = max(r["rss_mb"] for r in control)
    rows = [
        (
            "first paint (median ms)",
            f"{paint_ctl:.0f}",
            f"{paint_min:.0f}",
            f"{paint_ctl / paint_min:.2f}x (target <= 1.5x)",
        ),
        (
            "first paint, event loop CPU (median ms)",
            f"{cpu_ctl:.0f}",
            f"{cpu_min:.0f}",
            f"{cpu_ctl / cpu_min:.2f}x (the load-independent ratio)",
        ),
        (
            "first paint with rows (median ms)",
            f"{data_ctl:.0f}",
            "",
            f"{data_ctl / paint_min:.2f}x the minimal app's first paint",
        ),
        ("peak RSS, paint (MB)", f"{rss_ctl:.0f}", f"{rss_min:.0f}", "target <= 300 MB"),
        ("peak RSS, live 1k ev/s (MB)", f"{live['rss_mb']:.0f}", "", "target <= 300 MB"),
        (
            "events published / seen",
            f"{live['sent']:,} / {live['seen']:,}",
            "",
            f"publisher achieved {live['achieved_rate']:.0f} ev/s",
        ),
        (
            "panes previewed (live preview moved)",
            f"{live['previewed']} ({live['preview_moves']}x)",
            "",
            "each pane +20 coloured lines/s",
        ),
        (
            "preview redraws (max in 1 s)",
            f"{live['preview_renders']} ({live['preview_max_per_s']})",
            "",
            "target <= 10 a second",
        ),
        (
            "event loop CPU per delta / per event (ms)",
            f"{live['main_cpu_per_delta_ms']:.1f} / {live['main_cpu_per_event_ms']:.2f}",
            "",
            f"{live['deltas']} deltas drawn; process CPU {live['process_cpu_s']:.1f} s",
        ),
        (
            "full GCs: count / CPU p50 / max / total (ms)",
            f"{live['gc_full']} / {live['gc_full_p50_ms']:.0f} / {live['gc_full_max_ms']:.0f}"
            f" / {live['gc_full_ms']:.0f}",
            "",
            f"young GCs {live['gc_young_ms']:.0f} ms CPU in all",
        ),
        ("publish->row p50 (ms)", f"{live['p50_ms']:.0f}", "", ""),
        ("publish->row p99 (ms)", f"{live['p99_ms']:.0f}", "", "target <= 100 ms"),
        ("publish->row max (ms)", f"{live['max_ms']:.0f}", "", ""),
        ("publish->frame drawn p50 (ms)", f"{live['painted_p50_ms']:.0f}", "", "incl. render"),
        ("publish->frame drawn p99 (ms)", f"{live['painted_p99_ms']:.0f}", "", ""),
        ("caught up after publisher stopped (ms)", f"{live['caught_up_ms']:.0f}", "", ""),
        (
            "waits signalled (bell and title) / asked",
            f"{signals['signalled']} / {signals['waits']}",
            "",
            f"{signals['bells']} bells rung, at 1k ev/s of progress",
        ),
        ("waiting->bell and title p50 (ms)", f"{signals['p50_ms']:.0f}", "", ""),
        ("waiting->bell and title p99 (ms)", f"{signals['p99_ms']:.0f}", "", "target <= 500 ms"),
        ("waiting->bell and title max (ms)", f"{signals['max_ms']:.0f}", "", ""),
        (
            "waiting->bell and title, quiet bus p50/p99",
            f"{quiet['p50_ms']:.0f} / {quiet['p99_ms']:.0f}",
            "",
            f"{quiet['signalled']} / {quiet['waits']} signalled; no other events",
        ),
    ]
    loads = " ".join(f"{load:.1f}" for load in os.getloadavg())
    print(f"\nload average at the end: {loads} (on {os.cpu_count()} cores; wall times follow it)")
    print(f"\n{'measure':<40} {'control room':>16} {'minimal app':>12}  note")
    for name, ours, base, note in rows:
        print(f"{name:<40} {ours:>16} {base:>12}  {note}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        child(sys.argv[1:])
    else:
        main()
