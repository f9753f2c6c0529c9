"""Heartbeats: one upserted row per agent, written by a thread of its own.

A dedicated thread with its own connection keeps the heartbeat going while the
agent's main thread blocks (an LLM call can take a minute), so a busy agent is
not mistaken for a dead one.
"""

from __future__ import annotations

import enum
import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from bus.db import BusDB, now_ms, transaction, translate

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_S = 10.0
WARN_AFTER_MS = 30_000
STALE_AFTER_MS = 100_000
DEAD_AFTER_MS = 300_000


class Liveness(enum.StrEnum):
    """How recently an agent was heard from (seed 002 thresholds)."""

    OK = "ok"
    WARN = "WARN"
    STALE = "STALE"
    DEAD = "DEAD"


def classify(age_ms: int) -> Liveness:
    """30 s WARN, 100 s STALE, 5 min DEAD."""
    if age_ms >= DEAD_AFTER_MS:
        return Liveness.DEAD
    if age_ms >= STALE_AFTER_MS:
        return Liveness.STALE
    if age_ms >= WARN_AFTER_MS:
        return Liveness.WARN
    return Liveness.OK


@dataclass(frozen=True)
class Heartbeat:
    """The last heartbeat of one agent."""

    agent_id: str
    ts_ms: int
    status: str
    current_task: str | None
    progress: float | None

    def liveness(self, at_ms: int | None = None) -> Liveness:
        return classify((now_ms() if at_ms is None else at_ms) - self.ts_ms)


def write(
    conn: sqlite3.Connection,
    agent_id: str,
    status: str,
    *,
    current_task: str | None = None,
    progress: float | None = None,
    ts_ms: int | None = None,
) -> None:
    """Upsert ``agent_id``'s heartbeat."""
    try:
        with transaction(conn):
            conn.execute(
                "INSERT INTO heartbeats (agent_id, ts_ms, status, current_task, progress) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(agent_id) DO UPDATE SET "
                "ts_ms = excluded.ts_ms, status = excluded.status, "
                "current_task = excluded.current_task, progress = excluded.progress",
                (agent_id, now_ms() if ts_ms is None else ts_ms, status, current_task, progress),
            )
    except sqlite3.Error as exc:
        raise translate(exc, "state database") from exc


def read_all(conn: sqlite3.Connection) -> list[Heartbeat]:
    """Every agent's last heartbeat, oldest first (the likeliest dead on top)."""
    rows = conn.execute(
        "SELECT agent_id, ts_ms, status, current_task, progress FROM heartbeats ORDER BY ts_ms"
    ).fetchall()
    return [Heartbeat(*tuple(r)) for r in rows]


class HeartbeatThread:
    """Writes ``agent_id``'s heartbeat every ``interval`` seconds until stopped.

    ``update()`` changes what the next beat says and beats at once; ``stop()``
    joins the thread. Write failures are logged, never raised: a missed beat
    is what liveness detection is for.
    """

    def __init__(self, state_dir: Path, agent_id: str, *, interval: float = HEARTBEAT_INTERVAL_S):
        self.state_dir = state_dir
        self.agent_id = agent_id
        self.interval = interval
        self._status = "idle"
        self._task: str | None = None
        self._progress: float | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{agent_id}", daemon=True)
        self.beats = 0

    def start(self) -> HeartbeatThread:
        self._thread.start()
        return self

    def update(
        self, status: str, current_task: str | None = None, progress: float | None = None
    ) -> None:
        with self._lock:
            self._status, self._task, self._progress = status, current_task, progress
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def __enter__(self) -> HeartbeatThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        db = BusDB(self.state_dir)  # this thread's own connection
        try:
            while not self._stopping.is_set():
                # Cleared before the status is read: an update() from here on wakes
                # the wait below, so its status is written at once, not next beat.
                self._wake.clear()
                with self._lock:
                    status, task, progress = self._status, self._task, self._progress
                try:
                    write(db.conn, self.agent_id, status, current_task=task, progress=progress)
                    self.beats += 1
                except Exception as exc:
                    log.warning("heartbeat for %s failed: %s", self.agent_id, exc)
                self._wake.wait(self.interval)
        finally:
            db.close()
