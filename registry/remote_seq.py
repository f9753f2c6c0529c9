"""The event seq of a job whose registry lives on another host.

An agent on a remote host still owes every event a seq that only grows and
survives a crashed pane (seed 000 §2.2: the seq is backed by ``last_seq``).
With no registry here to hold ``last_seq``, a small file per job under the
state dir does, advanced under ``flock`` so two panes of one job never take
the same seq. The number is written in place at a fixed width, so a crash
mid-write can leave the old value or the new one, never an empty file.
``next_seq`` puts it on disk (fdatasync) before the event goes out, so a power
cut cannot roll it back under an event already sent. `publish` itself takes
its seqs through the agent's outbox (``registry.delivery``), which stores each
event durably with its seq: the file is then only the shared counter, the
outbox the durable one (a seq is the next after both).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from registry.errors import RegistryError
from registry.events import check_job_id

SEQ_DIR = "remote-seq"
_WIDTH = 20  # digits: any seq the wire allows fits


def seq_path(state_dir: Path, job_id: str) -> Path:
    """Where the counter of ``job_id`` lives (the id is checked: it names a file)."""
    return state_dir / SEQ_DIR / f"{check_job_id(job_id)}.seq"


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def reserved(state_dir: Path, job_id: str) -> Iterator[SeqCounter]:
    """Hold the job's counter (``flock``) while the caller takes a seq with it.

    The seq a caller takes is ``counter.value + 1`` (or more); it ``store``s the
    one it took before leaving. Two panes of one job never take the same seq.
    """
    path = seq_path(state_dir, job_id)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise RegistryError(f"cannot keep the seq of job {job_id} in {path}: {exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        text = os.pread(fd, _WIDTH + 1, 0).decode("ascii", "replace").strip()
        if text and not text.isdigit():
            raise RegistryError(f"seq file {path} is damaged ({text[:20]!r}); fix or remove it")
        yield SeqCounter(fd, path, int(text or "0"), new=not text)
    finally:
        os.close(fd)  # also releases the lock


class SeqCounter:
    """A job's seq file, locked: the last seq taken, and how to record the next."""

    def __init__(self, fd: int, path: Path, value: int, *, new: bool) -> None:
        self._fd = fd
        self.path = path
        self.value = value
        self._new = new

    def store(self, seq: int, *, durable: bool = True) -> None:
        """Write ``seq`` as the last taken; ``durable``: on disk before returning (a
        caller whose seqs are also kept durably elsewhere, the outbox, skips that)."""
        os.pwrite(self._fd, f"{seq:0{_WIDTH}d}\n".encode("ascii"), 0)
        if durable:
            os.fdatasync(self._fd)
            if self._new:  # a new file: its name must be on disk too, or the count restarts
                _sync_dir(self.path.parent)
                self._new = False
        self.value = seq


def next_seq(state_dir: Path, job_id: str) -> int:
    """Take the job's next seq (1 for its first event) and persist it before returning.

    A seq is taken before its event is sent: an event that then fails to
    send leaves a gap the receivers count as missing, never a seq reused for
    a different event (which their dedupe would silently drop).
    """
    with reserved(state_dir, job_id) as counter:
        counter.store(counter.value + 1)
        return counter.value
