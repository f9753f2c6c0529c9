"""Task claims with leases: a queue where a claim not completed in time is re-claimable.

A pending task stores ``lease_until_ms`` = its enqueue time, so "available"
means ``state != 'done' AND lease_until_ms <= now`` for never-claimed and
expired tasks alike, and one ordered probe of a partial index finds the oldest.
``attempts`` counts claims; completion is fenced by it, so an owner whose lease
expired and whose task was claimed again cannot complete it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from bus.blobs import encode_payload
from bus.db import now_ms, transaction, translate
from bus.errors import StaleClaim, TaskNotFound

DEFAULT_LEASE_MS = 60_000


@dataclass(frozen=True)
class Claim:
    """A claim held by ``agent``: pass ``attempt`` back to renew/release/complete."""

    task_id: str
    queue: str
    agent: str
    attempt: int
    lease_until_ms: int
    payload: str | None


@dataclass(frozen=True)
class TaskState:
    """A task_claims row as stored."""

    task_id: str
    queue: str
    state: str
    claimed_by: str | None
    attempts: int
    lease_until_ms: int
    result: str | None


def _db(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA database_list").fetchone()[2])


def enqueue(
    conn: sqlite3.Connection,
    task_id: str,
    *,
    queue: str = "default",
    payload: Any = None,
    at_ms: int | None = None,
) -> bool:
    """Add a pending task; False if ``task_id`` already exists (idempotent)."""
    ts = now_ms() if at_ms is None else at_ms
    text = None if payload is None else encode_payload(payload)
    try:
        with transaction(conn):
            cur = conn.execute(
                "INSERT INTO task_claims (task_id, queue, state, lease_until_ms, created_at_ms, "
                "payload) VALUES (?, ?, 'pending', ?, ?, ?) ON CONFLICT(task_id) DO NOTHING",
                (task_id, queue, ts, ts, text),
            )
            return cur.rowcount == 1
    except sqlite3.Error as exc:
        raise translate(exc, _db(conn)) from exc


_CLAIM_RETURNING = "RETURNING task_id, queue, attempts, lease_until_ms, payload"


def claim_next(
    conn: sqlite3.Connection,
    queue: str,
    agent: str,
    *,
    lease_ms: int = DEFAULT_LEASE_MS,
    at_ms: int | None = None,
) -> Claim | None:
    """Claim the oldest available task of ``queue`` (pending or lease expired).

    ``at_ms``: the time to judge leases by, so a caller that swept expired leases
    first judges both at one moment (a lease ending between two readings of the
    clock would otherwise be claimed unswept)."""
    now = now_ms() if at_ms is None else at_ms
    try:
        with transaction(conn):
            row = conn.execute(
                "UPDATE task_claims SET state = 'claimed', claimed_by = ?, claimed_at_ms = ?, "
                "lease_until_ms = ?, attempts = attempts + 1 "
                "WHERE task_id = (SELECT task_id FROM task_claims WHERE queue = ? "
                "AND state != 'done' AND lease_until_ms <= ? ORDER BY lease_until_ms LIMIT 1) "
                + _CLAIM_RETURNING,
                (agent, now, now + lease_ms, queue, now),
            ).fetchone()
    except sqlite3.Error as exc:
        raise translate(exc, _db(conn)) from exc
    return _claim(row, agent)


def try_claim(
    conn: sqlite3.Connection, task_id: str, agent: str, *, lease_ms: int = DEFAULT_LEASE_MS
) -> Claim | None:
    """Claim one specific task if nobody holds a live lease on it (seed 002's
    try_claim_task); the task is created if it was never enqueued."""
    now = now_ms()
    try:
        with transaction(conn):
            conn.execute(
                "INSERT INTO task_claims (task_id, state, lease_until_ms, created_at_ms) "
                "VALUES (?, 'pending', ?, ?) ON CONFLICT(task_id) DO NOTHING",
                (task_id, now, now),
            )
            row = conn.execute(
                "UPDATE task_claims SET state = 'claimed', claimed_by = ?, claimed_at_ms = ?, "
                "lease_until_ms = ?, attempts = attempts + 1 "
                "WHERE task_id = ? AND state != 'done' AND lease_until_ms <= ? " + _CLAIM_RETURNING,
                (agent, now, now + lease_ms, task_id, now),
            ).fetchone()
    except sqlite3.Error as exc:
        raise translate(exc, _db(conn)) from exc
    return _claim(row, agent)


def _claim(row: sqlite3.Row | None, agent: str) -> Claim | None:
    if row is None:
        return None
    return Claim(row[0], row[1], agent, int(row[2]), int(row[3]), row[4])


def _fenced_update(
    conn: sqlite3.Connection, sql: str, params: tuple[Any, ...], claim: Claim
) -> None:
    try:
        with transaction(conn):
            if conn.execute(sql, params).rowcount == 1:
                return
            _raise_stale(conn, claim)
    except sqlite3.Error as exc:
        raise translate(exc, _db(conn)) from exc


def _raise_stale(conn: sqlite3.Connection, claim: Claim) -> None:
    row = conn.execute(
        "SELECT state, claimed_by, attempts FROM task_claims WHERE task_id = ?", (claim.task_id,)
    ).fetchone()
    if row is None:
        raise TaskNotFound(f"no task {claim.task_id!r}")
    raise StaleClaim(
        f"task {claim.task_id}: claim attempt {claim.attempt} by {claim.agent} is no longer "
        f"current (state {row[0]}, attempt {row[2]} by {row[1]})"
    )


def renew(conn: sqlite3.Connection, claim: Claim, *, lease_ms: int = DEFAULT_LEASE_MS) -> Claim:
    """Extend the lease of a claim still held; StaleClaim if it was lost."""
    lease_until = now_ms() + lease_ms
    _fenced_update(
        conn,
        "UPDATE task_claims SET lease_until_ms = ? WHERE task_id = ? AND claimed_by = ? "
        "AND attempts = ? AND state = 'claimed'",
        (lease_until, claim.task_id, claim.agent, claim.attempt),
        claim,
    )
    return Claim(claim.task_id, claim.queue, claim.agent, claim.attempt, lease_until, claim.payload)


def release(conn: sqlite3.Connection, claim: Claim) -> None:
    """Give the task back (failure or shutdown): claimable again at once."""
    _fenced_update(
        conn,
        "UPDATE task_claims SET state = 'pending', claimed_by = NULL, lease_until_ms = ? "
        "WHERE task_id = ? AND claimed_by = ? AND attempts = ? AND state = 'claimed'",
        (now_ms(), claim.task_id, claim.agent, claim.attempt),
        claim,
    )


def complete(conn: sqlite3.Connection, claim: Claim, result: Any = None) -> bool:
    """Mark the task done with ``result``, fenced by the attempt number.

    Returns False when this same attempt already completed it (an idempotent
    retry); raises StaleClaim when another attempt owns the task now.
    """
    text = None if result is None else encode_payload(result)
    try:
        with transaction(conn):
            cur = conn.execute(
                "UPDATE task_claims SET state = 'done', completed_at_ms = ?, result = ? "
                "WHERE task_id = ? AND claimed_by = ? AND attempts = ? AND state = 'claimed'",
                (now_ms(), text, claim.task_id, claim.agent, claim.attempt),
            )
            if cur.rowcount == 1:
                return True
            row = conn.execute(
                "SELECT state, claimed_by, attempts FROM task_claims WHERE task_id = ?",
                (claim.task_id,),
            ).fetchone()
            if row and row[0] == "done" and row[1] == claim.agent and row[2] == claim.attempt:
                return False
            _raise_stale(conn, claim)
            return False  # unreachable: _raise_stale raises
    except sqlite3.Error as exc:
        raise translate(exc, _db(conn)) from exc


# -- moves made on behalf of nobody in particular -------------------------------
# The fenced functions above are for a worker holding a claim. An owner of the
# task itself (the registry cancelling a job, or seeing its terminal event)
# settles it regardless of who holds it; these run in the caller's transaction.


def settle(
    conn: sqlite3.Connection, task_id: str, *, result: str | None = None, at_ms: int | None = None
) -> None:
    """Mark ``task_id`` done whoever holds it (keeps an earlier result if none given)."""
    conn.execute(
        "UPDATE task_claims SET state = 'done', completed_at_ms = ?, "
        "result = COALESCE(?, result) WHERE task_id = ?",
        (now_ms() if at_ms is None else at_ms, result, task_id),
    )


def extend(conn: sqlite3.Connection, task_id: str, lease_until_ms: int) -> None:
    """Push a held claim's lease out to at least ``lease_until_ms`` (a sign of life)."""
    conn.execute(
        "UPDATE task_claims SET lease_until_ms = MAX(lease_until_ms, ?) "
        "WHERE task_id = ? AND state = 'claimed'",
        (lease_until_ms, task_id),
    )


def requeue(conn: sqlite3.Connection, task_id: str, *, at_ms: int | None = None) -> None:
    """Make ``task_id`` claimable again at once (lease expiry, resume, reset)."""
    conn.execute(
        "UPDATE task_claims SET state = 'pending', claimed_by = NULL, lease_until_ms = ?, "
        "completed_at_ms = NULL WHERE task_id = ?",
        (now_ms() if at_ms is None else at_ms, task_id),
    )


def expired(
    conn: sqlite3.Connection, *, queue: str | None = None, at_ms: int | None = None
) -> list[TaskState]:
    """Claimed tasks whose lease has run out (what a sweeper re-enqueues)."""
    sql = "SELECT * FROM task_claims WHERE state = 'claimed' AND lease_until_ms <= ?"
    params: tuple[Any, ...] = (now_ms() if at_ms is None else at_ms,)
    if queue is not None:
        sql += " AND queue = ?"
        params += (queue,)
    return [_state(r) for r in conn.execute(sql, params).fetchall()]


def get(conn: sqlite3.Connection, task_id: str) -> TaskState:
    row = conn.execute("SELECT * FROM task_claims WHERE task_id = ?", (task_id,)).fetchone()
    if row is None:
        raise TaskNotFound(f"no task {task_id!r}")
    return _state(row)


def _state(row: sqlite3.Row) -> TaskState:
    return TaskState(
        row["task_id"],
        row["queue"],
        row["state"],
        row["claimed_by"],
        row["attempts"],
        row["lease_until_ms"],
        row["result"],
    )
