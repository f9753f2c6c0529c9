"""The registry's tables in the bus's state.db, and the migrations that build them.

The registry shares the bus's database so that appending an event and moving a
job's status commit in one transaction. It keeps its own version key,
``registry_schema_version``, in the bus's ``meta`` table, and, like the bus,
refuses a database written by a newer release rather than touching it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bus.db import apply_migrations, recorded_version, translate

REGISTRY_SCHEMA_VERSION = 3
VERSION_KEY = "registry_schema_version"


_V1 = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    schema_version INTEGER NOT NULL DEFAULT 1,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    prompt TEXT NOT NULL CHECK (length(prompt) > 0),
    agent TEXT NOT NULL,
    agent_session TEXT NOT NULL,
    broker TEXT,
    topic_prefix TEXT NOT NULL,
    timeout_sec INTEGER NOT NULL,
    idle_timeout_sec INTEGER NOT NULL,
    expected_artifacts TEXT NOT NULL DEFAULT '[]',
    last_seq INTEGER NOT NULL DEFAULT 0,
    auth_token TEXT,
    claimed_at TEXT,
    completed_at TEXT,
    lease_until TEXT,
    lease_until_ms INTEGER,
    retry_count INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    max_seen_seq INTEGER NOT NULL DEFAULT 0,
    missing_seqs TEXT NOT NULL DEFAULT '[]',
    seq_floor INTEGER NOT NULL DEFAULT 0,
    last_event TEXT,
    last_event_at TEXT,
    last_detail TEXT
);
CREATE INDEX IF NOT EXISTS idx_jobs_status ON jobs(status, created_at_ms);
CREATE INDEX IF NOT EXISTS idx_jobs_session ON jobs(agent_session, status, created_at_ms);

CREATE TABLE IF NOT EXISTS job_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    from_status TEXT,
    to_status TEXT NOT NULL,
    transition TEXT,
    reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS idx_job_transitions_job ON job_transitions(job_id, id);

CREATE TABLE IF NOT EXISTS sessions (
    label TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    agent TEXT NOT NULL,
    agent_cmd TEXT NOT NULL DEFAULT '',
    tmux_session TEXT NOT NULL,
    workdir TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS session_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL REFERENCES sessions(label) ON DELETE CASCADE,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    transition TEXT,
    reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS idx_session_transitions_label ON session_transitions(label, id);
"""

# v2: a session remembers the tmux server (socket) it lives on, so that reconciling
# against another server never mistakes it for vanished.
_V2 = """
ALTER TABLE sessions ADD COLUMN tmux_socket TEXT;
"""

# v3: a running job's activity (registry/activity.py) and its history, the agent's
# own session id (to resume its conversation) and when the job counts as done.
_V3 = """
ALTER TABLE jobs ADD COLUMN activity TEXT;
ALTER TABLE jobs ADD COLUMN activity_at_ms INTEGER;
ALTER TABLE jobs ADD COLUMN activity_source TEXT;
ALTER TABLE jobs ADD COLUMN activity_data TEXT;
ALTER TABLE jobs ADD COLUMN agent_session_id TEXT;
ALTER TABLE jobs ADD COLUMN done_when TEXT;
CREATE TABLE IF NOT EXISTS job_activity (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    at_ms INTEGER NOT NULL,
    activity TEXT NOT NULL,
    source TEXT NOT NULL,
    data TEXT NOT NULL,
    seq INTEGER
);
CREATE INDEX IF NOT EXISTS idx_job_activity_job ON job_activity(job_id, id);
"""

# Index n migrates the registry tables from version n to n + 1.
MIGRATIONS: list[str] = [_V1, _V2, _V3]
assert len(MIGRATIONS) == REGISTRY_SCHEMA_VERSION

REGISTRY_TABLES = ("jobs", "job_transitions", "sessions", "session_transitions", "job_activity")


def registry_schema_version(conn: sqlite3.Connection) -> int:
    """The registry version recorded in ``meta`` (0 before the first migration)."""
    return recorded_version(conn, VERSION_KEY)


def ensure_schema(conn: sqlite3.Connection, db_path: Path | str = "state.db") -> None:
    """Bring the registry tables to REGISTRY_SCHEMA_VERSION; refuse newer ones.

    The bus has already migrated its own tables (``meta`` included) on connect.
    """
    try:
        apply_migrations(conn, VERSION_KEY, MIGRATIONS, db_path)
    except sqlite3.Error as exc:
        raise translate(exc, db_path) from exc
