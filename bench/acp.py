"""Benchmark ACP state detection: an ACP agent's state change -> the registry's activity.

Run:  .venv/bin/python -m bench.acp [--turns 50]

orchestrate's ACP client (app/agents/acp_session.py, what `orchestrate acp-run` runs
in a pane) drives a scripted ACP agent (this module with --agent, a real process over
stdio on the `agent-client-protocol` package's agent side) for ``--turns`` turns.
Each turn the agent asks permission (waiting) and, once answered, ends its turn
(idle), writing the wall-clock time just before it sends each. Latency is the time
until the registry recorded that activity (job_activity.at_ms, millisecond
resolution). A thread answers each question yes as soon as it is recorded.

Baselines in the same run: ``Registry.observe`` called directly (the registry's
own cost of one activity change) and a bare sqlite3 INSERT + COMMIT in WAL mode with
synchronous=NORMAL (as the registry).
(The ACP section of bench/agents.py is to come from this.)
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOAL_SEC = 0.1
"""The issue's goal for structured signals: state change -> registry within 100 ms."""


# -- the scripted agent (a subprocess) -------------------------------------------
def run_agent(times: Path) -> None:
    from acp import PROTOCOL_VERSION, run_agent, update_agent_message_text
    from acp.schema import (
        InitializeResponse,
        NewSessionResponse,
        PermissionOption,
        PromptResponse,
        ToolCallUpdate,
    )

    class Agent:
        conn: Any = None

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            return InitializeResponse(protocol_version=PROTOCOL_VERSION)

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            return NewSessionResponse(session_id=str(uuid.uuid4()))

        async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
            await self.conn.session_update(session_id, update_agent_message_text("working"))
            await asyncio.sleep(0.02)
            options = [PermissionOption(option_id="once", name="Allow", kind="allow_once")]
            call = ToolCallUpdate(tool_call_id="t", title="true", kind="execute")
            note("waiting")
            await self.conn.request_permission(session_id, call, options)
            await asyncio.sleep(0.02)
            note("idle")
            return PromptResponse(stop_reason="end_turn")

    def note(state: str) -> None:
        with times.open("a", encoding="utf-8") as out:
            out.write(json.dumps([state, time.time()]) + "\n")

    asyncio.run(run_agent(Agent()))  # type: ignore[arg-type]


# -- the client side (this process) -------------------------------------------------
def answer_yes(state_dir: Path, job_id: str, stop: threading.Event) -> None:
    """Answer each recorded question as soon as it is there (as the inbox would)."""
    from app.approvals.decision import decide
    from registry.jobs import Registry
    from registry.vocabulary import Answer

    registry = Registry.open(state_dir)
    answered_at = 0
    while not stop.is_set():
        job = registry.get(job_id)
        if job.waiting and (job.activity_at_ms or 0) > answered_at:
            answered_at = job.activity_at_ms or 0
            decide(registry.bus, job_id, Answer.YES, by="bench")
        time.sleep(0.005)
    registry.db.close()


def acp_latencies(turns: int, directory: Path) -> dict[str, list[float]]:
    from app.agents.acp_session import JobRecorder, RunOptions, Session
    from app.agents.acp_view import Transcript
    from registry.jobs import Registry
    from registry.vocabulary import JobStatus

    state_dir = directory / "state"
    registry = Registry.open(state_dir)
    job = registry.register("bench", "acp", "bench")
    registry.set_status(job.job_id, JobStatus.RUNNING, "bench")
    times = directory / "times.jsonl"
    argv = [sys.executable, "-m", "bench.acp", "--agent", str(times)]
    options = RunOptions(state_dir, job.job_id, "acp", argv, directory, "go")
    shown = io.StringIO()
    stop = threading.Event()
    answerer = threading.Thread(target=answer_yes, args=(state_dir, job.job_id, stop))
    answerer.start()

    async def main() -> int:
        typed: asyncio.Queue[str | None] = asyncio.Queue()
        for _ in range(turns - 1):
            typed.put_nowait("go")
        recorder = JobRecorder(state_dir, job.job_id)
        session = Session(options, Transcript(shown), recorder,
                          {**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
        runner = asyncio.create_task(session.run(typed))
        while sent(times) < 2 * turns and not runner.done():
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        typed.put_nowait(None)
        status = await runner
        recorder.close()
        return status

    try:
        if asyncio.run(main()) != 0:
            raise SystemExit(f"bench.acp: the session failed:\n{shown.getvalue()}")
    finally:
        stop.set()
        answerer.join()
    rows = [
        (change.activity, change.at_ms / 1000) for change in registry.activity_history(job.job_id)
    ]
    registry.db.close()
    found: dict[str, list[float]] = {"waiting": [], "idle": []}
    for line in times.read_text().splitlines():
        state, at_sec = json.loads(line)
        later = [at for activity, at in rows if activity == state and at >= at_sec - 0.001]
        if later:
            found[state].append(max(0.0, min(later) - at_sec))
    return found


def sent(times: Path) -> int:
    """How many changes the agent has made so far."""
    return len(times.read_text().splitlines()) if times.exists() else 0


def observe_baseline(count: int, directory: Path) -> list[float]:
    """``Registry.observe`` alone: working and idle alternately, each a change."""
    from registry.activity import Observation
    from registry.jobs import Registry
    from registry.vocabulary import Activity, JobStatus

    registry = Registry.open(directory / "observe")
    job = registry.register("bench", "acp", "bench")
    registry.set_status(job.job_id, JobStatus.RUNNING, "bench")
    took = []
    for index in range(count):
        activity = Activity.WORKING if index % 2 == 0 else Activity.IDLE
        started = time.perf_counter()
        registry.observe(job.job_id, Observation(activity, "acp:acp:bench"))
        took.append(time.perf_counter() - started)
    registry.db.close()
    return took


def sqlite_baseline(count: int, directory: Path) -> list[float]:
    conn = sqlite3.connect(directory / "raw.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # as bus/db.py opens the registry
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, at REAL, activity TEXT)")
    took = []
    for _ in range(count):
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (at, activity) VALUES (?, ?)", (time.time(), "idle"))
        conn.execute("COMMIT")
        took.append(time.perf_counter() - started)
    conn.close()
    return took


def quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--agent", metavar="TIMES", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.agent:
        run_agent(Path(args.agent))
        return 0
    if args.turns < 2:
        parser.error("--turns must be at least 2")
    with tempfile.TemporaryDirectory(prefix="bench-acp-") as name:
        directory = Path(name)
        acp = acp_latencies(args.turns, directory)
        observe = observe_baseline(2 * args.turns, directory)
        raw = sqlite_baseline(2 * args.turns, directory)
    floor = quantile(observe, 0.99)
    print(
        f"ACP state change -> registry ({args.turns} turns; goal p99 <= {GOAL_SEC * 1000:.0f} ms)"
    )
    print(f"{'signal':28} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'p99 / observe':>14}")
    for name, values in [("acp waiting (request)", acp["waiting"]),
                         ("acp idle (end of turn)", acp["idle"]),
                         ("Registry.observe alone", observe),
                         ("sqlite3 insert+commit", raw)]:  # fmt: skip
        p99 = quantile(values, 0.99)
        print(f"{name:28} {len(values):>4} {quantile(values, 0.5) * 1000:>8.1f} "
              f"{p99 * 1000:>8.1f} {max(values) * 1000:>8.1f} {p99 / floor:>14.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
