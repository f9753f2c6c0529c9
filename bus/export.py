"""JSONL export of the bus for people and for the history pipeline.

Progress is tracked in ``export_state`` (the last exported seq), never by
counting lines: seqs have gaps. Crash safety: lines are appended and fsynced
before the state row moves, and a restart first truncates any tail written
after the last recorded seq, so a line is never duplicated or lost.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from bus.db import transaction, translate
from bus.messages import Bus, Message

BATCH = 5000


def _exported_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT last_seq FROM export_state WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def _trim_to(path: Path, last_seq: int) -> None:
    """Drop lines past ``last_seq`` left by a crash between write and state update."""
    if not path.exists():
        return
    with path.open("rb+") as handle:
        keep = 0
        for line in handle:
            try:
                seq = int(json.loads(line)["seq"])
            except (ValueError, KeyError, TypeError):
                break  # a torn last line
            if seq > last_seq:
                break
            keep += len(line)
        handle.truncate(keep)


def export_jsonl(bus: Bus, path: Path) -> int:
    """Append messages not yet exported to ``path``; returns how many were written."""
    conn = bus.db.conn
    try:
        last = _exported_seq(conn)
    except sqlite3.Error as exc:
        raise translate(exc, bus.db.path) from exc
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _trim_to(path, last)
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        while True:
            batch: list[Message] = bus.read_after(last, limit=BATCH)
            if not batch:
                break
            handle.write(
                "".join(
                    json.dumps(m.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
                    for m in batch
                )
            )
            handle.flush()
            os.fsync(handle.fileno())
            last = batch[-1].seq
            with transaction(conn):
                conn.execute("UPDATE export_state SET last_seq = ? WHERE id = 1", (last,))
            written += len(batch)
    return written
