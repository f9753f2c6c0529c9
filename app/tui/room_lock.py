"""Which control room opened a state dir first: `<state>/control-room.lock`.

Two `orchestrate watch` on one state dir both work (SQLite serialises their
writes, supervision passes are idempotent, and only one of them ingests MQTT:
see registry/ingest.py), but a person should know that another one is open.
The first holds an advisory lock on this file with its pid in it; a later one
finds the lock taken and says whose it is. The lock goes with its process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import TextIO

LOCK_NAME = "control-room.lock"


class ControlRoomLock:
    """The state dir's control-room lock, taken once by `acquire`."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOCK_NAME
        self._handle: TextIO | None = None

    def acquire(self) -> int | None:
        """None when this control room holds the lock now; else the pid of the one
        that does (0 when it has not written it yet)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        handle = os.fdopen(fd, "r+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = handle.read().strip()
            handle.close()
            return int(holder) if holder.isdigit() else 0
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle
        return None

    def release(self) -> None:
        """Give the lock up (closing the file releases it); the file stays."""
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None
