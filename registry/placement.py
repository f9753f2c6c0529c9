"""Placement: which fleet node a job is for (``submit --node NAME|any``, ``job register --node``).

A placement is asked for once, when the job is registered, and chosen from the nodes
table (``registry/nodes.py``): a named node if it is online, has the job's agent and a
free slot; ``any``: the online node with the agent and the most free slots (then the
lowest load, then the name). With none, the job stays ``pending`` and its placement
says why (``job why``); every announcement of a node tries the waiting ones again
(``registry/fleet_feed.py``), oldest first. A slot counts as taken from the choice
until the node reports the job running, so two placements in a row never share one.

A placed job's queue task is settled when it is registered: the job is the node's,
so no local ``job pick`` (or queue worker) ever takes it. The node is sent a signed
``take`` command (``registry/fleet_commands.py``) by ``submit`` at once and again by
the ingest bridge at each announcement of the node while the job is still pending
(its id is the job's, so the node takes it once).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bus import claims
from bus.db import apply_migrations, now_ms, translate
from bus.messages import Bus
from registry.errors import InvalidJobInput
from registry.nodes import Node, NodeStore
from registry.presence import is_node_name
from registry.records import iso_from_ms
from registry.store import ensure_schema
from registry.vocabulary import JobStatus

ANY_NODE: Final = "any"
"""``--node any``: whichever node can take the job (so no node may be called so)."""
VERSION_KEY: Final = "placements_schema_version"
MAX_NAMED_IN_REASON: Final = 5

_V1 = """
CREATE TABLE IF NOT EXISTS placements (
    job_id TEXT PRIMARY KEY REFERENCES jobs(job_id) ON DELETE CASCADE,
    requested TEXT NOT NULL,
    agent TEXT NOT NULL,
    node TEXT,
    reason TEXT NOT NULL,
    asked_at_ms INTEGER NOT NULL,
    placed_at_ms INTEGER
);
CREATE INDEX IF NOT EXISTS idx_placements_waiting ON placements(asked_at_ms) WHERE node IS NULL;
"""
MIGRATIONS: list[str] = [_V1]


@dataclass(frozen=True)
class Placement:
    """Where a job was asked to run, and where it goes (None: waiting, ``reason`` why)."""

    job_id: str
    requested: str
    agent: str
    node: str | None
    reason: str
    placed_at_ms: int | None = None

    def why(self) -> str:
        """The line ``job why`` adds."""
        if self.node is not None:
            when = iso_from_ms(self.placed_at_ms) if self.placed_at_ms else "?"
            return f"placed on node {self.node} at {when} ({self.reason})"
        return f"waiting for a node ({self.requested}): {self.reason}"


def check_requested(requested: str) -> str:
    """``requested`` if it is ``any`` or can name a node (``InvalidJobInput`` else)."""
    if requested != ANY_NODE and not is_node_name(requested):
        shown = requested.encode("unicode_escape").decode("ascii")[:64]
        raise InvalidJobInput(f"--node must be a node's name or {ANY_NODE!r}, got {shown!r}")
    return requested


def choose(
    nodes: Sequence[Node], requested: str, agent: str, taken: Counter[str]
) -> tuple[Node | None, str]:
    """The node for a job of ``agent`` asked for ``requested``, or None and why.
    ``taken``: slots chosen for jobs their nodes have not reported yet."""

    def refusal(node: Node) -> str | None:
        if not node.online:
            if node.stale:
                return f"{node.name} is silent (stale)"
            return f"{node.name} is offline ({node.left or 'never announced'})"
        if not node.has_agent(agent):
            return f"{node.name} has no {agent}"
        if node.slots_free - taken[node.name] <= 0:
            return (
                f"{node.name} has no free slot ({node.slots_used + taken[node.name]}/{node.slots})"
            )
        return None

    if requested != ANY_NODE:
        named = next((node for node in nodes if node.name == requested), None)
        if named is None:
            return None, f"node {requested} was never heard of"
        why = refusal(named)
        return (named, f"asked for {requested}") if why is None else (None, why)
    fitting = [node for node in nodes if refusal(node) is None]
    if not fitting:
        if not nodes:
            return None, "no node heard of"
        reasons = [str(refusal(node)) for node in nodes[:MAX_NAMED_IN_REASON]]
        more = len(nodes) - MAX_NAMED_IN_REASON
        tail = f"; {more} more" if more > 0 else ""
        return None, f"no online node with {agent} and a free slot ({'; '.join(reasons)}{tail})"
    best = min(fitting, key=lambda n: (-(n.slots_free - taken[n.name]), n.load[0], n.name))
    return best, f"any: most free slots with {agent}"


def placed_node(conn: sqlite3.Connection, job_id: str) -> tuple[bool, str | None]:
    """(whether ``job_id`` was placed at all, the node it is placed on), read without
    creating anything: a command on a local job must leave the database as it was."""
    try:
        row = conn.execute("SELECT node FROM placements WHERE job_id = ?", (job_id,)).fetchone()
    except sqlite3.OperationalError:  # no placements table: nothing was ever placed here
        return False, None
    return (row is not None, row[0] if row is not None else None)


class PlacementStore:
    """The ``placements`` table, beside the jobs it places."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.db = bus.db
        self.nodes = NodeStore(bus)
        ensure_schema(self.db.conn, self.db.path)  # the jobs table it refers to
        try:
            apply_migrations(self.db.conn, VERSION_KEY, MIGRATIONS, self.db.path)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def _taken(self, conn: sqlite3.Connection) -> Counter[str]:
        """Slots chosen for jobs still pending (their node has not reported them)."""
        rows = conn.execute(
            "SELECT p.node FROM placements p JOIN jobs j ON j.job_id = p.job_id "
            "WHERE p.node IS NOT NULL AND j.status = ?",
            (JobStatus.PENDING,),
        ).fetchall()
        return Counter(row[0] for row in rows)

    def request(self, job_id: str, requested: str, agent: str) -> Placement:
        """Record where ``job_id`` should run and choose now if a node can take it."""
        check_requested(requested)
        at_ms = now_ms()
        try:
            with self.db.transaction() as conn:
                node, reason = choose(self.nodes.nodes(at_ms), requested, agent, self._taken(conn))
                placed = at_ms if node is not None else None
                conn.execute(
                    "INSERT INTO placements (job_id, requested, agent, node, reason, asked_at_ms, "
                    "placed_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (job_id, requested, agent, node.name if node else None, reason, at_ms, placed),
                )
                claims.settle(conn, job_id, result="placed on the fleet", at_ms=at_ms)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return Placement(job_id, requested, agent, node.name if node else None, reason, placed)

    def place_waiting(self) -> list[Placement]:
        """Try every waiting placement of a still-pending job again, oldest first; the
        ones placed now."""
        placed: list[Placement] = []
        at_ms = now_ms()
        try:
            with self.db.transaction() as conn:
                rows = conn.execute(
                    "SELECT p.job_id, p.requested, p.agent FROM placements p "
                    "JOIN jobs j ON j.job_id = p.job_id WHERE p.node IS NULL AND j.status = ? "
                    "ORDER BY p.asked_at_ms",
                    (JobStatus.PENDING,),
                ).fetchall()
                if not rows:
                    return []
                nodes = self.nodes.nodes(at_ms)
                taken = self._taken(conn)
                for job_id, requested, agent in rows:
                    node, reason = choose(nodes, requested, agent, taken)
                    conn.execute(
                        "UPDATE placements SET node = ?, reason = ?, placed_at_ms = ? "
                        "WHERE job_id = ?",
                        (node.name if node else None, reason, at_ms if node else None, job_id),
                    )
                    if node is not None:
                        taken[node.name] += 1
                        placed.append(Placement(job_id, requested, agent, node.name, reason, at_ms))
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return placed

    def pending_on(self, node: str) -> list[str]:
        """The jobs placed on ``node`` it has not reported yet (still pending), oldest first."""
        try:
            rows = self.db.conn.execute(
                "SELECT p.job_id FROM placements p JOIN jobs j ON j.job_id = p.job_id "
                "WHERE p.node = ? AND j.status = ? ORDER BY p.placed_at_ms",
                (node, JobStatus.PENDING),
            ).fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return [str(row[0]) for row in rows]

    def get(self, job_id: str) -> Placement | None:
        """The placement of ``job_id`` (None: it was never asked to run on a node)."""
        try:
            row = self.db.conn.execute(
                "SELECT job_id, requested, agent, node, reason, placed_at_ms FROM placements "
                "WHERE job_id = ?",
                (job_id,),
            ).fetchone()
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return Placement(*row) if row is not None else None
