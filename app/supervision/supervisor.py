"""The background supervisor: one process per state dir that keeps observing running
agents when nobody watches (a `submit --no-wait`, a closed control room).

It runs `orchestrate supervise`, started detached by whatever starts an agent,
holds ``<state>/supervisor.lock`` so there is only ever one, and exits on its own
once no job has run for a while or its tmux server is gone. Observing twice is
harmless (the registry drops repeated sightings), so a control room or a waiting
`submit` may observe beside it. While it runs it also receives agents' hooks
(app/hookrx/receiver.py), unless a control room already does: one of them holds the
receiver lock, the other stands by to take over (app/hookrx/slot.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Protocol

from app.agents.env import spawn_orchestrate
from app.hookrx.slot import receiving
from app.settings import JOB_ENV, JOB_TOKEN_ENV, TMUX_SOCKET_ENV, Settings
from app.supervision.log_watch import LogWatch
from app.supervision.reconcile import ReconcileReport
from registry.vocabulary import Activity

LOCK_NAME = "supervisor.lock"
SWITCH_ENV = "ORCHESTRATE_SUPERVISOR"
"""``off`` never starts one (tests that judge passes themselves set it)."""
PASS_INTERVAL_SEC = 0.5
OUTPUT_INTERVAL_SEC = 0.1
"""Between full passes, status sequences in new output are read at most this often."""
QUIET_PASS_SEC = 2.0
"""While no pane writes (so no screen can have changed), a full pass this often, not
every ``interval``: for what shows no output (a pane's death, a stall, a lease)."""
WAKE_SEC = 1.0
"""How often the output reader checks, with no output, whether it should stop."""
IDLE_EXIT_SEC = 60.0


@contextlib.contextmanager
def held_lock(state_dir: Path, patience_sec: float = 0.0) -> Iterator[IO[str] | None]:
    """The supervisor lock, if free within ``patience_sec`` (None: another supervisor
    holds it). A probe (`running`) holds it for an instant: a starting supervisor
    waits that out rather than taking the probe for a rival."""
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = (state_dir / LOCK_NAME).open("a+", encoding="utf-8")
    deadline = time.monotonic() + patience_sec
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield None
                    return
                time.sleep(0.02)
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield handle
    finally:
        handle.close()


def running(state_dir: Path) -> bool:
    """Whether a supervisor holds the lock of ``state_dir`` now."""
    with held_lock(state_dir) as lock:
        return lock is None


class Supervisable(Protocol):
    """What `supervise` drives (the Orchestrator; a Protocol, so no import circle)."""

    settings: Settings

    def reconcile(self) -> ReconcileReport: ...

    def reconcile_output(self) -> int: ...

    def tmux_running(self) -> bool: ...

    def pane_log(self, job_id: str) -> Path: ...


def ensure_started(state_dir: Path, tmux_socket: str) -> bool:
    """Start the supervisor of this state dir unless one runs (or it is switched off).
    True if one was started."""
    if os.environ.get(SWITCH_ENV, "").lower() in ("off", "0", "no"):
        return False
    if running(state_dir):
        return False
    env = {**os.environ, TMUX_SOCKET_ENV: tmux_socket}
    for secret in (JOB_TOKEN_ENV, "MQTT_PASSWORD", JOB_ENV):
        env.pop(secret, None)
    spawn_orchestrate(state_dir, ["supervise"], state_dir / "logs" / "supervisor.log", env)
    return True


def supervise(
    orchestrator: Supervisable,
    *,
    interval: float = PASS_INTERVAL_SEC,
    idle_exit_sec: float = IDLE_EXIT_SEC,
    report: Callable[[str], None] = lambda line: None,
    after_pass: Callable[[], None] | None = None,
) -> int:
    """Run passes until idle for ``idle_exit_sec`` (no running job) or the tmux server
    and the state dir are gone; 0, or 3 when another supervisor already runs.
    ``after_pass`` runs after each pass (the notify command's watch)."""
    state_dir = orchestrator.settings.state_dir
    with held_lock(state_dir, patience_sec=1.0) as lock:
        if lock is None:
            report("another supervisor already runs for this state dir")
            return 3
        with receiving(state_dir, report):
            passes(orchestrator, interval, idle_exit_sec, report, after_pass)
    return 0


def passes(
    orchestrator: Supervisable,
    interval: float,
    idle_exit_sec: float,
    report: Callable[[str], None],
    after_pass: Callable[[], None] | None,
) -> None:
    """The supervisor's loop until idle or orphaned: a full pass every ``interval``
    while a pane writes, every ``QUIET_PASS_SEC`` while none does."""
    state_dir = orchestrator.settings.state_dir
    quiet_since = time.monotonic()
    last = ""
    done, written = threading.Event(), threading.Event()
    logs = LogWatch(orchestrator.pane_log)
    reader = threading.Thread(
        target=read_output,
        args=(orchestrator, done, logs, written),
        name="status-reader",
        daemon=True,
    )
    reader.start()
    while state_dir.is_dir():
        try:
            summary = orchestrator.reconcile()
        except Exception as exc:  # a locked database, a tmux hiccup: try again
            report(f"pass failed: {exc}")
            time.sleep(interval * 4)
            continue
        logs.follow(summary.sampled)
        if after_pass is not None:
            try:
                after_pass()
            except Exception as exc:  # as a failed pass: said, then tried again next pass
                report(f"after the pass: {exc}")
        line = summary.summary()
        if summary.acted and line != last:
            report(f"{time.strftime('%H:%M:%S')} {line}")
            last = line
        live = [a for a in summary.sampled.values() if a != Activity.INTERRUPTED]
        if live:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= idle_exit_sec:
            break
        if not live and not orchestrator.tmux_running():
            break  # nothing runs, and nothing can (its tmux server is gone)
        time.sleep(interval)
        if logs.working:  # else every interval, as ever
            written.wait(max(0.0, QUIET_PASS_SEC - interval))
        written.clear()
    done.set()
    reader.join(5)
    logs.close()


def read_output(
    orchestrator: Supervisable, done: threading.Event, logs: LogWatch, written: threading.Event
) -> None:
    """Status sequences as soon as a running job's pane log is written (at most ten
    reads a second, none while no agent writes), beside the full passes (never behind
    one); ``written`` tells the passes that output came. Without inotify: ten times a
    second, written or not."""
    while not done.is_set():
        changed = logs.wait(WAKE_SEC)
        if changed is None:  # no inotify here: the timer
            if done.wait(OUTPUT_INTERVAL_SEC):
                return
        elif not changed:
            continue
        written.set()
        read_at = time.monotonic()
        with contextlib.suppress(Exception):  # the next full pass reports what failed
            orchestrator.reconcile_output()
        # what is written meanwhile waits in the kernel's queue, read in one go next
        done.wait(max(0.0, OUTPUT_INTERVAL_SEC - (time.monotonic() - read_at)))
