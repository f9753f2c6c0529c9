"""The bus's tables, and the ordered migrations that build them.

``MIGRATIONS[n]`` takes a database from schema_version n to n + 1. A database
whose version is higher than ``SCHEMA_VERSION`` was written by a newer release
and is refused rather than touched.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

_V1 = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    ts_ms INTEGER NOT NULL,
    from_agent TEXT NOT NULL,
    to_agent TEXT,
    type TEXT NOT NULL,
    correlation_id TEXT,
    in_reply_to TEXT,
    payload TEXT,
    payload_ref TEXT,
    CHECK (payload IS NULL OR payload_ref IS NULL)
);
CREATE INDEX IF NOT EXISTS idx_messages_to_seq ON messages(to_agent, seq);
CREATE INDEX IF NOT EXISTS idx_messages_correlation_seq ON messages(correlation_id, seq);
CREATE INDEX IF NOT EXISTS idx_messages_type_from_ts ON messages(type, from_agent, ts_ms);

CREATE TABLE IF NOT EXISTS cursors (
    agent_id TEXT PRIMARY KEY,
    last_acked_seq INTEGER NOT NULL DEFAULT 0,
    updated_at_ms INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS heartbeats (
    agent_id TEXT PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    current_task TEXT,
    progress REAL
);

-- A lease queue. A pending task has lease_until_ms = its enqueue time, so one
-- ordered scan of the partial index finds both never-claimed and expired
-- tasks, oldest first. attempts fences completion: only the holder of the
-- current attempt may complete.
CREATE TABLE IF NOT EXISTS task_claims (
    task_id TEXT PRIMARY KEY,
    queue TEXT NOT NULL DEFAULT 'default',
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'claimed', 'done')),
    claimed_by TEXT,
    claimed_at_ms INTEGER,
    lease_until_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL,
    completed_at_ms INTEGER,
    payload TEXT,
    result TEXT
);
CREATE INDEX IF NOT EXISTS idx_task_claims_ready
    ON task_claims(queue, lease_until_ms) WHERE state != 'done';

CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS export_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO export_state (id, last_seq) VALUES (1, 0);
"""

# Index n migrates from version n to n + 1 (version 0 = empty database).
MIGRATIONS: list[str] = [_V1]
assert len(MIGRATIONS) == SCHEMA_VERSION
