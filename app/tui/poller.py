"""The control room's background loops: the registry poll, the reconcile pass and the
MQTT bridge, each run in a thread worker of the app until it closes.

Kept apart from the app (as toolong keeps its ``watcher.py``) so the app is about
its lifecycle, and so each loop's pacing reads in one place: the poll looks again
within 15 ms while events flow and at its interval when quiet, backs off on a
failing source, and rings the app only when something changed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from textual.message import Message

from app.tui.mailbox import DeltaMailbox
from app.tui.messages import DeltaReady, Notice, SourceFailed
from app.tui.source import SOURCE_ERRORS, ControlRoomSource, Delta

MAX_BACKOFF_S = 5.0
RECONCILE_INTERVAL_S = 3.0
BUSY_POLL_S = 0.015  # while events flow: ~20 per delta at 1k ev/s, each row ~20 ms late


class Poller:
    """The loops over one source. ``post`` is the app's thread-safe ``post_message``;
    ``stopping`` is set when the app unmounts, and every loop then returns (a loop
    left running would keep the process, or a test's event loop, from closing)."""

    def __init__(
        self,
        source: ControlRoomSource,
        post: Callable[[Message], object],
        *,
        mailbox: DeltaMailbox,
        stopping: threading.Event,
    ) -> None:
        self.source = source
        self.post = post
        self.mailbox = mailbox
        self.stopping = stopping

    def _over(self, cancelled: Callable[[], bool]) -> bool:
        return cancelled() or self.stopping.is_set()

    def poll(self, cancelled: Callable[[], bool], interval_s: float) -> None:
        """Read deltas into the mailbox and ring the app, until cancelled or stopping.

        One notice per distinct failure, not per poll, with a doubling back-off; a
        delta that changes nothing the screen shows does not ring."""
        cursor, failure, backoff_s = 0, "", interval_s
        previous: Delta | None = None
        while not self._over(cancelled):
            try:
                delta = self.source.poll(cursor)
            except SOURCE_ERRORS as error:
                if str(error) != failure:
                    failure = str(error)
                    self.post(SourceFailed(error))
                time.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, MAX_BACKOFF_S)
                continue
            failure, backoff_s = "", interval_s
            cursor = delta.cursor
            if previous is not None and _unchanged(delta, previous):
                time.sleep(interval_s)
                continue
            previous = delta
            if self.mailbox.put(delta):
                self.post(DeltaReady())
            # Busy bus: look again soon (latency); quiet bus: the normal interval.
            busy = bool(delta.events or delta.jobs)
            time.sleep(min(BUSY_POLL_S, interval_s) if busy else interval_s)

    def reconcile(self, cancelled: Callable[[], bool], interval_s: float) -> None:
        """Every ``interval_s``: dead panes, expired leases, stale heartbeats; a notice
        when a pass changed something, and one per distinct failure."""
        failure = ""
        while not self._over(cancelled):
            try:
                notice = self.source.reconcile()
            except Exception as error:  # any failure is shown, and the next pass tries again
                if str(error) != failure:
                    failure = str(error)
                    self.post(Notice(f"Reconcile failed: {error}", "warning"))
            else:
                failure = ""
                if notice:
                    self.post(Notice(notice))
            deadline = time.monotonic() + interval_s
            while time.monotonic() < deadline and not cancelled():
                time.sleep(0.1)

    def bridge(self) -> None:
        """Carry MQTT events into the registry until the app stops (no broker: return)."""
        self.source.run_bridge(self.stopping)


def _unchanged(delta: Delta, previous: Delta) -> bool:
    """Whether ``delta`` shows nothing ``previous`` did not: no job, event or notice,
    the same totals, and no new sessions."""
    if delta.jobs or delta.removed_job_ids or delta.events or delta.notices:
        return False
    return delta.snapshot == previous.snapshot and delta.sessions in (None, previous.sessions)
