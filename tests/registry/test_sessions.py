"""Session records and their state machine on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from bus.db import BusDB
from bus.messages import Bus
from registry.errors import IllegalTransition, InvalidJobInput, SessionNotFound, UnknownStatus
from registry.sessions import SessionStore


@pytest.fixture
def sessions(tmp_path: Path) -> SessionStore:
    return SessionStore(Bus(BusDB(tmp_path / "state")))


def test_create_and_read(sessions: SessionStore) -> None:
    created = sessions.create(
        "tmux:claude-a",
        "claude-code",
        tmux_session="tmux%3Aclaude-a",
        agent_cmd="claude",
        workdir="w",
    )
    assert created.state == "running" and created.tmux_session == "tmux%3Aclaude-a"
    assert sessions.get("tmux:claude-a") == created
    assert [s.label for s in sessions.list()] == ["tmux:claude-a"]
    assert created.to_dict()["agent_cmd"] == "claude"
    with pytest.raises(InvalidJobInput, match="already exists"):
        sessions.create("tmux:claude-a", "claude-code", tmux_session="tmux:claude-a")
    with pytest.raises(SessionNotFound):
        sessions.get("tmux:nobody")


def test_the_tmux_name_is_the_callers_and_must_be_a_word(sessions: SessionStore) -> None:
    """The registry records the name the tmux driver uses; it never makes one up."""
    assert sessions.create("b", "codex", tmux_session="b%3A1").tmux_session == "b%3A1"
    for bad in ("", "two words"):
        with pytest.raises(InvalidJobInput, match="tmux session"):
            sessions.create("c", "codex", tmux_session=bad)
    assert [s.label for s in sessions.list()] == ["b"]


def test_stop_modes_and_resume(sessions: SessionStore) -> None:
    """graceful -> stopped, soft -> archived, hard -> terminated (final)."""
    sessions.create("a", "codex", tmux_session="a")
    assert sessions.stop("a", "graceful").state == "stopped"
    assert sessions.resume("a").state == "running"
    assert sessions.stop("a", "soft").state == "archived"
    assert sessions.resume("a").state == "running"
    assert sessions.stop("a", "hard").state == "terminated"
    with pytest.raises(IllegalTransition):
        sessions.resume("a")
    with pytest.raises(InvalidJobInput, match="graceful, soft or hard"):
        sessions.stop("a", "gentle")
    with pytest.raises(UnknownStatus):
        sessions.set_state("a", "sleeping")
    assert "terminated at" in sessions.why("a")
    assert "resumed 2\u00d7" in sessions.why("a")
    moves = [(c.from_state, c.to_state) for c in sessions.history("a")]
    assert moves[0] == (None, "running") and moves[-1] == ("running", "terminated")
    kinds = [m.payload["to"] for m in sessions.bus.read_after(0) if m.type == "session.status"]
    assert kinds == ["running", "stopped", "running", "archived", "running", "terminated"]


def test_terminated_label_can_be_created_again(sessions: SessionStore) -> None:
    sessions.create("a", "codex", tmux_session="a")
    sessions.stop("a", "hard")
    again = sessions.create("a", "claude-code", tmux_session="a")
    assert (again.state, again.agent) == ("running", "claude-code")
    assert [c.to_state for c in sessions.history("a")] == ["running", "terminated", "running"]


def test_a_registry_v1_database_migrates_to_the_latest_keeping_its_sessions(tmp_path: Path) -> None:
    """Upgrading orchestrate adds the tmux_socket column without losing recorded sessions."""
    from bus.db import apply_migrations, connect
    from registry import store

    conn = connect(tmp_path / "state.db")
    apply_migrations(conn, store.VERSION_KEY, store.MIGRATIONS[:1], tmp_path)  # as v1 left it
    conn.execute(
        "INSERT INTO sessions (label, state, agent, agent_cmd, tmux_session, created_at, "
        "updated_at) VALUES ('old', 'running', 'demo', '', 'old', 'x', 'x')"
    )
    conn.close()
    sessions = SessionStore(Bus(BusDB(tmp_path)))
    assert store.registry_schema_version(sessions.db.conn) == store.REGISTRY_SCHEMA_VERSION == 3
    old = sessions.get("old")
    assert (old.state, old.tmux_socket) == ("running", None)
    made = sessions.create("new", "demo", tmux_session="new", tmux_socket="orch-a")
    assert made.tmux_socket == "orch-a" and made.to_dict()["tmux_socket"] == "orch-a"
