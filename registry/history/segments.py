"""The bus as history facts in parquet segments: the build's default input.

Spark spent most of a build parsing JSON (bench/history.py: its floor on the
JSONL export is ~7x its floor on the same facts as parquet). So `history build`
first appends what the bus holds beyond the last segment as one new segment of
facts (``registry.history.facts``: the rules Spark applies to a JSONL line, in
Python, on payloads the bus has already decoded), and the build reads typed
columns instead of text.

Layout: ``history/segments/seg-<first seq>-<last seq>.parquet``, each file the
facts of the bus messages with seqs in that range, in seq order; its footer
counts the malformed messages it skipped. A segment is written to a temporary
name, synced and renamed, so a crash leaves a whole segment or none; the seq
range in the name is the progress (``progress.json`` only remembers ranges that
held no fact). Small segments are merged after a build (``compact``): the merged
file is renamed in before the parts are removed, and a file whose range another
covers is a leftover of that and removed when listed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from registry.history.facts import MALFORMED, Fact, fact_of_line, fact_of_message
from registry.history.schema import FACT_COLUMNS, TOKEN_COLUMNS, HistoryPaths

if TYPE_CHECKING:
    from bus.messages import Bus

READ_BATCH = 20_000
ROW_GROUP = 128 * 1024
COMPACT_AT = 8  # more segments than this after a build: merge the small ones
SMALL_ROWS = 256 * 1024  # a segment with fewer facts is merged with its neighbours
MALFORMED_KEY = b"orchestrate.malformed"
_NAME = re.compile(r"seg-(\d{12})-(\d{12})\.parquet")

FACTS_SCHEMA = pa.schema(
    [
        ("seq", pa.int64()),
        ("ts_ms", pa.int64()),
        ("type", pa.string()),
        ("job_id", pa.string()),
        ("event", pa.string()),
        ("agent", pa.string()),
        ("status_to", pa.string()),
        ("activity", pa.string()),
        ("model", pa.string()),
        *[(name, pa.int64()) for name in TOKEN_COLUMNS],
        ("cost_micro_usd", pa.int64()),
        ("measured", pa.bool_()),
    ]
)
assert tuple(FACTS_SCHEMA.names) == FACT_COLUMNS


@dataclass(frozen=True, order=True)
class Segment:
    """One segment file and the bus seqs it covers."""

    first_seq: int
    last_seq: int
    path: Path


def _named(path: Path) -> Segment | None:
    match = _NAME.fullmatch(path.name)
    return Segment(int(match[1]), int(match[2]), path) if match else None


def list_segments(paths: HistoryPaths) -> list[Segment]:
    """The segments in seq order, leftovers of an interrupted merge removed (a file
    whose range a merged file covers)."""
    found = [s for s in map(_named, paths.segments.glob("seg-*.parquet")) if s]
    found.sort(key=lambda s: (s.first_seq, -s.last_seq))
    kept: list[Segment] = []
    for segment in found:
        if kept and segment.last_seq <= kept[-1].last_seq:
            segment.path.unlink(missing_ok=True)
            continue
        kept.append(segment)
    return kept


def _progress_path(paths: HistoryPaths) -> Path:
    return paths.segments / "progress.json"


def exported_seq(paths: HistoryPaths, segments: list[Segment] | None = None) -> int:
    """The last bus seq the segments cover (whether or not it was a fact)."""
    listed = list_segments(paths) if segments is None else segments
    last = max((s.last_seq for s in listed), default=0)
    try:
        recorded = int(json.loads(_progress_path(paths).read_text())["last_seq"])
    except (OSError, ValueError, KeyError, TypeError):
        recorded = 0
    return max(last, recorded)


def facts_table(facts: Iterable[Fact]) -> pa.Table:
    """Facts as a table of FACTS_SCHEMA (column by column: one pass per column)."""
    rows = list(facts)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(FACT_COLUMNS)
    arrays = [
        pa.array(values, type=field.type)
        for values, field in zip(columns, FACTS_SCHEMA, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=FACTS_SCHEMA)


def write_segment(
    paths: HistoryPaths, table: pa.Table, first_seq: int, last_seq: int, malformed: int
) -> Path:
    """Write one segment atomically (temporary name, fsync, rename)."""
    paths.segments.mkdir(parents=True, exist_ok=True)
    target = paths.segments / f"seg-{first_seq:012d}-{last_seq:012d}.parquet"
    tmp = target.with_suffix(".parquet.tmp")
    metadata = {MALFORMED_KEY: str(malformed).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), tmp, row_group_size=ROW_GROUP)
    with tmp.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, target)
    return target


def _record_progress(paths: HistoryPaths, last_seq: int) -> None:
    path = _progress_path(paths)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"last_seq": last_seq}))
    os.replace(tmp, path)


@dataclass(frozen=True)
class Exported:
    """What one ``export_segments`` appended."""

    messages: int
    facts: int
    malformed: int


def export_segments(
    bus: Bus, paths: HistoryPaths, progress: Callable[[str], None] = lambda line: None
) -> Exported:
    """Append the bus messages after the last segment as one new segment."""
    start = last = exported_seq(paths)
    facts: list[Fact] = []
    messages = malformed = 0
    while batch := bus.read_after(last, limit=READ_BATCH):
        for message in batch:
            fact = fact_of_message(message.to_dict())
            if isinstance(fact, Fact):
                facts.append(fact)
            elif fact == MALFORMED:
                malformed += 1
        messages += len(batch)
        last = batch[-1].seq
    if facts or malformed:
        write_segment(paths, facts_table(facts), start + 1, last, malformed)
    elif last > start:
        paths.segments.mkdir(parents=True, exist_ok=True)
        _record_progress(paths, last)
    return Exported(messages, len(facts), malformed)


def segment_malformed(path: Path) -> int:
    """How many malformed messages the segment's export skipped (its footer)."""
    metadata = pq.read_schema(path).metadata or {}
    try:
        return int(metadata.get(MALFORMED_KEY, b"0"))
    except ValueError:
        return 0


def compact(paths: HistoryPaths, upto_seq: int) -> int:
    """Merge runs of small segments up to ``upto_seq`` into one file each (merged file
    first, parts removed after); returns how many files were merged away."""
    segments = [s for s in list_segments(paths) if s.last_seq <= upto_seq]
    if len(segments) <= COMPACT_AT:
        return 0
    small = [s for s in segments if pq.ParquetFile(s.path).metadata.num_rows < SMALL_ROWS]
    if len(small) < 2:
        return 0
    runs: list[list[Segment]] = [[]]
    for segment in segments:
        if segment in small:
            runs[-1].append(segment)
        elif runs[-1]:
            runs.append([])
    merged = 0
    for run in (r for r in runs if len(r) > 1):
        tables = [pq.read_table(s.path) for s in run]
        malformed = sum(segment_malformed(s.path) for s in run)
        table = pa.concat_tables(tables).combine_chunks()
        write_segment(paths, table, run[0].first_seq, run[-1].last_seq, malformed)
        for segment in run:
            segment.path.unlink(missing_ok=True)
        merged += len(run) - 1
    return merged


def segments_from_lines(paths: HistoryPaths, lines: Iterable[str], *, per_segment: int) -> int:
    """Write JSONL export lines as segments of ``per_segment`` lines (tests and the
    benchmark: the facts `history build` would export from a bus holding them)."""
    written = 0
    chunk: list[str] = []

    def flush() -> None:
        nonlocal written
        outcomes = [fact_of_line(line) for line in chunk]
        facts = [fact for fact in outcomes if isinstance(fact, Fact)]
        malformed = sum(1 for fact in outcomes if fact == MALFORMED)
        chunk.clear()
        if facts:
            seqs = [fact.seq for fact in facts]
            write_segment(paths, facts_table(facts), min(seqs), max(seqs), malformed)
            written += 1

    for line in lines:
        chunk.append(line)
        if len(chunk) >= per_segment:
            flush()
    flush()
    return written


# Parquet segments are this many times smaller than the JSONL of the same messages
# (measured on generated traffic); the JVM's options are planned by JSONL bytes.
JSONL_BYTES_PER_SEGMENT_BYTE = 12


def bytes_to_read(paths: HistoryPaths, full: bool) -> int:
    """About how many bytes of JSONL the next build's read is worth (for choosing the
    JVM's options before it starts): the segments after the last build's, or all."""
    from registry.history.watermark import load_state

    state = None if full else load_state(paths)
    after = state.segments_seq if state is not None and state.input.startswith("segments") else 0
    size = sum(s.path.stat().st_size for s in list_segments(paths) if s.last_seq > after)
    return size * JSONL_BYTES_PER_SEGMENT_BYTE
