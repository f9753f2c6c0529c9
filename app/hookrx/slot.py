"""Which process is a state dir's hook receiver: the one holding ``<state>/hook.lock``.

The background supervisor and every open control room want to receive hooks, but a
socket path can have only one listener, and a second process binding it would steal
the path from the first (whose clients would then talk to whichever bound last). So
only the holder of an advisory lock on ``hook.lock`` listens, and removes the socket
before it lets go. The others stand by and try the lock again every ``RETRY_SEC``:
when the holder stops (or dies: the kernel drops its lock), one of them takes over
within that time. Meanwhile hooks lose nothing: a client that finds no socket, or a
socket nobody listens on (refused at once, no wait), runs the full `orchestrate hook`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from app.hookrx.receiver import HookReceiver

LOCK_NAME = "hook.lock"
RETRY_SEC = 0.2
"""How soon a standing-by process notices the holder has gone (hooks fall back meanwhile)."""


class ReceiverLock:
    """The state dir's receiver lock (flock: released with its process, however it ends)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock if it is free now; True when this object holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


class ReceiverSlot:
    """Receive this state dir's hooks whenever no other process does: at once if the
    lock is free, else as soon as its holder lets go. ``close`` hands over: the socket
    goes first, then the lock, so a successor never finds a live rival."""

    def __init__(
        self,
        state_dir: Path,
        report: Callable[[str], None] = lambda line: None,
        *,
        retry_sec: float = RETRY_SEC,
    ) -> None:
        self.state_dir = state_dir.resolve()
        self.report = report
        self.retry_sec = retry_sec
        self.lock = ReceiverLock(self.state_dir)
        self.receiver: HookReceiver | None = None
        """The receiver while this process is the one listening."""
        self._stop = threading.Event()
        self._guard = threading.Lock()  # a take-over and `close` never interleave
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Try now; if another process holds the lock, stand by in a thread."""
        if not self._take():
            self.stand_by()

    def stand_by(self) -> None:
        """Try in a thread only, at once and then every ``retry_sec`` (the control
        room: not on its first frame's time)."""
        self._thread = threading.Thread(target=self._stand_by, name="hook-standby", daemon=True)
        self._thread.start()

    def _stand_by(self) -> None:
        """Try the lock every ``retry_sec`` until this process holds it or closes."""
        first = True
        while first or not self._stop.wait(self.retry_sec):
            first = False
            if self._take():
                return

    def _take(self) -> bool:
        """Take the lock and listen; True when there is nothing more to try (listening,
        closed, or the receiver cannot listen here: said once, hooks fall back)."""
        with self._guard:
            if self._stop.is_set():
                return True
            if not self.lock.acquire():
                return False
            try:
                receiver = HookReceiver(self.state_dir, report=self.report)
            except Exception as exc:  # the registry cannot open: hooks fall back
                self.report(f"hook receiver off: {exc}")
                self.lock.release()
                return True
            try:
                started = receiver.start()
            except Exception as exc:
                self.report(f"hook receiver off: {exc}")
                started = False
            if not started:
                receiver.close()
                self.lock.release()
                return True
            self.receiver = receiver
            return True

    def close(self) -> None:
        """Stop listening (or standing by), remove the socket, then free the lock."""
        self._stop.set()
        with self._guard:
            if self.receiver is not None:
                self.receiver.close()
                self.receiver = None
            self.lock.release()
        if self._thread is not None:
            self._thread.join(5)


@contextlib.contextmanager
def receiving(
    state_dir: Path, report: Callable[[str], None] = lambda line: None
) -> Iterator[ReceiverSlot]:
    """A slot for the block: this process receives hooks whenever no other one does."""
    slot = ReceiverSlot(state_dir, report)
    slot.start()
    try:
        yield slot
    finally:
        slot.close()


@contextlib.contextmanager
def serving(
    state_dir: Path, report: Callable[[str], None] = lambda line: None
) -> Iterator[HookReceiver | None]:
    """A receiver for the block, now or never: None when it cannot listen or another
    process is the receiver (hooks go there, or fall back)."""
    slot = ReceiverSlot(state_dir, report)
    if not slot._take():  # now or never: no standing by
        report("hook receiver off: another process receives this state dir's hooks")
    try:
        yield slot.receiver
    finally:
        slot.close()


def log_report(state_dir: Path) -> Callable[[str], None]:
    """A receiver's report that appends its lines (its own words only, never agent
    text) to ``<state>/logs/hook-receiver.log``: for a control room, where a refused
    request is no news for the person watching."""
    log = state_dir / "logs" / "hook-receiver.log"

    def report(line: str) -> None:
        with contextlib.suppress(OSError):
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a", encoding="utf-8") as handle:
                handle.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    return report
