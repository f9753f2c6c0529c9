"""Benchmark budgets: what reading the spend costs a supervision pass, and how soon after
a model response is written to the transcript the job is found past its budget.

Run:  .venv/bin/python -m bench.budget [--jobs 20] [--messages 400] [--trials 20]

1. A pass's check: ``BudgetWatch.check`` over N running Claude jobs with budgets, each
   with a real-format transcript of M model messages (two lines each, as Claude Code
   writes one with a tool call). Steady state (no transcript moved: a stat per job),
   and one transcript grown by one message (that one read again, priced, its spend and
   usage recorded). Baselines in the same run: a bare ``os.stat`` of the N files, and
   ``json.loads`` of every line of one transcript (the floor of reading it).
2. Latency: a thread appends a message that crosses the budget at a random moment,
   while the check runs at the supervisor's pass interval (PASS_INTERVAL_SEC); from
   the write to the check that finds it. The real Claude test
   (tests/budget/test_claude_budget.py) prints the same figure from a real agent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from app.supervision.supervisor import PASS_INTERVAL_SEC
from app.usage.budget import BudgetWatch
from registry.budget import BudgetStore
from registry.jobs import Registry
from registry.records import Job

PRICES = '[[price]]\nmodel = "*opus*"\ninput = 15\noutput = 75\ncache_read = 1.5\n'


def message(number: int, output_tokens: int = 300) -> str:
    """One Claude Code API message as its transcript writes it: a text line and a tool line."""
    body = {
        "id": f"msg_{number:06d}",
        "model": "claude-opus-4-1",
        "usage": {"input_tokens": 1200, "output_tokens": output_tokens,
                  "cache_read_input_tokens": 30_000, "cache_creation_input_tokens": 500},
        "content": [{"type": "text", "text": "x" * 400}],
    }  # fmt: skip
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    line = json.dumps({"type": "assistant", "timestamp": stamp, "message": body})
    return line + "\n" + line + "\n"


def setup(root: Path, jobs: int, messages: int) -> tuple[Registry, list[Job], dict[str, str]]:
    state = root / "state"
    state.mkdir()
    (state / "prices.toml").write_text(PRICES)
    registry = Registry.open(state)
    store = BudgetStore(registry.bus)
    config = root / "claude"
    made = []
    for index in range(jobs):
        job = registry.register("p", "claude", f"s{index}")
        session = f"00000000-0000-4000-8000-{index:012d}"
        registry.set_agent_session_id(job.job_id, session)
        registry.set_status(job.job_id, "running", "bench")
        store.set_budget(job.job_id, 10**10)  # $10,000: never crossed here
        path = config / "projects" / "-work" / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(message(n) for n in range(messages)))
        made.append(registry.get(job.job_id))
    return registry, made, {"CLAUDE_CONFIG_DIR": str(config)}


def transcript(env: dict[str, str], job: Job) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-work" / f"{job.agent_session_id}.jsonl"


def timed(action: object, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return times


def row(name: str, times: list[float]) -> str:
    times = sorted(times)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    return f"{name:<52} {statistics.median(times):>9.2f} {p99:>9.2f} {max(times):>9.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        registry, jobs, env = setup(Path(tmp), args.jobs, args.messages)
        state = Path(tmp) / "state"
        watch = BudgetWatch(registry, state, env)
        watch.check(jobs)  # first read of every transcript
        paths = [transcript(env, job) for job in jobs]
        size = paths[0].stat().st_size
        print(f"{args.jobs} running jobs, {args.messages} messages ({size >> 10} KiB) each\n")
        print(f"{'what (ms)':<52} {'p50':>9} {'p99':>9} {'max':>9}")
        steady = timed(lambda: watch.check(jobs), args.trials)
        stats = timed(lambda: [os.stat(p) for p in paths], args.trials)
        counter = iter(range(10**6, 2 * 10**6))

        def grow_one() -> None:
            with paths[0].open("a") as handle:
                handle.write(message(next(counter)))
            watch.check(jobs)

        grown = timed(grow_one, args.trials)

        def parse_one() -> None:
            with paths[0].open() as handle:
                for line in handle:
                    json.loads(line)

        parsed = timed(parse_one, args.trials)
        print(row("check, nothing moved (steady pass)", steady))
        print(row("  baseline: os.stat of every transcript", stats))
        print(row("check, one transcript grew by one message", grown))
        print(row("  baseline: json.loads of that transcript's lines", parsed))
        steady_ratio = statistics.median(steady) / statistics.median(stats)
        grown_ratio = statistics.median(grown) / statistics.median(parsed)
        print(f"\nratios (p50): steady/stat {steady_ratio:.1f}x, grown/parse {grown_ratio:.1f}x")
        print(latency(registry, jobs[1], transcript(env, jobs[1]), watch, args.trials))


def latency(registry: Registry, job: Job, path: Path, watch: BudgetWatch, trials: int) -> str:
    """From a crossing message's write to the pass that finds it, at the pass interval."""
    store = BudgetStore(registry.bus)
    found: list[float] = []
    for trial in range(trials):
        spent = store.get(job.job_id)
        base = spent.spent_micro_usd if spent is not None else 0
        store.set_budget(job.job_id, base + 1_000_000)  # $1 more than spent so far
        at: list[float] = []

        def write(number: int = trial, at: list[float] = at) -> None:
            time.sleep(random.uniform(0, PASS_INTERVAL_SEC))
            with path.open("a") as handle:
                handle.write(message(3 * 10**6 + number, output_tokens=100_000))  # $7.50
            at.append(time.perf_counter())

        writer = threading.Thread(target=write)
        writer.start()
        while True:
            crossed = watch.check([job])
            if crossed:
                found.append((time.perf_counter() - at[0]) * 1000)
                break
            time.sleep(PASS_INTERVAL_SEC)
        writer.join()
    return "\n" + row(f"write -> found, passes every {PASS_INTERVAL_SEC} s", found)


if __name__ == "__main__":
    main()
