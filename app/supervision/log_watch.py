"""Which pane logs changed, from the kernel (inotify), so the supervisor reads output
when there is some, not ten times a second whether or not there is.

Each running job's log directory is watched (``follow``, after each full pass:
the pass knows which jobs run); ``wait`` blocks until one of their pane logs is
written, and says which jobs wrote. With no output there is no wake-up at all.
Where inotify cannot be had (another OS, the watch limit reached), ``wait`` says
so (None) and the caller reads on its old timer.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from inotify_simple import INotify, flags

CHANGED = flags.MODIFY | flags.CREATE | flags.MOVED_TO


class LogWatch:
    """Inotify watches on running jobs' log directories (thread-safe)."""

    def __init__(self, pane_log: Callable[[str], Path]) -> None:
        self.pane_log = pane_log
        self._lock = threading.Lock()
        self._jobs: dict[int, str] = {}
        self._watches: dict[str, int] = {}
        try:
            self.inotify: INotify | None = INotify()
        except OSError:
            self.inotify = None

    @property
    def working(self) -> bool:
        """Whether changes come from the kernel (else the caller polls)."""
        return self.inotify is not None

    def follow(self, job_ids: Iterable[str]) -> None:
        """Watch exactly these jobs' logs from now on."""
        inotify = self.inotify
        if inotify is None:
            return
        wanted = set(job_ids)
        with self._lock:
            for job_id in set(self._watches) - wanted:
                wd = self._watches.pop(job_id)
                self._jobs.pop(wd, None)
                with contextlib.suppress(OSError):
                    inotify.rm_watch(wd)
            for job_id in wanted - set(self._watches):
                try:
                    wd = inotify.add_watch(self.pane_log(job_id).parent, CHANGED)
                except OSError:
                    continue  # not there yet: the next pass tries again
                self._watches[job_id] = wd
                self._jobs[wd] = job_id

    def wait(self, timeout_sec: float) -> set[str] | None:
        """The jobs whose pane log was written, waiting up to ``timeout_sec`` for one;
        None when inotify is not to be had."""
        inotify = self.inotify
        if inotify is None:
            return None
        events = inotify.read(timeout=int(timeout_sec * 1000))
        with self._lock:
            return {
                self._jobs[event.wd]
                for event in events
                if event.wd in self._jobs and event.name == self.pane_log(self._jobs[event.wd]).name
            }

    def close(self) -> None:
        if self.inotify is not None:
            with contextlib.suppress(OSError):
                self.inotify.close()
