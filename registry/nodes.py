"""The fleet's nodes as the control room knows them: one row per node, fed by presence.

The ingest bridge (``registry/ingest.py``) hands every message on a presence topic
(``bus.fleet_topics``) to ``NodeStore.record_message``; ``orchestrate nodes`` and the
placement read ``NodeStore.nodes``. A row keeps the newest announcement of the node's
newest boot (``registry/presence.py`` orders them), when the control room last heard
it (its own clock: a node's clock is not trusted), and how it left if it did.

A node that is marked online but has not been heard for ``STALE_PERIODS`` of its
own announcement periods counts as offline (``stale``): the broker's will covers a
dead connection, this covers a control room that was not listening when it came.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Final, Literal

from bus.db import apply_migrations, now_ms, translate
from bus.fleet_topics import node_of_presence
from bus.messages import Bus
from registry.presence import InvalidPresence, Presence, parse_presence
from registry.records import iso_from_ms
from registry.vocabulary import NodeLeft

VERSION_KEY: Final = "nodes_schema_version"
STALE_PERIODS: Final = 3
STALE_GRACE_MS: Final = 5_000

_V1 = """
CREATE TABLE IF NOT EXISTS nodes (
    name TEXT PRIMARY KEY,
    online INTEGER NOT NULL,
    boot INTEGER NOT NULL,
    seq INTEGER NOT NULL DEFAULT -1,
    host TEXT NOT NULL DEFAULT '',
    agents TEXT NOT NULL DEFAULT '{}',
    slots INTEGER NOT NULL DEFAULT 0,
    slots_used INTEGER NOT NULL DEFAULT 0,
    load1 REAL NOT NULL DEFAULT 0,
    load5 REAL NOT NULL DEFAULT 0,
    load15 REAL NOT NULL DEFAULT 0,
    period_s REAL NOT NULL DEFAULT 30,
    left_as TEXT,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms INTEGER,
    left_at_ms INTEGER
);
"""
MIGRATIONS: list[str] = [_V1]

Outcome = Literal["recorded", "stale"]


@dataclass(frozen=True)
class Node:
    """One node as the registry holds it."""

    name: str
    online: bool
    """Announced online, heard lately, and not gone since (``stale`` is False)."""
    host: str
    agents: dict[str, str | None]
    slots: int
    slots_used: int
    load: tuple[float, float, float]
    last_seen_ms: int | None
    """When the control room last heard it announce itself (None: only its departure)."""
    left: NodeLeft | None
    stale: bool
    """Announced online but silent for longer than it promised to be."""
    boot: int

    @property
    def slots_free(self) -> int:
        return max(self.slots - self.slots_used, 0)

    def has_agent(self, kind: str) -> bool:
        return kind in self.agents

    def to_dict(self) -> dict[str, Any]:
        """What ``orchestrate nodes --json`` prints for it."""
        return {
            "name": self.name,
            "online": self.online,
            "host": self.host,
            "agents": self.agents,
            "slots": self.slots,
            "slots_used": self.slots_used,
            "slots_free": self.slots_free,
            "load": list(self.load),
            "last_seen": iso_from_ms(self.last_seen_ms) if self.last_seen_ms else None,
            "left": str(self.left) if self.left else None,
            "stale": self.stale,
        }


def _node(row: sqlite3.Row, at_ms: int) -> Node:
    last_seen = row["last_seen_ms"]
    silent_ms = at_ms - last_seen if last_seen is not None else None
    limit_ms = STALE_PERIODS * row["period_s"] * 1000 + STALE_GRACE_MS
    stale = bool(row["online"]) and silent_ms is not None and silent_ms > limit_ms
    return Node(
        name=row["name"],
        online=bool(row["online"]) and not stale,
        host=row["host"],
        agents=json.loads(row["agents"]),
        slots=row["slots"],
        slots_used=row["slots_used"],
        load=(row["load1"], row["load5"], row["load15"]),
        last_seen_ms=last_seen,
        left=NodeLeft(row["left_as"]) if row["left_as"] else None,
        stale=stale,
        boot=row["boot"],
    )


class NodeStore:
    """The ``nodes`` table in the bus's database."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.db = bus.db
        try:
            apply_migrations(self.db.conn, VERSION_KEY, MIGRATIONS, self.db.path)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def record_message(self, prefix: str, topic: str, payload: bytes) -> Outcome:
        """Record what arrived on a presence topic (``InvalidPresence`` if it is none)."""
        node = node_of_presence(prefix, topic)
        if node is None:
            raise InvalidPresence(f"{topic!r} is not a node's presence topic")
        return self.record(parse_presence(node, payload))

    def record(self, presence: Presence, at_ms: int | None = None) -> Outcome:
        """Keep ``presence`` unless the row already holds something newer."""
        at_ms = now_ms() if at_ms is None else at_ms
        try:
            with self.db.transaction() as conn:
                row = conn.execute(
                    "SELECT boot, seq FROM nodes WHERE name = ?", (presence.node,)
                ).fetchone()
                if row is None:
                    conn.execute(
                        "INSERT INTO nodes (name, online, boot, first_seen_ms) VALUES (?, 0, ?, ?)",
                        (presence.node, presence.boot, at_ms),
                    )
                    row = (presence.boot, -1)
                if not _newer(presence, row[0], row[1]):
                    return "stale"
                if presence.online:
                    self._announce(conn, presence, at_ms)
                else:
                    conn.execute(
                        "UPDATE nodes SET online = 0, boot = ?, left_as = ?, left_at_ms = ?, "
                        "seq = CASE WHEN boot = ? THEN seq ELSE -1 END WHERE name = ?",
                        (presence.boot, str(presence.left), at_ms, presence.boot, presence.node),
                    )
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return "recorded"

    @staticmethod
    def _announce(conn: sqlite3.Connection, presence: Presence, at_ms: int) -> None:
        conn.execute(
            "UPDATE nodes SET online = 1, boot = ?, seq = ?, host = ?, agents = ?, slots = ?, "
            "slots_used = ?, load1 = ?, load5 = ?, load15 = ?, period_s = ?, left_as = NULL, "
            "left_at_ms = NULL, last_seen_ms = ? WHERE name = ?",
            (
                presence.boot,
                presence.seq,
                presence.host,
                json.dumps(presence.agents),
                presence.slots,
                presence.slots_used,
                *presence.load,
                presence.period_s,
                at_ms,
                presence.node,
            ),
        )

    def nodes(self, at_ms: int | None = None) -> list[Node]:
        """Every node heard of, by name."""
        at_ms = now_ms() if at_ms is None else at_ms
        try:
            rows = self.db.conn.execute("SELECT * FROM nodes ORDER BY name").fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return [_node(row, at_ms) for row in rows]

    def get(self, name: str, at_ms: int | None = None) -> Node | None:
        """The node ``name``, or None if it was never heard of."""
        return next((node for node in self.nodes(at_ms) if node.name == name), None)


def _newer(presence: Presence, boot: int, seq: int) -> bool:
    """Whether ``presence`` is newer than a row at (``boot``, ``seq``): a later boot
    always; in the same boot an announcement with a higher count, or a departure."""
    if presence.boot != boot:
        return presence.boot > boot
    if not presence.online:
        return True
    return presence.seq is not None and presence.seq > seq
