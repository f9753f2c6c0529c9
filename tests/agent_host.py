"""An agent host in tests: stopping the background outbox flushers its `publish` started.

`orchestrate publish` on an agent host leaves `publish --flush --follow` running
until the control room confirms every event (app/commands/delivery_flusher.py). A test
that ends before that must stop it: its pid is in the lock file it holds.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from tests.polling import poll_until


def running_flushers(home: Path) -> list[int]:
    """Pids of the flushers started for ``home``, from their command lines (one that
    was just started holds no lock yet)."""
    wanted = [b"--state-dir", str(home).encode(), b"publish", b"--flush", b"--follow"]
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[-len(wanted) - 1 : -1] == wanted:
            pids.append(int(proc.name))
    return pids


def stop_flushers(home: Path) -> None:
    """SIGTERM every flusher of ``home`` and wait until their locks are free."""
    for pid in running_flushers(home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    poll_until(lambda: not running_flushers(home), 15, "the flushers to stop")
