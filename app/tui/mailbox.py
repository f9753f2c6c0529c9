"""A one-slot mailbox that collapses bursts of deltas between the poller thread
and the event loop (the Toolong pattern: the message is only a doorbell)."""

from __future__ import annotations

import threading

from app.tui.source import Delta


class DeltaMailbox:
    """The poller `put`s, the UI `take`s; deltas not yet taken merge into one,
    so a burst costs the UI one redraw however many polls it spanned."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Delta | None = None

    def put(self, delta: Delta) -> bool:
        """Store `delta`; True when the mailbox was empty, i.e. the caller must
        ring the doorbell (an earlier ring is still unanswered otherwise)."""
        with self._lock:
            was_empty = self._pending is None
            self._pending = delta if self._pending is None else self._pending.merge(delta)
            return was_empty

    def take(self) -> Delta | None:
        with self._lock:
            delta, self._pending = self._pending, None
            return delta
