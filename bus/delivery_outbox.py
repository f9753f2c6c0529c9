"""A durable outbox: messages kept on disk until their consumer confirms it has them.

A broker's PUBACK only says "the broker has it"; a broker killed before it
saves loses what it acknowledged. A publisher that must not lose a message
appends it here first (SQLite, WAL, ``synchronous=FULL`` for that commit: on
disk before ``append`` returns), sends it, and keeps it until the consumer
confirms it.

Messages belong to a *stream* (an ordered series: positions 1, 2, 3, ...
allocated here, in the same transaction that stores the message, so a crash
never leaves a position taken by nothing). The consumer confirms a stream
cumulatively, like a TCP ack: it has every position up to ``through`` except
the ranges in ``missing``, and ``closed`` says it will take no more. Each
stream names the topic its confirmations arrive on and the broker
(``destination``) its messages go to. Nothing here knows what the messages
mean.

>>> import tempfile, pathlib
>>> box = Outbox(pathlib.Path(tempfile.mkdtemp()) / "outbox.db")
>>> m = box.append("s1", "s1/ack", "mqtt://h:1883", lambda pos: ("s1/data", b"%d" % pos, False))
>>> (m.position, box.pending_count())
(1, 1)
>>> box.confirm("s1", Confirmation(through=1))
1
>>> box.pending_count()
0
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bus.db import BUSY_TIMEOUT_MS, ensure_private_dir, translate
from bus.errors import BusError

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (
    stream TEXT PRIMARY KEY,
    confirm_topic TEXT NOT NULL,
    destination TEXT NOT NULL,
    last_position INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
    stream TEXT NOT NULL,
    position INTEGER NOT NULL,
    topic TEXT NOT NULL,
    payload BLOB NOT NULL,
    retain INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    sent_ms INTEGER,
    sends INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (stream, position)
) WITHOUT ROWID;
"""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class OutboxMessage:
    """One message waiting for its consumer's confirmation."""

    stream: str
    position: int
    topic: str
    payload: bytes = field(repr=False)
    retain: bool
    created_ms: int = 0
    sends: int = 0
    sent_ms: int | None = None


@dataclass(frozen=True)
class StreamInfo:
    """Where a stream's messages go and where its confirmations come from."""

    stream: str
    confirm_topic: str
    destination: str
    last_position: int


@dataclass(frozen=True)
class Confirmation:
    """What a consumer has of a stream: every position up to ``through`` except
    ``missing`` ([first, last] ranges); ``closed``: it takes no more; ``epoch``
    changes whenever the consumer starts over (it may have lost what it had
    not confirmed, so the publisher sends everything unconfirmed again)."""

    through: int
    missing: tuple[tuple[int, int], ...] = ()
    closed: bool = False
    epoch: str = ""

    def has(self, position: int) -> bool:
        """Whether the consumer holds ``position`` (or will never want it)."""
        if self.closed:
            return True
        if position > self.through:
            return False
        return not any(first <= position <= last for first, last in self.missing)

    def to_bytes(self) -> bytes:
        body = {
            "through": self.through,
            "missing": [list(r) for r in self.missing],
            "closed": self.closed,
            "epoch": self.epoch,
        }
        return json.dumps(body, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, raw: bytes) -> Confirmation | None:
        """The confirmation in ``raw``, or None for anything malformed."""
        try:
            body = json.loads(raw)
            through = body["through"]
            ranges = tuple((int(a), int(b)) for a, b in body.get("missing", ()))
            closed, epoch = body.get("closed", False), body.get("epoch", "")
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        if type(through) is not int or through < 0 or not isinstance(closed, bool):
            return None
        return cls(through, ranges, closed, str(epoch))


class Outbox:
    """The outbox file at ``path`` (created 0600 in a 0700 directory if new).

    One instance per thread; several processes may share the file (every
    write is one IMMEDIATE transaction).
    """

    def __init__(self, path: Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self.path = path
        ensure_private_dir(path.parent)
        try:
            if not path.exists():
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            self._conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_ms / 1000)
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            # append() commits with synchronous=FULL: a message is on disk before it
            # returns (this file is the only copy that survives the broker); the
            # bookkeeping after it (sent, confirmed) commits with NORMAL.
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise BusError(f"{path} was written by a newer orchestrate (outbox v{version})")
            if version < SCHEMA_VERSION:  # one script, one transaction
                self._conn.executescript(
                    f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;"
                )
        except sqlite3.Error as exc:
            raise translate(exc, path, busy_timeout_ms=busy_timeout_ms) from exc

    @contextmanager
    def _transaction(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction. ``durable``: on disk at COMMIT (an fsync, ~4 ms on
        this VM's disk); else it survives a crash of the process but maybe not of
        the machine, which is enough for bookkeeping a resend can repair."""
        try:
            self._conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc

    def close(self) -> None:
        self._conn.close()

    def append(
        self,
        stream: str,
        confirm_topic: str,
        destination: str,
        build: Callable[[int], tuple[str, bytes, bool]],
        *,
        floor: int = 0,
    ) -> OutboxMessage:
        """Store the stream's next message, durably, and return it.

        ``build(position)`` makes (topic, payload, retain) for the position
        taken (the next after both the stream's last and ``floor``); if it
        raises, nothing is stored and no position is used.
        """
        with self._transaction(durable=True) as conn:
            row = conn.execute(
                "SELECT last_position FROM streams WHERE stream = ?", (stream,)
            ).fetchone()
            position = max(row[0] if row else 0, floor) + 1
            topic, payload, retain = build(position)
            conn.execute(
                "INSERT INTO streams (stream, confirm_topic, destination, last_position) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (stream) DO UPDATE SET "
                "confirm_topic = excluded.confirm_topic, destination = excluded.destination, "
                "last_position = excluded.last_position",
                (stream, confirm_topic, destination, position),
            )
            created_ms = _now_ms()
            conn.execute(
                "INSERT INTO messages (stream, position, topic, payload, retain, created_ms) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (stream, position, topic, payload, int(retain), created_ms),
            )
        return OutboxMessage(stream, position, topic, payload, retain, created_ms)

    def streams(self, destination: str | None = None) -> list[StreamInfo]:
        """Streams that still hold messages (for ``destination``, if given)."""
        sql = (
            "SELECT stream, confirm_topic, destination, last_position FROM streams s "
            "WHERE EXISTS (SELECT 1 FROM messages m WHERE m.stream = s.stream)"
        )
        params: tuple[str, ...] = ()
        if destination is not None:
            sql += " AND destination = ?"
            params = (destination,)
        rows = self._read(sql + " ORDER BY stream", params)
        return [StreamInfo(*row) for row in rows]

    def pending(
        self, *, destination: str | None = None, stream: str | None = None
    ) -> list[OutboxMessage]:
        """Messages not yet confirmed, oldest position first within each stream."""
        sql = (
            "SELECT m.stream, m.position, m.topic, m.payload, m.retain, m.created_ms, m.sends, "
            "m.sent_ms "
            "FROM messages m JOIN streams s ON s.stream = m.stream WHERE 1"
        )
        params: list[str] = []
        if destination is not None:
            sql += " AND s.destination = ?"
            params.append(destination)
        if stream is not None:
            sql += " AND m.stream = ?"
            params.append(stream)
        rows = self._read(sql + " ORDER BY m.stream, m.position", tuple(params))
        return [
            OutboxMessage(r[0], r[1], r[2], bytes(r[3]), bool(r[4]), r[5], r[6], r[7]) for r in rows
        ]

    def pending_count(self, destination: str | None = None) -> int:
        if destination is None:
            return int(self._read("SELECT COUNT(*) FROM messages", ())[0][0])
        return int(
            self._read(
                "SELECT COUNT(*) FROM messages m JOIN streams s ON s.stream = m.stream "
                "WHERE s.destination = ?",
                (destination,),
            )[0][0]
        )

    def mark_sent(self, messages: Iterable[OutboxMessage], at_ms: int | None = None) -> None:
        """Record that these were handed to the broker (for resend backoff)."""
        stamp = at_ms if at_ms is not None else _now_ms()
        keys = [(stamp, m.stream, m.position) for m in messages]
        if not keys:
            return
        with self._transaction() as conn:
            conn.executemany(
                "UPDATE messages SET sent_ms = ?, sends = sends + 1 "
                "WHERE stream = ? AND position = ?",
                keys,
            )

    def confirm(self, stream: str, confirmation: Confirmation) -> int:
        """Drop the stream's messages the consumer has (all of them when closed);
        returns how many were dropped."""
        with self._transaction() as conn:
            if confirmation.closed:
                return conn.execute("DELETE FROM messages WHERE stream = ?", (stream,)).rowcount
            rows = conn.execute(
                "SELECT position FROM messages WHERE stream = ? AND position <= ?",
                (stream, confirmation.through),
            ).fetchall()
            held = [(stream, pos) for (pos,) in rows if confirmation.has(pos)]
            conn.executemany("DELETE FROM messages WHERE stream = ? AND position = ?", held)
            return len(held)

    def discard(self, message: OutboxMessage) -> None:
        """Drop one message the broker refused outright (it would be refused forever)."""
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM messages WHERE stream = ? AND position = ?",
                (message.stream, message.position),
            )

    def _read(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        try:
            return list(self._conn.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise translate(exc, self.path) from exc
