"""JSONL export of the bus for people and for the history pipeline.

Progress is tracked in ``export_state`` (the last exported seq), never by
counting lines: seqs have gaps. Crash safety: lines are appended and fsynced
before the state row moves, and a restart first truncates any tail written
after the last recorded state, so a line is never duplicated or lost.

The target is a file a person chose (``--out``), so nothing in it is cut unless
it is provably ours: ``meta`` keeps, per target path, its size after our last
append. Only bytes past that size, made of export lines past the last seq, are a
crash's tail. A file with anything else in it is refused, never truncated.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from bus.db import transaction, translate
from bus.errors import ExportTargetMismatch
from bus.messages import Bus, Message

BATCH = 5000
SIZE_KEY = "export_size:"  # + the target's resolved path: its size after our last append


def _exported_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT last_seq FROM export_state WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def _recorded_size(conn: sqlite3.Connection, target: Path) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SIZE_KEY + str(target),)).fetchone()
    try:
        return int(row[0]) if row else None
    except ValueError:
        return None  # a damaged record proves nothing: treated as no record


def _export_seqs(lines: list[bytes]) -> list[int] | None:
    """The seq of each line, or None when a line is not one the export writes. The
    last line may be torn (a crash mid-write): it has no newline and is skipped."""
    if lines and not lines[-1].endswith(b"\n"):
        lines = lines[:-1]
    seqs = []
    for line in lines:
        try:
            seq = json.loads(line)["seq"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(seq, int) or isinstance(seq, bool):
            return None
        seqs.append(seq)
    return seqs


def _is_crash_tail(path: Path, offset: int, last_seq: int) -> bool:
    """Whether everything past ``offset`` is export lines after ``last_seq``: what a
    crash between appending and recording progress leaves behind."""
    with path.open("rb") as handle:
        if offset:
            handle.seek(offset - 1)
            if handle.read(1) != b"\n":
                return False
        seqs = _export_seqs(handle.readlines())
    return seqs is not None and all(seq > last_seq for seq in seqs)


def _legacy_keep(path: Path, last_seq: int) -> int | None:
    """For a target exported to before sizes were recorded: the length of its lines
    up to ``last_seq`` when the whole file is this export (its lines, then at most a
    crash's tail), else None."""
    if last_seq <= 0:
        return None
    with path.open("rb") as handle:
        lines = handle.readlines()
    seqs = _export_seqs(lines)
    if not seqs or seqs[0] > last_seq or seqs != sorted(seqs):
        return None
    return sum(len(line) for line, seq in zip(lines, seqs, strict=False) if seq <= last_seq)


def _prepare(path: Path, last_seq: int, recorded: int | None) -> None:
    """Make ``path`` safe to append to: cut a crash's tail, refuse foreign data."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0 or size == recorded:
        return
    if recorded is not None:
        if size > recorded and _is_crash_tail(path, recorded, last_seq):
            os.truncate(path, recorded)
            return
        raise ExportTargetMismatch(
            f"{path} changed since the last export ({recorded} bytes then, {size} now): "
            "move it away; the next export starts a new file"
        )
    keep = _legacy_keep(path, last_seq)
    if keep is None:
        raise ExportTargetMismatch(
            f"{path} already holds data this bus did not export to it: "
            "choose another --out or move the file away"
        )
    os.truncate(path, keep)


def export_jsonl(bus: Bus, path: Path) -> int:
    """Append messages not yet exported to ``path``; returns how many were written.

    Raises ExportTargetMismatch, before writing anything, when ``path`` holds data
    the bus did not write there."""
    conn = bus.db.conn
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = path.resolve()
    try:
        last = _exported_seq(conn)
        recorded = _recorded_size(conn, target)
    except sqlite3.Error as exc:
        raise translate(exc, bus.db.path) from exc
    _prepare(path, last, recorded)
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        if recorded is None or os.fstat(fd).st_size != recorded:
            _record(conn, last, target, os.fstat(fd).st_size)  # adopted or new target
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
            _record(conn, last, target, os.fstat(fd).st_size)
            written += len(batch)
    return written


def _record(conn: sqlite3.Connection, last_seq: int, target: Path, size: int) -> None:
    """Progress and the target's size move together, after the lines are on disk."""
    with transaction(conn):
        conn.execute("UPDATE export_state SET last_seq = ? WHERE id = 1", (last_seq,))
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (SIZE_KEY + str(target), str(size)),
        )
