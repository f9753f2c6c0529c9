"""One node per state dir and per tmux server, and running it in the background.

``node run`` holds two locks for its whole life: ``<state>/node.lock`` (the state dir
and its outbox are the node's) and one per tmux server in the user's runtime dir
(its panes are the node's). Both go with the process, however it ends, so a
``kill -9`` leaves nothing to clean up. Beside the first lock it keeps
``<state>/node.json`` (name, pid, broker, connected) for ``node status`` and
``node stop``: the pid there is only trusted while its lock is held.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from app.agents.env import spawn_orchestrate
from app.settings import JOB_ENV, JOB_TOKEN_ENV

LOCK_NAME = "node.lock"
STATUS_NAME = "node.json"
LOG_NAME = "node.log"


class NodeBusy(Exception):
    """Another node already holds this state dir or tmux server (its pid if known)."""


@dataclass(frozen=True)
class NodeStatus:
    """What ``node status`` reports."""

    running: bool
    pid: int | None = None
    name: str | None = None
    broker: str | None = None
    connected: bool = False


def _try_lock(path: Path) -> IO[str] | None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def tmux_lock_path(tmux_socket: str) -> Path:
    """The lock of a node on tmux server ``tmux_socket`` (per user, as the server is)."""
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in tmux_socket)
    return Path(tempfile.gettempdir()) / f"orchestrate-{os.getuid()}" / f"node-{safe}.lock"


@contextlib.contextmanager
def node_locks(state_dir: Path, tmux_socket: str) -> Iterator[None]:
    """Hold both locks for the ``with`` block (``NodeBusy`` if either is taken)."""
    with contextlib.ExitStack() as stack:
        for path, what in (
            (state_dir / LOCK_NAME, f"state dir {state_dir}"),
            (tmux_lock_path(tmux_socket), f"tmux server {tmux_socket!r}"),
        ):
            handle = _try_lock(path)
            if handle is None:
                known = read_status(state_dir)
                pid = f" (pid {known.pid})" if known.running and known.pid else ""
                raise NodeBusy(f"a node already runs for {what}{pid}")
            stack.callback(handle.close)
        yield


def write_status(state_dir: Path, **fields: Any) -> None:
    """Replace node.json whole (a reader sees the old file or the new one)."""
    target = state_dir / STATUS_NAME
    with tempfile.NamedTemporaryFile(
        "w", dir=state_dir, prefix=".node.", delete=False, encoding="utf-8"
    ) as file:
        json.dump(fields, file)
    os.replace(file.name, target)


def is_running(state_dir: Path) -> bool:
    """Whether a node holds this state dir's lock now."""
    if not (state_dir / LOCK_NAME).exists():
        return False
    handle = _try_lock(state_dir / LOCK_NAME)
    if handle is None:
        return True
    handle.close()
    return False


def read_status(state_dir: Path) -> NodeStatus:
    """The node of ``state_dir`` as its lock and node.json say."""
    if not is_running(state_dir):
        return NodeStatus(running=False)
    try:
        raw = json.loads((state_dir / STATUS_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NodeStatus(running=True)  # starting: the file is not written yet
    if not isinstance(raw, dict):
        return NodeStatus(running=True)
    pid = raw.get("pid")
    return NodeStatus(
        running=True,
        pid=pid if isinstance(pid, int) else None,
        name=str(raw.get("name")) if raw.get("name") else None,
        broker=str(raw.get("broker")) if raw.get("broker") else None,
        connected=raw.get("connected") is True,
    )


def spawn(state_dir: Path, run_args: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start ``orchestrate node run ARGS`` detached, its output in logs/node.log. The
    broker's password stays in its environment (never on a command line); a job's
    identity and token do not go with it."""
    env = {key: value for key, value in os.environ.items() if key not in (JOB_ENV, JOB_TOKEN_ENV)}
    return spawn_orchestrate(
        state_dir, ["node", "run", *run_args], state_dir / "logs" / LOG_NAME, env
    )


def wait_started(
    state_dir: Path, process: subprocess.Popen[bytes], timeout: float
) -> NodeStatus | None:
    """The node's status once it is connected, or as it stands at ``timeout``; None if
    the process exited first."""
    deadline = time.monotonic() + timeout
    status = read_status(state_dir)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return None
        status = read_status(state_dir)
        if status.connected and status.pid == process.pid:
            return status
        time.sleep(0.05)
    return status


def stop(state_dir: Path, timeout: float) -> NodeStatus:
    """SIGTERM the running node and wait for its lock to go; the status it had.
    ``TimeoutError`` if it is still running at ``timeout``."""
    status = read_status(state_dir)
    if not status.running or status.pid is None:
        return status
    with contextlib.suppress(ProcessLookupError):
        os.kill(status.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while is_running(state_dir):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"node (pid {status.pid}) did not stop within {timeout:g} s")
        time.sleep(0.05)
    return status


def log_tail(state_dir: Path, lines: int = 5) -> list[str]:
    """The last lines of the node's log (why a start failed)."""
    try:
        text = (state_dir / "logs" / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return text.strip().splitlines()[-lines:]
