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
from typing import Any, Final

from bus.db import now_ms
from bus.messages import Bus
from registry import states
from registry.errors import InvalidJobInput, SessionNotFound
from registry.records import check_label, iso_from_ms
from registry.store import RecordKind, Records, record_dict
from registry.vocabulary import MessageType, SessionStatus

STOP_TRANSITIONS: Final = {"graceful": "stop", "soft": "soft_stop", "hard": "hard_stop"}
"""`session stop --mode`: the session machine's move each mode makes."""


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
        return record_dict(self)


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


SESSIONS: Final = RecordKind(
    table="sessions",
    key="label",
    history_table="session_transitions",
    from_column="from_state",
    to_column="to_state",
    decode=_session,
    missing=lambda label: SessionNotFound(f"no session {label!r}"),
)


class SessionStore:
    """Session records in the bus's database."""

    def __init__(self, bus: Bus) -> None:
        self.records = Records(bus, SESSIONS)
        self.bus = bus
        self.db = bus.db

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
        with self.records.write() as conn:
            at_ms = now_ms()
            stamp = iso_from_ms(at_ms)
            existing = self.records.load(conn, label)
            if existing is not None and existing.state != SessionStatus.TERMINATED:
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
            return self.records.require(conn, label)

    def get(self, label: str) -> Session:
        """The session ``label``; SessionNotFound if there is none."""
        return self.records.get(label)

    def list(self, *, state: str | None = None) -> list[Session]:
        """Sessions oldest first, optionally only one state."""
        if state is not None:
            states.SESSION.require_state(state)
        sql = "SELECT * FROM sessions"
        params: tuple[str, ...] = ()
        if state is not None:
            sql, params = sql + " WHERE state = ?", (state,)
        rows = self.records.read(sql + " ORDER BY created_at, label", params)
        return [_session(row) for row in rows]

    def set_state(
        self, label: str, target: str, reason: str = "", *, transition: str | None = None
    ) -> Session:
        """Move a session through the session machine (IllegalTransition if not allowed)."""
        with self.records.write() as conn:
            session = self.records.require(conn, label)
            if transition is not None:
                target = states.next_state(states.SESSION, session.state, transition, label)
            states.check_transition(states.SESSION, session.state, target, label)
            at_ms = now_ms()
            conn.execute(
                "UPDATE sessions SET state = ?, updated_at = ? WHERE label = ?",
                (target, iso_from_ms(at_ms), label),
            )
            self._record(conn, label, at_ms, session.state, target, reason, transition)
            return self.records.require(conn, label)

    def stop(self, label: str, mode: str = "graceful", reason: str = "") -> Session:
        """`session stop --mode graceful|soft|hard`: stopped, archived or terminated."""
        if mode not in STOP_TRANSITIONS:
            raise InvalidJobInput(f"stop mode must be graceful, soft or hard, got {mode!r}")
        name = STOP_TRANSITIONS[mode]
        return self.set_state(label, "", reason or f"{mode} stop", transition=name)

    def resume(self, label: str, reason: str = "resumed") -> Session:
        """stopped|archived -> running."""
        return self.set_state(label, "", reason, transition="resume")

    def history(self, label: str) -> builtins.list[states.StateChange]:
        """The session's recorded transitions, oldest first."""
        return self.records.history(label)

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
        """One move: its history row and its ``session.status`` message, together."""
        self.records.record_move(conn, label, at_ms, before, after, reason, transition)
        payload = {"label": label, "from": before, "to": after, "reason": reason}
        self.records.announce(conn, MessageType.SESSION_STATUS, label, payload)
