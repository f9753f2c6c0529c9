"""Messages on the SQLite bus: publish, poll, ack and follow (seed 002).

Delivery is at-least-once: a cursor moves only when its reader acks after
processing, and every message carries a unique id so retries are idempotent.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bus.blobs import INLINE_LIMIT, BlobCorrupt, BlobMissing, BlobStore, encode_payload
from bus.db import BusDB, now_ms, transaction, translate
from bus.errors import BusError, InvalidPayload, UnknownAgent

BROADCAST = None  # to_agent NULL: every reader sees it
MAX_SEQ = 2**63 - 1
"""The largest seq there can be: seqs are SQLite INTEGER rowids (signed 64-bit)."""
_decode = json.JSONDecoder().decode  # skips json.loads' per-call type dispatch


@dataclass(slots=True)
class Message:
    """One row of ``messages`` with its payload decoded (or the reason it could not be)."""

    seq: int
    id: str
    ts_ms: int
    from_agent: str
    to_agent: str | None
    type: str
    correlation_id: str | None = None
    in_reply_to: str | None = None
    payload: Any = None
    payload_ref: str | None = None
    payload_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-lines form printed by `msg poll/follow` and the export."""
        out: dict[str, Any] = {
            "seq": self.seq,
            "id": self.id,
            "ts_ms": self.ts_ms,
            "from_agent": self.from_agent,
            "to_agent": self.to_agent,
            "type": self.type,
            "correlation_id": self.correlation_id,
            "in_reply_to": self.in_reply_to,
            "payload": self.payload,
            "payload_ref": self.payload_ref,
        }
        if self.payload_error:
            out["payload_error"] = self.payload_error
        return out


@dataclass(slots=True)
class Outgoing:
    """A message to publish; ``id`` defaults to a fresh UUID."""

    type: str
    from_agent: str
    payload: Any = None
    to_agent: str | None = None
    correlation_id: str | None = None
    in_reply_to: str | None = None
    id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass(frozen=True)
class Published:
    """What ``publish`` did: the seq assigned, or ``duplicate`` if the id existed."""

    id: str
    seq: int
    duplicate: bool


_INSERT = """
INSERT INTO messages (id, ts_ms, from_agent, to_agent, type, correlation_id,
                      in_reply_to, payload, payload_ref)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO NOTHING
"""


def _validate(message: Outgoing) -> None:
    if not isinstance(message.type, str) or not message.type.strip():
        raise InvalidPayload("message type must not be empty or blank")
    if not message.from_agent:
        raise InvalidPayload("from_agent must be a non-empty string")
    for name in ("type", "from_agent", "to_agent", "correlation_id", "in_reply_to", "id"):
        value = getattr(message, name)
        if isinstance(value, str) and not value.isascii() and not _encodable(value):
            raise InvalidPayload(f"message {name} is not valid Unicode (it holds a lone surrogate)")


def _encodable(text: str) -> bool:
    """Whether SQLite can store ``text``: UTF-8 has no form for a lone surrogate
    (what Python makes of bytes on a command line that are not UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _row_values(message: Outgoing, blobs: BlobStore, ts_ms: int) -> tuple[Any, ...]:
    payload_text: str | None = None
    payload_ref: str | None = None
    if message.payload is not None:
        payload_text = encode_payload(message.payload)
        # UTF-8 never has fewer bytes than characters: short text needs no encode.
        if len(payload_text) > INLINE_LIMIT // 4:
            data = payload_text.encode("utf-8")
            if len(data) > INLINE_LIMIT:
                payload_ref, payload_text = blobs.save(data), None
    return (
        message.id,
        ts_ms,
        message.from_agent,
        message.to_agent,
        message.type,
        message.correlation_id,
        message.in_reply_to,
        payload_text,
        payload_ref,
    )


def insert_message(
    conn: sqlite3.Connection, blobs: BlobStore, message: Outgoing, *, ts_ms: int | None = None
) -> Published:
    """Append ``message`` inside the caller's transaction (no commit here).

    This is the seam the registry uses to append an event and move a job's
    status in one transaction. A message whose id already exists is a no-op.
    """
    _validate(message)
    values = _row_values(message, blobs, now_ms() if ts_ms is None else ts_ms)
    cursor = conn.execute(_INSERT, values)
    if cursor.rowcount == 0:
        row = conn.execute("SELECT seq FROM messages WHERE id = ?", (message.id,)).fetchone()
        return Published(message.id, int(row[0]), duplicate=True)
    return Published(message.id, int(cursor.lastrowid or 0), duplicate=False)


_COLUMNS = (
    "seq, id, ts_ms, from_agent, to_agent, type, correlation_id, in_reply_to, payload, payload_ref"
)


def row_to_message(row: sqlite3.Row | tuple[Any, ...], blobs: BlobStore) -> Message:
    """Decode a stored row (columns in ``_COLUMNS`` order); a missing blob or bad
    JSON becomes ``payload_error`` instead of an exception."""
    seq, msg_id, ts_ms, sender, recipient, type_, correlation, reply_to, text, ref = row
    payload: Any = None
    error: str | None = None
    try:
        if ref:
            payload = json.loads(blobs.load(ref))
        elif text is not None:
            payload = _decode(text)
    except BlobCorrupt:
        error = "blob_corrupt"
    except BlobMissing:
        error = "blob_missing"
    except (ValueError, UnicodeDecodeError):
        error = "decode_failed"
    return Message(
        seq, msg_id, ts_ms, sender, recipient, type_, correlation, reply_to, payload, ref, error
    )


class Bus:
    """The message bus in ``state_dir/state.db`` (blobs in ``state_dir/blobs``)."""

    def __init__(self, db: BusDB):
        self.db = db
        self.blobs = BlobStore(db.blob_dir)

    # -- writing -----------------------------------------------------------
    def publish(self, message: Outgoing) -> Published:
        """Append one message and commit it (idempotent on ``message.id``)."""
        return self.publish_many([message])[0]

    def publish_many(self, messages: Iterable[Outgoing]) -> list[Published]:
        """Append messages in one transaction: all or none."""
        batch = list(messages)
        try:
            with transaction(self.db.conn):
                return [insert_message(self.db.conn, self.blobs, m) for m in batch]
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    # -- reading -----------------------------------------------------------
    def latest_seq(self) -> int:
        """The highest seq ever assigned (0 on an empty bus): `follow` starts here."""
        row = self._read("SELECT seq FROM sqlite_sequence WHERE name = 'messages'", ()).fetchone()
        return int(row[0]) if row else 0

    def read_after(
        self,
        after_seq: int,
        *,
        limit: int = 1000,
        task: str | None = None,
        upto_seq: int | None = None,
    ) -> list[Message]:
        """Messages with after_seq < seq <= upto_seq (optionally about one task), oldest first."""
        ceiling = MAX_SEQ if upto_seq is None else upto_seq
        if task is None:
            sql = f"SELECT {_COLUMNS} FROM messages WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?"
            params: tuple[Any, ...] = (after_seq, ceiling, limit)
        else:
            sql = (
                f"SELECT {_COLUMNS} FROM messages WHERE seq > ? AND seq <= ? AND "
                "(correlation_id = ? OR from_agent = ? OR to_agent = ?) ORDER BY seq LIMIT ?"
            )
            params = (after_seq, ceiling, task, task, task, limit)
        return self._decode_rows(self._read(sql, params).fetchall())

    def _decode_rows(self, rows: list[tuple[Any, ...]]) -> list[Message]:
        """``row_to_message`` over many rows, with the common case (inline JSON
        that decodes) unrolled: this loop is most of what a bulk read costs."""
        out: list[Message] = []
        append, decode = out.append, _decode
        for row in rows:
            text, ref = row[8], row[9]
            if ref is None:
                try:
                    payload = None if text is None else decode(text)
                except ValueError:
                    append(row_to_message(row, self.blobs))
                    continue
                append(
                    Message(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], payload)
                )
            else:
                append(row_to_message(row, self.blobs))
        return out

    def cursor(self, agent: str) -> int:
        """The last seq ``agent`` acknowledged (0 if never)."""
        row = self._read(
            "SELECT last_acked_seq FROM cursors WHERE agent_id = ?", (agent,)
        ).fetchone()
        return int(row[0]) if row else 0

    def poll(self, agent: str, *, limit: int = 100) -> list[Message]:
        """Unacknowledged messages for ``agent`` (addressed to it or broadcast).

        Does not move the cursor: call ``ack`` after processing.
        """
        rows = self._read(
            f"SELECT {_COLUMNS} FROM messages WHERE seq > ? "
            "AND (to_agent IS NULL OR to_agent = ?) "
            "ORDER BY seq LIMIT ?",
            (self.cursor(agent), agent, limit),
        ).fetchall()
        return self._decode_rows(rows)

    def ack(self, agent: str, seq: int) -> int:
        """Advance ``agent``'s cursor to ``seq`` (never backwards); returns the cursor."""
        if seq < 1 or seq > self.latest_seq():
            raise BusError(f"no message with seq {seq} (latest is {self.latest_seq()})")
        try:
            with transaction(self.db.conn):
                self.db.conn.execute(
                    "INSERT INTO cursors (agent_id, last_acked_seq, updated_at_ms) "
                    "VALUES (?, ?, ?) "
                    "ON CONFLICT(agent_id) DO UPDATE SET "
                    "last_acked_seq = MAX(cursors.last_acked_seq, excluded.last_acked_seq), "
                    "updated_at_ms = excluded.updated_at_ms",
                    (agent, seq, now_ms()),
                )
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return self.cursor(agent)

    def follow(
        self,
        *,
        after_seq: int | None = None,
        task: str | None = None,
        stop: Callable[[], bool] = lambda: False,
        active_interval: float = 0.002,
        idle_interval: float = 0.02,
    ) -> Iterator[Message]:
        """Tail the bus without a cursor, from now (or ``after_seq``), until ``stop()``.

        Waking is cheap: ``PRAGMA data_version`` changes only when another
        connection commits, so an idle follower reads no rows. The poll interval
        starts at ``active_interval`` after activity and backs off to
        ``idle_interval``, which bounds the wake-up latency.
        """
        seq = self.latest_seq() if after_seq is None else after_seq
        conn = self.db.conn
        seen_version: int | None = None
        interval = active_interval
        while not stop():
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            if version != seen_version:
                seen_version = version
                if task is None:
                    batch = self.read_after(seq)
                else:
                    # The ceiling is read first: a message committed after it is above
                    # it and read next time, where skipping ahead to a latest_seq read
                    # after the batch would jump over it.
                    ceiling = self.latest_seq()
                    batch = self.read_after(seq, task=task, upto_seq=ceiling)
                    if not batch:
                        seq = max(seq, ceiling)
                for message in batch:
                    seq = message.seq
                    yield message
                if batch:
                    interval = active_interval
                    seen_version = None  # there may be more than one batch waiting
                    continue
            time.sleep(interval)
            interval = min(interval * 1.5, idle_interval)

    def known_agents(self, candidates: Iterable[str] = ()) -> set[str]:
        """Agents the bus has seen: with a heartbeat, a cursor, or a sent message."""
        rows = self._read(
            "SELECT agent_id FROM heartbeats UNION SELECT agent_id FROM cursors", ()
        ).fetchall()
        return {r[0] for r in rows} | set(candidates)

    def check_recipient(self, agent: str, also_known: Iterable[str] = ()) -> None:
        """Refuse a message to an agent nobody has ever heard of (likely a typo)."""
        if agent in self.known_agents(also_known):
            return
        if self._read("SELECT 1 FROM messages WHERE from_agent = ? LIMIT 1", (agent,)).fetchone():
            return
        known = sorted(self.known_agents(also_known))
        hint = f" (known: {', '.join(known[:8])})" if known else " (no agents known yet)"
        raise UnknownAgent(f"unknown agent {agent!r}{hint}")

    def _read(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        try:
            cursor = self.db.conn.cursor()
            cursor.row_factory = None  # plain tuples: decoding is the hot path of poll
            return cursor.execute(sql, params)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
