"""The build watermark (history/state.json) and the plan of what the next build reads.

A build records, per local input file, the byte offset just past the last
complete line it read, plus a hash of the bytes before that offset. The next
incremental build copies only the bytes after the offset into a staging file
and hands that to Spark; if a file shrank or its bytes before the offset
changed (a re-export), the build falls back to a full rebuild. Inputs Spark
reads from elsewhere (hdfs://, s3a://) have no offsets: they are read whole
and filtered by ``seq > max_seq``, which also guards local reads against a
line read twice.

It also owns the facts directory's file moves: the swap of a full rebuild, the
append of an incremental one, and the journal that makes that append undoable.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from registry.history.errors import BuildAlreadyRunning, CorruptHistory, NoHistoryInput
from registry.history.schema import HistoryPaths
from registry.wording import counted

STATE_VERSION = 2  # 2: facts carry ts_ms, activity and usage; cut-off and open jobs kept
CHECK_BYTES = 256
COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileMark:
    """How far a build read one local input file."""

    offset: int
    check: str  # sha256 of the CHECK_BYTES before offset


@dataclass
class BuildState:
    """What state.json holds: the watermark plus counters shown by `history show`."""

    input: str
    build_id: str = ""
    built_at_ms: int = 0
    mode: str = "full"
    max_seq: int = 0
    max_ts_ms: int = 0
    files: dict[str, FileMark] = field(default_factory=dict)
    facts_rows: int = 0
    malformed_total: int = 0
    malformed_last: int = 0
    new_rows_last: int = 0
    cutoff_ms: int = 0  # jobs still running were counted up to here
    open_jobs: list[str] = field(default_factory=list)  # the jobs running at cutoff_ms
    segments_seq: int = 0  # the last bus seq of the segments read (segment input)
    version: int = STATE_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> BuildState:
        files = {name: FileMark(**mark) for name, mark in raw.pop("files", {}).items()}
        return cls(files=files, **raw)


@contextlib.contextmanager
def build_lock(paths: HistoryPaths) -> Iterator[None]:
    """One build at a time per state dir, refused at once otherwise: two incremental
    builds would both append the facts of the same new lines (counted twice), and
    two full ones race on swapping the facts in. The lock ends with its process."""
    paths.root.mkdir(parents=True, exist_ok=True)
    with paths.build_lock.open("a", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildAlreadyRunning(
                f"another history build is running on {paths.root} (a rebuild in the "
                "control room, or another `history build`): wait for it to finish"
            ) from None
        yield


def load_state(paths: HistoryPaths) -> BuildState | None:
    """The last build's state, or None when no build has finished."""
    try:
        text = paths.state.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        raw = json.loads(text)
        if isinstance(raw, dict) and raw.get("version", STATE_VERSION) != STATE_VERSION:
            return None  # an older layout: the next build is a full one
        return BuildState.from_dict(raw)
    except (ValueError, TypeError) as exc:
        raise CorruptHistory(f"cannot read {paths.state}: {exc}") from exc


def save_state(paths: HistoryPaths, state: BuildState) -> None:
    """Write state.json atomically: a crash leaves the old watermark or the new one."""
    paths.root.mkdir(parents=True, exist_ok=True)
    tmp = paths.state.with_suffix(".json.tmp")
    tmp.write_text(state.to_json(), encoding="utf-8")
    os.replace(tmp, paths.state)


@dataclass(frozen=True)
class InputSpec:
    """The input as given: local files we can track by offset, or a URI for Spark."""

    label: str
    local_files: tuple[Path, ...] = ()
    remote_uri: str | None = None


def resolve_input(given: str | None, paths: HistoryPaths) -> InputSpec:
    """Turn ``--input`` (a path, file:// URI or any Spark URI) into an InputSpec."""
    if given is None:
        local = paths.default_input
    else:
        parsed = urlparse(given)
        if parsed.scheme not in ("", "file"):
            return InputSpec(label=given, remote_uri=given)
        local = Path(parsed.path if parsed.scheme == "file" else given).expanduser().resolve()
    if local.is_dir():
        files = tuple(sorted(p for p in local.iterdir() if p.suffix in (".jsonl", ".ndjson")))
        if not files:
            raise NoHistoryInput(f"no *.jsonl file in {local}")
    elif local.is_file():
        files = (local,)
    elif given is None:
        raise NoHistoryInput(f"no bus export at {local}: run `orchestrate export` first")
    else:
        raise NoHistoryInput(f"input not found: {local}")
    if all(p.stat().st_size == 0 for p in files):
        raise NoHistoryInput(f"{local} holds no message yet: nothing to build")
    return InputSpec(label=str(local), local_files=files)


@dataclass(frozen=True)
class ReadPlan:
    """What one build hands to Spark."""

    full: bool
    uris: tuple[str, ...]  # what Spark reads; empty when nothing is new
    min_seq: int  # keep only seq > min_seq (0 on a full build)
    marks: dict[str, FileMark]  # the offsets to record once the build succeeds
    reason: str  # one line for the progress log


def _complete_end(path: Path, size: int) -> int:
    """The offset just past the last newline at or before ``size``."""
    with path.open("rb") as handle:
        end = size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            block = handle.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                return start + cut + 1
            end = start
    return 0


def _check(path: Path, offset: int) -> str:
    with path.open("rb") as handle:
        start = max(0, offset - CHECK_BYTES)
        handle.seek(start)
        return hashlib.sha256(handle.read(offset - start)).hexdigest()


def _copy_range(source: Path, target: Path, start: int, end: int) -> None:
    with source.open("rb") as src, target.open("wb") as dst:
        src.seek(start)
        remaining = end - start
        while remaining > 0:
            chunk = src.read(min(COPY_CHUNK, remaining))
            if not chunk:
                break
            dst.write(chunk)
            remaining -= len(chunk)


def plan_read(
    spec: InputSpec, previous: BuildState | None, paths: HistoryPaths, full: bool
) -> ReadPlan:
    """Decide between a full and an incremental read, staging new tails of local files."""
    if spec.remote_uri is not None:
        if full or previous is None or previous.input != spec.label:
            return ReadPlan(True, (spec.remote_uri,), 0, {}, "full read of remote input")
        return ReadPlan(False, (spec.remote_uri,), previous.max_seq, {}, "remote input: seq filter")
    ends = {p: _complete_end(p, p.stat().st_size) for p in spec.local_files}
    marks = {str(p): FileMark(end, _check(p, end)) for p, end in ends.items()}
    whole = tuple(p.as_uri() for p in spec.local_files)
    if full:
        return ReadPlan(True, whole, 0, marks, "full rebuild (--full)")
    if previous is None or previous.input != spec.label or not paths.facts.is_dir():
        return ReadPlan(True, whole, 0, marks, "first build: full")
    shutil.rmtree(paths.staging, ignore_errors=True)
    paths.staging.mkdir(parents=True)
    staged: list[str] = []
    for index, (path, end) in enumerate(ends.items()):
        mark = previous.files.get(str(path))
        start = 0
        if mark is not None:
            if mark.offset > end or _check(path, mark.offset) != mark.check:
                return ReadPlan(True, whole, 0, marks, f"{path.name} was rewritten: full")
            start = mark.offset
        if end > start:
            target = paths.staging / f"part-{index:05d}.jsonl"
            _copy_range(path, target, start, end)
            staged.append(target.as_uri())
    reason = (
        f"incremental: {counted(len(staged), 'file')} with new lines after seq {previous.max_seq}"
    )
    return ReadPlan(False, tuple(staged), previous.max_seq, marks, reason)


def bytes_to_read(spec: InputSpec, paths: HistoryPaths, full: bool) -> int | None:
    """About how many input bytes the next build reads (None for a remote input), for
    choosing the JVM's options before it starts; plan_read decides for real."""
    if spec.remote_uri is not None:
        return None
    sizes = {p: p.stat().st_size for p in spec.local_files}
    previous = None if full else load_state(paths)
    if previous is None or previous.input != spec.label:
        return sum(sizes.values())
    return sum(
        size - min(size, previous.files[str(p)].offset) if str(p) in previous.files else size
        for p, size in sizes.items()
    )


def swap_in(built: Path, target: Path) -> None:
    """Replace directory ``target`` by ``built`` (two renames, old copy removed after)."""
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    built.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def move_facts(new_dir: Path, facts_dir: Path) -> None:
    """Append staged facts by moving their files in (Spark names them uniquely)."""
    for source in new_dir.glob("date=*/*.parquet"):
        target = facts_dir / source.parent.name / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)


def fact_files(paths: HistoryPaths) -> list[str]:
    """Every file of the facts dataset, relative to it."""
    return sorted(str(p.relative_to(paths.facts)) for p in paths.facts.rglob("*") if p.is_file())


def write_journal(paths: HistoryPaths, build_id: str) -> None:
    """Before appending facts, note which files exist: if the build dies before its
    watermark (tagged ``build_id``) is saved, the next build removes the extra
    files instead of counting those facts twice."""
    tmp = paths.journal.with_name(paths.journal.name + ".tmp")
    tmp.write_text(json.dumps({"build_id": build_id, "known": fact_files(paths)}))
    os.replace(tmp, paths.journal)


def roll_back_interrupted_append(paths: HistoryPaths, progress: Callable[[str], None]) -> None:
    """Undo the facts append of a build that died before saving its watermark."""
    if not paths.journal.exists():
        return
    try:
        journal = json.loads(paths.journal.read_text(encoding="utf-8"))
        build_id, known = str(journal["build_id"]), set(journal["known"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptHistory(f"cannot read {paths.journal}: {exc}") from exc
    state = load_state(paths)
    if state is None or state.build_id != build_id:  # that build never finished
        extra = [name for name in fact_files(paths) if name not in known]
        for name in extra:
            (paths.facts / name).unlink()
        progress(f"rolled back an interrupted build ({counted(len(extra), 'file')} removed)")
    paths.journal.unlink()
