"""The background sender of an agent host's outbox: who re-sends events after `publish` exits.

`orchestrate publish` on an agent host stores each event in the outbox
(``registry.delivery``) before sending it. Whatever the control room has not
confirmed when `publish` exits is re-sent by one background process per state
dir and broker, ``orchestrate publish --flush --follow``, which `publish`
starts when none runs: it survives the agent (and a killed `publish`), re-sends
after a broker restart or when the control room's ingest starts over, and
exits once everything is confirmed (or after a day: then the next `publish`,
or `orchestrate publish --flush`, takes over). A lock file per broker keeps it
to one; its pid is in the lock file and its log beside it.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from registry.delivery import OUTBOX_DIR

LOG_NAME = "flusher.log"
FOLLOW_MAX_S = 24 * 3600.0


def lock_path(state_dir: Path, destination: str) -> Path:
    """The lock (and pid) file of the flusher for ``destination`` (a broker URL)."""
    digest = hashlib.sha256(destination.encode("utf-8")).hexdigest()[:12]
    return state_dir / OUTBOX_DIR / f"flusher-{digest}.lock"


def flusher_running(state_dir: Path, destination: str) -> bool:
    """Whether a flusher for ``destination`` holds its lock now."""
    path = lock_path(state_dir, destination)
    try:
        handle = path.open("a")
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


@contextmanager
def flusher_lock(state_dir: Path, destination: str) -> Iterator[TextIO | None]:
    """Hold the flusher lock for ``destination`` (yields None if another holds it)."""
    path = lock_path(state_dir, destination)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle = path.open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield handle
    finally:
        handle.close()  # releases the lock


def start_flusher(state_dir: Path) -> None:
    """Start ``orchestrate publish --flush --follow`` detached from this process
    (its own session, no terminal), with this process's environment (the broker
    in MQTT_*). Quiet: a second one finds the lock taken and exits."""
    directory = state_dir / OUTBOX_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(directory / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        subprocess.Popen(
            [sys.executable, "-m", "app", "--state-dir", str(state_dir),
             "publish", "--flush", "--follow"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=descriptor,
            start_new_session=True,
        )  # fmt: skip
    finally:
        os.close(descriptor)


def flush(state_dir: Path, *, follow: bool, wait_s: float) -> tuple[int, int]:
    """Send the outbox's unconfirmed events to the broker in MQTT_*; return
    (messages confirmed, messages left). ``follow``: the background flusher
    (exits at once if another runs); else one pass that waits ``wait_s`` for
    the confirmations."""
    from bus.delivery_sender import OutboxFlusher
    from bus.errors import MqttConfigError
    from bus.mqtt_config import resolve_broker
    from registry.delivery import AgentOutbox

    config = resolve_broker(os.environ, None)
    if config is None:
        raise MqttConfigError("no MQTT_BROKER set: no broker to flush the outbox to")
    box = AgentOutbox(state_dir)
    stop = threading.Event()
    try:
        if not follow:
            flusher = OutboxFlusher(box.outbox, config, idle_exit_s=0, max_run_s=wait_s)
            left = flusher.run(stop)
            return flusher.stats.confirmed, left
        for name in ("bus.delivery_sender", __name__):
            logging.getLogger(name).setLevel(logging.INFO)
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
        with flusher_lock(state_dir, config.url) as held:
            if held is None:
                return 0, box.outbox.pending_count(config.url)
            flusher = OutboxFlusher(box.outbox, config, max_run_s=FOLLOW_MAX_S)
            left = flusher.run(stop)
            stats = flusher.stats
            logging.getLogger(__name__).info(
                "flusher for %s done: %d sent, %d resent, %d confirmed, %d left",
                config.url, stats.sent, stats.resent, stats.confirmed, left,
            )  # fmt: skip
            return stats.confirmed, left
    finally:
        box.close()
