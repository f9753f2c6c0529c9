"""Agent session records (seed 000 glossary): a label, its tmux session, and its state.

States follow ``registry.states.SESSION``: running, stopped (graceful,
resumable), archived (soft stop, tmux left alive), terminated (hard kill,
final). Like jobs, each change is recorded with its reason and announced on
the bus (``session.status``) in the same transaction. This module keeps the
records only; driving tmux is the app's job.
"""

from __future__ import annotations

import builtins
import sqlite3
from dataclasses import dataclass
from typing import Any

from bus.db import now_ms, translate
from bus.messages import Bus, Outgoing, insert_message
from registry import states, store
from registry.errors import InvalidJobInput, SessionNotFound
from registry.records import check_label, iso_from_ms, iso_ms_from_ms

REGISTRY_AGENT = "registry"


@dataclass(frozen=True)
class Session:
    """One agent session as stored."""

    label: str
    state: str
    agent: str
    agent_cmd: str
    tmux_session: str
    workdir: str | None
    created_at: str
    updated_at: str
    tmux_socket: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for `session list --json` and the TUI."""
        return {
            "label": self.label,
            "state": self.state,
            "agent": self.agent,
            "agent_cmd": self.agent_cmd,
            "tmux_session": self.tmux_session,
            "workdir": self.workdir,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "tmux_socket": self.tmux_socket,
        }


def _session(row: sqlite3.Row) -> Session:
    return Session(
        row["label"],
        row["state"],
        row["agent"],
        row["agent_cmd"],
        row["tmux_session"],
        row["workdir"],
        row["created_at"],
        row["updated_at"],
        row["tmux_socket"],
    )


class SessionStore:
    """Session records in the bus's database."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.db = bus.db
        store.ensure_schema(self.db.conn, self.db.path)

    def create(
        self,
        label: str,
        agent: str,
        *,
        tmux_session: str,
        agent_cmd: str = "",
        workdir: str | None = None,
        tmux_socket: str | None = None,
        reason: str = "created",
    ) -> Session:
        """Record a new running session; a terminated one with the same label is
        replaced (its history kept), a live one is refused. ``tmux_session`` is the
        name the tmux driver really uses: the registry does not choose tmux names."""
        check_label("session label", label)
        check_label("agent", agent)
        name = check_label("tmux session", tmux_session)
        try:
            with self.db.transaction() as conn:
                at_ms = now_ms()
                stamp = iso_from_ms(at_ms)
                existing = self._load(conn, label)
                if existing is not None and existing.state != "terminated":
                    raise InvalidJobInput(
                        f"session {label!r} already exists ({existing.state}); "
                        "stop or resume it instead"
                    )
                conn.execute(
                    "INSERT INTO sessions (label, state, agent, agent_cmd, tmux_session, workdir, "
                    "created_at, updated_at, tmux_socket) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(label) DO UPDATE SET state = excluded.state, "
                    "agent = excluded.agent, agent_cmd = excluded.agent_cmd, "
                    "tmux_session = excluded.tmux_session, workdir = excluded.workdir, "
                    "created_at = excluded.created_at, updated_at = excluded.updated_at, "
                    "tmux_socket = excluded.tmux_socket",
                    (
                        label,
                        states.SESSION.initial,
                        agent,
                        agent_cmd,
                        name,
                        workdir,
                        stamp,
                        stamp,
                        tmux_socket,
                    ),
                )
                before = existing.state if existing is not None else None
                self._record(conn, label, at_ms, before, states.SESSION.initial, reason, None)
                return self._require(conn, label)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def get(self, label: str) -> Session:
        """The session ``label``; SessionNotFound if there is none."""
        return self._require(self.db.conn, label)

    def list(self, *, state: str | None = None) -> list[Session]:
        """Sessions oldest first, optionally only one state."""
        if state is not None:
            states.SESSION.require_state(state)
        sql = "SELECT * FROM sessions"
        params: tuple[str, ...] = ()
        if state is not None:
            sql, params = sql + " WHERE state = ?", (state,)
        try:
            rows = self.db.conn.execute(sql + " ORDER BY created_at, label", params).fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc
        return [_session(row) for row in rows]

    def set_state(
        self, label: str, target: str, reason: str = "", *, transition: str | None = None
    ) -> Session:
        """Move a session through the session machine (IllegalTransition if not allowed)."""
        try:
            with self.db.transaction() as conn:
                session = self._require(conn, label)
                if transition is not None:
                    target = states.next_state(states.SESSION, session.state, transition, label)
                states.check_transition(states.SESSION, session.state, target, label)
                at_ms = now_ms()
                conn.execute(
                    "UPDATE sessions SET state = ?, updated_at = ? WHERE label = ?",
                    (target, iso_from_ms(at_ms), label),
                )
                self._record(conn, label, at_ms, session.state, target, reason, transition)
                return self._require(conn, label)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def stop(self, label: str, mode: str = "graceful", reason: str = "") -> Session:
        """`session stop --mode graceful|soft|hard`: stopped, archived or terminated."""
        transitions = {"graceful": "stop", "soft": "soft_stop", "hard": "hard_stop"}
        if mode not in transitions:
            raise InvalidJobInput(f"stop mode must be graceful, soft or hard, got {mode!r}")
        name = transitions[mode]
        return self.set_state(label, "", reason or f"{mode} stop", transition=name)

    def resume(self, label: str, reason: str = "resumed") -> Session:
        """stopped|archived -> running."""
        return self.set_state(label, "", reason, transition="resume")

    def history(self, label: str) -> builtins.list[states.StateChange]:
        """The session's recorded transitions, oldest first."""
        self.get(label)
        rows = self.db.conn.execute(
            "SELECT at, from_state, to_state, reason, transition FROM session_transitions "
            "WHERE label = ? ORDER BY id",
            (label,),
        ).fetchall()
        return [states.StateChange(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def why(self, label: str) -> str:
        """One line saying why the session is in its current state."""
        return states.explain(states.SESSION, self.history(label))

    def _record(
        self,
        conn: sqlite3.Connection,
        label: str,
        at_ms: int,
        before: str | None,
        after: str,
        reason: str,
        transition: str | None,
    ) -> None:
        conn.execute(
            "INSERT INTO session_transitions (label, at, at_ms, from_state, to_state, reason, "
            "transition) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (label, iso_ms_from_ms(at_ms), at_ms, before, after, reason, transition),
        )
        insert_message(
            conn,
            self.bus.blobs,
            Outgoing(
                type="session.status",
                from_agent=REGISTRY_AGENT,
                correlation_id=label,
                payload={"label": label, "from": before, "to": after, "reason": reason},
            ),
        )

    def _load(self, conn: sqlite3.Connection, label: str) -> Session | None:
        row = conn.execute("SELECT * FROM sessions WHERE label = ?", (label,)).fetchone()
        return _session(row) if row is not None else None

    def _require(self, conn: sqlite3.Connection, label: str) -> Session:
        session = self._load(conn, label)
        if session is None:
            raise SessionNotFound(f"no session {label!r}")
        return session
