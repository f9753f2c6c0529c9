"""JSONL export of the bus for people and for the history pipeline.

Progress is kept per target file, as the last seq exported to it, never by
counting lines: seqs have gaps. A target no export has written starts with the
first message; the usual target's progress is also ``export_state``. Crash
safety: lines are appended and fsynced before the progress moves, and a restart
first truncates any tail written after the last recorded progress, so a line is
never duplicated or lost. Two exports to one target take turns (``flock``).

The target is a file a person chose (``--out``), so nothing in it is cut unless
it is provably ours: ``meta`` keeps, per target path, its size after our last
append. Only bytes past that size, made of export lines past the last seq, are a
crash's tail. A file with anything else in it is refused, never truncated.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from pathlib import Path
from typing import TextIO

from bus.db import transaction, translate
from bus.errors import BusError, ExportTargetMismatch
from bus.messages import Bus, Message

BATCH = 5000
SIZE_KEY = "export_size:"  # + the target's resolved path: its size after our last append
SEQ_KEY = "export_seq:"  # + the target's resolved path: the last seq appended to it


def default_target(bus: Bus) -> Path:
    """Where `orchestrate export` writes unless told otherwise: the history's input."""
    return bus.db.state_dir / "export" / "bus.jsonl"


def _meta_int(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    try:
        return int(row[0]) if row else None
    except ValueError:
        return None  # a damaged record proves nothing: treated as no record


def _recorded_size(conn: sqlite3.Connection, target: Path) -> int | None:
    return _meta_int(conn, SIZE_KEY + str(target))


def _exported_seq(
    conn: sqlite3.Connection, target: Path, recorded_size: int | None, size: int
) -> int:
    """The last seq appended to ``target`` (now ``size`` bytes). Releases before
    per-target progress kept one ``export_state`` for every target: a target they
    wrote goes on from it."""
    seq = _meta_int(conn, SEQ_KEY + str(target))
    if seq is not None:
        return seq
    if recorded_size is None and size == 0:
        return 0  # a new target gets the whole bus
    row = conn.execute("SELECT last_seq FROM export_state WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


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
    the bus did not write there, and BusError when ``path`` cannot be written."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except FileExistsError as exc:  # mkdir met a file where a directory must be
        raise BusError(f"cannot export to {path}: {exc.filename} is not a directory") from exc
    except OSError as exc:
        raise BusError(f"cannot export to {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a second export to this file waits its turn
        return _append_new(bus, path, handle)


def _append_new(bus: Bus, path: Path, handle: TextIO) -> int:
    conn = bus.db.conn
    target = path.resolve()
    is_default = target == default_target(bus).resolve()
    fd = handle.fileno()
    try:
        recorded = _recorded_size(conn, target)
        last = _exported_seq(conn, target, recorded, os.fstat(fd).st_size)
    except sqlite3.Error as exc:
        raise translate(exc, bus.db.path) from exc
    _prepare(path, last, recorded)
    if recorded is None or os.fstat(fd).st_size != recorded:
        _record(conn, last, target, os.fstat(fd).st_size, is_default)  # adopted or new
    written = 0
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
        os.fsync(fd)
        last = batch[-1].seq
        _record(conn, last, target, os.fstat(fd).st_size, is_default)
        written += len(batch)
    return written


def _record(
    conn: sqlite3.Connection, last_seq: int, target: Path, size: int, is_default: bool
) -> None:
    """Progress and the target's size move together, after the lines are on disk."""
    upsert = (
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    with transaction(conn):
        if is_default:
            conn.execute("UPDATE export_state SET last_seq = ? WHERE id = 1", (last_seq,))
        conn.execute(upsert, (SEQ_KEY + str(target), str(last_seq)))
        conn.execute(upsert, (SIZE_KEY + str(target), str(size)))
