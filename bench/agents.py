"""Benchmark state detection: an agent's state change -> the registry's activity.

Run:  .venv/bin/python -m bench.agents [--panes 20] [--seconds 30] [--interval 0.5]
      .venv/bin/python -m bench.agents answers [--rounds 40]   (answers by meaning, below)

Each case starts `--panes` fake agents in real tmux panes (a private server), as
real jobs, and lets each change state every 1-3 s at random, writing when it did.
The fake agent signals the way the real ones do:

* hook:   runs `orchestrate hook claude` with Claude Code's own payloads
          (UserPromptSubmit, PermissionRequest, Stop), as its hooks would (the full
          path: the client's fallback when no receiver runs);
* hook-rx: runs the hook client an agent's hooks run today (app/hookrx/client.py)
          with the same payloads, answered by the supervisor's resident receiver;
* osc:    writes Codex's `OSC 7501;state=…` sequence into its output;
* screen: draws Aider's screens (its question, its prompt, streamed text), so only
          the screen rules can tell.

A background `orchestrate supervise --interval I` observes them (its CPU time is
read from /proc, as a share of one core). Latency is, for each change the agent
made, the time until the registry recorded that activity (job_activity.at_ms).
Baselines in the same run: a bare `python -c pass` (the floor of a hook process),
and one `tmux capture-pane` per pane per pass (the floor of screen reading).
`--panes 1,20` runs every case at each count. The "one hook process" table times a
single hook with no job, whole process, against a bare `python -c pass` fed the
same stdin, run in turn, the ratio taken pair by pair.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

GOALS = {"hook": 0.2, "hook-rx": 0.1, "osc": 0.2, "screen": 1.5}
STATES = ("working", "waiting", "idle")
CLAUDE_PAYLOAD = {
    "working": {"hook_event_name": "UserPromptSubmit", "prompt": "go"},
    "waiting": {
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test"},
    },
    "idle": {"hook_event_name": "Stop"},
}
OSC = {"working": "working", "waiting": "blocked:app=codex:kind=permission", "idle": "idle"}
RULE = "\u2500" * 60
BARE = [sys.executable, "-I", "-S", "-c", "pass"]
"""The floor of any hook process: an interpreter that does nothing (run after each hook)."""


# -- the fake agent (runs in a pane) ------------------------------------------
def fake_agent(mode: str, changes: Path, seed: int) -> None:
    """Change state every 1-3 s; record each change's time, then signal it."""
    rng = random.Random(seed)
    hook = hook_argv(mode)
    state = "idle"
    with changes.open("a", encoding="utf-8") as log:
        while True:
            time.sleep(rng.uniform(1.0, 3.0))
            state = rng.choice([s for s in STATES if s != state])
            log.write(json.dumps({"state": state, "at": time.time()}) + "\n")
            log.flush()
            if hook:
                payload = json.dumps({**CLAUDE_PAYLOAD[state], "session_id": "bench"})
                for argv, suffix in ((hook, ".hooks"), (BARE, ".bare")):  # BARE: the floor
                    at, started = time.time(), time.perf_counter()
                    subprocess.run(argv, input=payload, text=True, check=False)
                    with changes.with_suffix(suffix).open("a", encoding="utf-8") as took:
                        took.write(f"{at} {time.perf_counter() - started}\n")
            elif mode == "osc":
                sys.stdout.write(f"\x1b]7501;state={OSC[state]}:app=codex\x1b\\")
                sys.stdout.write(f"{state} ...\n")
                sys.stdout.flush()
            else:
                draw_aider(state, rng)


def hook_argv(mode: str) -> list[str]:
    """The hook command of a hook mode (none for the others)."""
    from app.hookrx import hook_command

    if mode == "hook":
        return [sys.executable, "-m", "app", "hook", "claude"]
    return [*hook_command(), "claude"] if mode == "hook-rx" else []


def draw_aider(state: str, rng: random.Random) -> None:
    if state == "waiting":
        print("Tokens: 2.5k sent, 27 received.\nnpm test")
        print("Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: ", end="", flush=True)
    elif state == "idle":
        print(f"\nTokens: 775 sent, 36 received.\n{RULE}\n> ", end="", flush=True)
    else:
        print(
            f"\n> step {rng.randint(1, 99)}\nHere is the change, streamed line by line.", flush=True
        )


# -- the harness -----------------------------------------------------------------
def run_case(mode: str, panes: int, seconds: float, interval: float) -> dict[str, object]:
    from app.control import Orchestrator
    from app.settings import Settings

    state = Path(tempfile.mkdtemp(prefix=f"bench-agents-{mode}-")) / "state"
    socket = f"bench_agents_{uuid.uuid4().hex[:8]}"
    os.environ["ORCHESTRATE_SUPERVISOR"] = "off"  # we start ours, with our interval
    os.environ["ORCHESTRATE_TMUX_SOCKET"] = socket
    orch = Orchestrator(Settings(state), tmux_socket=socket)
    agent = {"hook": "claude", "hook-rx": "claude", "osc": "codex", "screen": "aider"}[mode]
    jobs = []
    try:
        for n in range(panes):
            changes = state.parent / f"changes-{n}.ndjson"
            argv = [
                sys.executable,
                "-m",
                "bench.agents",
                "_agent",
                mode,
                str(changes),
                str(n),
                "{prompt_file}",
            ]
            job = orch.submit(f"bench {n}", agent, f"bench-{n}", agent_cmd=argv, workdir=ROOT)
            jobs.append((job.job_id, changes))
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "app", "--state-dir", str(state), "supervise",
             "--interval", str(interval), "--idle-exit", "600"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        receiver = Path(hook_socket(state))
        deadline = time.monotonic() + 60
        while not receiver.is_socket() and time.monotonic() < deadline:
            time.sleep(0.1)  # its start takes seconds under load: hooks fall back till then
        time.sleep(1.0)
        measured_from = time.time()  # changes made before the supervisor ran do not count
        cpu_start, wall_start = cpu_seconds(supervisor.pid), time.monotonic()
        time.sleep(seconds)
        cpu = (cpu_seconds(supervisor.pid) - cpu_start) / (time.monotonic() - wall_start)
        supervisor.terminate()
        supervisor.wait(10)
        latencies = measure(state, jobs, measured_from)
    finally:
        orch.driver.server.cmd("kill-server")
    return {
        "mode": mode,
        "latencies": latencies,
        "cpu": cpu,
        "hooks": hook_walls(jobs, ".hooks", measured_from),
        "bare": hook_walls(jobs, ".bare", measured_from),
    }


def hook_walls(jobs: list[tuple[str, Path]], suffix: str, since: float) -> list[float]:
    """Each hook process's whole wall time from ``since``, as its agent waited for it
    (hook modes); with ``.bare``, that of the bare interpreter run after it."""
    walls: list[float] = []
    for _, changes in jobs:
        path = changes.with_suffix(suffix)
        lines = path.read_text().splitlines() if path.exists() else []
        walls += [
            float(took) for at, took in (line.split() for line in lines) if float(at) >= since
        ]
    return walls


def hook_socket(state: Path) -> str:
    """Where the supervisor's hook receiver listens."""
    from app.hookrx.client import socket_path

    return socket_path(str(state.resolve()))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(state: Path, jobs: list[tuple[str, Path]], since: float) -> list[float]:
    """For each change an agent made, the delay until the registry had that activity."""
    conn = sqlite3.connect(state / "state.db")
    delays = []
    for job_id, changes in jobs:
        if not changes.exists():
            continue
        made = [json.loads(line) for line in changes.read_text().splitlines() if line.strip()]
        seen = conn.execute(
            "SELECT at_ms, activity FROM job_activity WHERE job_id = ? ORDER BY id", (job_id,)
        ).fetchall()
        for index, change in enumerate(made[:-1]):  # the last may not be seen yet
            if change["at"] < since:
                continue
            until = made[index + 1]["at"]
            hits = [
                at / 1000
                for at, activity in seen
                if activity == change["state"] and change["at"] - 0.05 <= at / 1000 < until
            ]
            if hits:
                delays.append(max(0.0, hits[0] - change["at"]))
    conn.close()
    return delays


def baselines(panes: int) -> dict[str, float]:
    """A bare python process, and a capture-pane per pane (the floors)."""
    started = time.perf_counter()
    for _ in range(5):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    python_ms = (time.perf_counter() - started) / 5 * 1000
    socket = f"bench_base_{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-x", "200", "-y", "50"], check=True)
    started = time.perf_counter()
    for _ in range(panes):
        subprocess.run(
            ["tmux", "-L", socket, "capture-pane", "-p"], capture_output=True, check=True
        )
    capture_ms = (time.perf_counter() - started) * 1000
    subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "app", "hook", "claude"], input="{}", text=True, check=True
    )
    hook_ms = (time.perf_counter() - started) * 1000
    return {"python": python_ms, "captures": capture_ms, "hook": hook_ms}


# -- one hook process, whole, against a bare python (hookrx) ----------------------
def time_process(argv: list[str], stdin: Path) -> float:
    """Wall seconds of one whole process, fed ``stdin`` as an agent feeds its hook."""
    with stdin.open("rb") as given:
        started = time.perf_counter()
        subprocess.run(argv, stdin=given, stdout=subprocess.DEVNULL, check=False)
        return time.perf_counter() - started


def hook_process_ratios(runs: int) -> dict[str, tuple[float, float]]:
    """Median wall ms and the median of pair-by-pair ratios to a bare `python -c pass`,
    for the hook client and for `orchestrate hook`, each with no job to record for."""
    from app.hookrx import hook_command

    stdin = Path(tempfile.mkdtemp(prefix="bench-hook-")) / "stdin.json"
    stdin.write_text(json.dumps({**CLAUDE_PAYLOAD["idle"], "session_id": "bench"}))
    saved = {name: os.environ.pop(name, None) for name in ("ORCHESTRATE_HOME", "ORCHESTRATE_JOB")}
    commands = {
        "hook client (python -I -S)": [*hook_command(), "claude"],
        "orchestrate hook (full path)": [sys.executable, "-m", "app", "hook", "claude"],
    }
    bare = [sys.executable, "-c", "pass"]
    results = {}
    try:
        for name, argv in commands.items():
            time_process(argv, stdin)  # warm the page cache
            walls, ratios = [], []
            for _ in range(runs):
                wall = time_process(argv, stdin)
                walls.append(wall)
                ratios.append(wall / time_process(bare, stdin))
            results[name] = (percentile(walls, 0.5) * 1000, percentile(ratios, 0.5))
    finally:
        os.environ.update({k: v for k, v in saved.items() if v is not None})
    return results


def print_hook_process(runs: int) -> None:
    print(f"\none hook process, no job, {runs} runs in turn with a bare `python -c pass`")
    print(f"{'command':<30} {'median ms':>10} {'x bare python':>14} {'goal':>6}")
    for name, (wall_ms, ratio) in hook_process_ratios(runs).items():
        print(f"{name:<30} {wall_ms:>10.0f} {ratio:>14.2f} {1.5:>6.1f}")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    if sys.argv[1:2] == ["_agent"]:
        fake_agent(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))
        return
    if sys.argv[1:2] == ["answers"]:
        answers_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panes", default="20", help="a count, or counts: 1,20")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--modes", default="hook,hook-rx,osc,screen")
    parser.add_argument("--runs", type=int, default=20, help="runs of the one-process table")
    args = parser.parse_args()
    counts = [int(n) for n in str(args.panes).split(",")]
    floor = baselines(max(counts))
    print(f"{args.panes} panes, {args.seconds:.0f} s a case, a pass every {args.interval} s")
    print(f"load before: {os.getloadavg()[0]:.2f}")
    head = (
        "signal",
        "panes",
        "changes",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "goal p99",
        "supervisor CPU",
    )
    print(
        f"\n{head[0]:<8} {head[1]:>5} {head[2]:>8} {head[3]:>8} {head[4]:>8} {head[5]:>8} "
        f"{head[6]:>9} {head[7]:>15}"
    )
    for panes, mode in [(n, m) for n in counts for m in args.modes.split(",")]:
        result = run_case(mode, panes, args.seconds, args.interval)
        delays = result["latencies"]
        assert isinstance(delays, list)
        print(
            f"{mode:<8} {panes:>5} {len(delays):>8} {percentile(delays, 0.5) * 1000:>8.0f} "
            f"{percentile(delays, 0.9) * 1000:>8.0f} "
            f"{percentile(delays, 0.99) * 1000:>8.0f} {GOALS[mode] * 1000:>8.0f}  "
            f"{float(result['cpu']) * 100:>13.1f} %"  # type: ignore[arg-type]
        )
        walls, bare = result["hooks"], result["bare"]
        assert isinstance(walls, list) and isinstance(bare, list)
        if walls:
            p50, p99 = percentile(walls, 0.5) * 1000, percentile(walls, 0.99) * 1000
            print(
                f"{'':<14} the hook process alone (the agent waits): p50 {p50:.0f}, p99 {p99:.0f}"
            )
            p50, p99 = percentile(bare, 0.5) * 1000, percentile(bare, 0.99) * 1000
            print(f"{'':<14} bare `python -I -S -c pass`, same panes: p50 {p50:.0f}, p99 {p99:.0f}")
    print(
        f"\nbaselines: bare python start {floor['python']:.0f} ms; `orchestrate hook` "
        f"(nothing to record) {floor['hook']:.0f} ms; {max(counts)} capture-pane calls "
        f"{floor['captures']:.0f} ms (one screen pass's floor)"
    )
    print_hook_process(args.runs)


# -- answers: by meaning against the blind key -------------------------------------
# `python -m bench.agents answers [--rounds N]`. A real tmux pane draws Claude Code
# 2.1.332's trust dialog (tests/approvals/selection_list.py: "No, exit" marked,
# "Yes, I trust this folder" below it), its output piped to a log as orchestrate's
# panes are. Each round times, from the answer's first call to the dialog gone from
# the screen (seen the same way for every path):
#   keys:             the old path: the screen read, its trust rule matched, then one
#                     send-keys of the keys (Down Enter) with no further reading;
#   meaning:          app/approvals/selection.py as `answer` runs it: read, plan, move,
#                     the marker checked on screen, Enter; waits on the pane log;
#   meaning (polled): the same with no log, the screen re-read every 10 ms (before).
LIST_SCRIPT = ROOT / "tests" / "approvals" / "selection_list.py"
TRUST = ("No, exit", "Yes, I trust this folder")
ANSWER_PATHS = ("keys", "meaning", "meaning (polled)")
ANSWER_GOAL = 1.5  # the meaning path's time over the key path's, at p50 and p99


def answer_round(driver: Any, path: str, log: Path) -> float:
    """One dialog drawn, answered by ``path``, timed until it leaves the screen."""
    from app.agents.claude import Claude
    from app.agents.screen import match_screen
    from app.approvals.dialog import read_dialog
    from app.approvals.keys import output_counter
    from app.approvals.selection import answer_by_meaning, wait_for_screen
    from registry.vocabulary import Answer

    log.write_bytes(b"")
    rules = [rule for rule in Claude.screen_rules if rule.name == "claude.trust"]
    command = " ".join([sys.executable, str(LIST_SCRIPT), *(f"'{word}'" for word in TRUST)])
    session = driver.server.new_session(
        session_name=f"answer_{uuid.uuid4().hex[:6]}", window_command=command, x=100, y=30
    )
    pane = session.active_pane.pane_id
    pane_obj = session.active_pane
    pane_obj.cmd("pipe-pane", "-o", f"cat >> {log}")

    def read() -> list[str]:
        return driver.capture(pane, 40)

    def shown(screen: Any) -> bool:
        return read_dialog(screen) is not None

    try:
        if wait_for_screen(read, shown, 10.0) is None:
            raise RuntimeError("the dialog was never drawn")
        moved = output_counter(log) if path == "meaning" else None
        started = time.perf_counter()
        screen = read()  # both paths read the screen first: the key path its rule
        if path == "keys":
            if match_screen("claude", rules, screen) is None:
                raise RuntimeError("keys: the trust rule does not see the dialog")
            driver.send_key_names(pane, ("Down", "Enter"))
        else:
            send = lambda keys: driver.send_key_names(pane, keys, seen_live=True)  # noqa: E731
            answer_by_meaning(read, send, Answer.YES, moved=moved, first=screen)
        gone = wait_for_screen(read, lambda screen: not shown(screen), 10.0, moved)
        took = time.perf_counter() - started
        if gone is None or "chosen: Yes, I trust this folder" not in "\n".join(gone):
            raise RuntimeError(f"{path}: the dialog did not close on yes")
        return took
    finally:
        session.kill()


def answers_main(argv: list[str]) -> None:
    from app.tmux.driver import TmuxDriver

    parser = argparse.ArgumentParser(prog="python -m bench.agents answers")
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args(argv)
    socket = f"bench_answers_{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "keep"], check=True)
    driver = TmuxDriver(socket)
    times: dict[str, list[float]] = {path: [] for path in ANSWER_PATHS}
    log = Path(tempfile.mkdtemp(prefix="bench-answers-")) / "pane.log"
    try:
        for _ in range(args.rounds):  # interleaved: each path sees the same load
            for path in ANSWER_PATHS:
                times[path].append(answer_round(driver, path, log))
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)
    print(f"answer -> dialog gone, {args.rounds} rounds a path, load {os.getloadavg()[0]:.2f}")
    print(f"\n{'path':<18} {'p50 ms':>8} {'p99 ms':>8} {'p50 x keys':>11} {'p99 x keys':>11}")
    base50, base99 = percentile(times["keys"], 0.5), percentile(times["keys"], 0.99)
    for path in ANSWER_PATHS:
        p50, p99 = percentile(times[path], 0.5), percentile(times[path], 0.99)
        print(
            f"{path:<18} {p50 * 1000:>8.1f} {p99 * 1000:>8.1f} {p50 / base50:>10.2f}x "
            f"{p99 / base99:>10.2f}x"
        )
    print(f"\ngoal: meaning <= {ANSWER_GOAL}x keys (p50 and p99)")


if __name__ == "__main__":
    main()
