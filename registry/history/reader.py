"""Read the history aggregates back with pyarrow only: what `history show` and the TUI
History screen use, so neither ever waits on a JVM."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import starmap
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from registry.history.errors import CorruptHistory, HistoryNotBuilt
from registry.history.schema import (
    ACTIVITY_MS_COLUMNS,
    AGG_COLUMNS,
    MARKER_COLUMNS,
    PERCENTILE_MEASURES,
    USAGE_COLUMNS,
    HistoryPaths,
)
from registry.history.watermark import load_state

UTC_US = pa.timestamp("us", tz="UTC")
VALUES = pa.list_(pa.int64())
# The on-disk schemas of the aggregate files (the Spark job casts to these).
_TYPES: dict[str, pa.DataType] = {
    "hour": UTC_US,
    "agent": pa.string(),
    "error_rate": pa.float64(),
    **{
        f"{measure}_ms_{p}": pa.float64() for measure in PERCENTILE_MEASURES for p in ("p50", "p95")
    },
    **{f"{measure}_values": VALUES for measure in PERCENTILE_MEASURES},
}
AGG_SCHEMA = pa.schema([(name, _TYPES.get(name, pa.int64())) for name in AGG_COLUMNS])
USAGE_SCHEMA = pa.schema(
    [
        ("hour", UTC_US),
        ("agent", pa.string()),
        ("model", pa.string()),
        ("measured", pa.bool_()),
        *[(name, pa.int64()) for name in USAGE_COLUMNS[4:]],
    ]
)
MARKER_SCHEMA = pa.schema([("hour", UTC_US), ("restarts", pa.int64())])
LEGACY_NAMES = {
    "waits": "queue_waits",
    "wait_ms_p50": "queue_wait_ms_p50",
    "wait_ms_p95": "queue_wait_ms_p95",
    "wait_values": "queue_wait_values",
}
"""Aggregate columns as builds before the rename wrote them: the queue wait was
called ``wait``, which read as a person's wait. Old files still load until the next
build rewrites them (its merge finds them lacking and recomputes everything)."""


class HourlyAggregate(NamedTuple):
    """One hour of one agent's work; see ``registry.history.schema`` for each field.

    A NamedTuple, not a frozen dataclass: a 30-day history is thousands of rows, and
    a frozen dataclass's ``__init__`` (a ``setattr`` per field) took 4.4 ms of a
    ~10 ms load; a tuple is built in one call."""

    hour: datetime
    agent: str
    events: int
    jobs_registered: int
    jobs_started: int
    jobs_completed: int
    jobs_errored: int
    jobs_cancelled: int
    retries: int
    error_rate: float | None
    runs: int
    run_ms_p50: float | None
    run_ms_p95: float | None
    queue_waits: int
    queue_wait_ms_p50: float | None
    queue_wait_ms_p95: float | None
    starting_ms: int
    working_ms: int
    waiting_ms: int
    idle_ms: int
    stalled_ms: int
    exited_ms: int
    interrupted_ms: int
    unknown_ms: int
    blocked_ms: int
    paused_ms: int
    asks: int
    answered: int
    response_ms_p50: float | None
    response_ms_p95: float | None
    run_values: list[int]
    queue_wait_values: list[int]
    response_values: list[int]

    def to_json(self) -> dict[str, Any]:
        out = self._asdict()
        out["hour"] = _iso(self.hour)
        return out


def empty_row(hour: datetime, agent: str, **fields: Any) -> dict[str, Any]:
    """An hourly row as the build writes it, every count 0 and every percentile empty
    but ``fields`` (fixtures and tests)."""
    row: dict[str, Any] = {name: 0 for name in AGG_COLUMNS}
    row |= {name: None for name in AGG_COLUMNS if name.endswith(("_p50", "_p95", "_rate"))}
    row |= {f"{measure}_values": [] for measure in PERCENTILE_MEASURES}
    return row | {"hour": hour, "agent": agent} | fields


class UsageRow(NamedTuple):
    """The tokens of one agent and model in one hour; ``measured``: the agent's own
    usage record (else its own estimate, as Aider's)."""

    hour: datetime
    agent: str
    model: str
    measured: bool
    messages: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    agent_cost_micro_usd: int | None

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def to_json(self) -> dict[str, Any]:
        out = self._asdict()
        out["hour"] = _iso(self.hour)
        return out


class RestartMarker(NamedTuple):
    """An hour in which the control room (TUI) was started ``restarts`` times."""

    hour: datetime
    restarts: int


@dataclass(frozen=True)
class HistorySnapshot:
    """Everything the History screen draws, loaded in one call."""

    rows: tuple[HourlyAggregate, ...]
    restarts: tuple[RestartMarker, ...]
    built_at: datetime | None
    facts_rows: int
    malformed_total: int
    usage: tuple[UsageRow, ...] = ()
    cutoff: datetime | None = None  # jobs still running were counted up to here
    running: int = 0  # jobs still running at the cut-off

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(sorted({row.agent for row in self.rows} | {u.agent for u in self.usage}))

    def to_json(self) -> dict[str, Any]:
        return {
            "built_at": _iso(self.built_at) if self.built_at else None,
            "cutoff": _iso(self.cutoff) if self.cutoff else None,
            "running_at_cutoff": self.running,
            "facts_rows": self.facts_rows,
            "malformed_total": self.malformed_total,
            "rows": [row.to_json() for row in self.rows],
            "usage": [row.to_json() for row in self.usage],
            "restarts": [{"hour": _iso(m.hour), "restarts": m.restarts} for m in self.restarts],
        }


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _read(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
    """Rows of one parquet file as tuples in ``columns`` order (the hour first);
    any unreadable or foreign file is CorruptHistory.

    ``ParquetFile``, not ``read_table``: each aggregate is a single file, and
    ``read_table`` goes through pyarrow's dataset layer, whose first use imports
    pyarrow.dataset and pandas (~190 ms: the first `h` of a session, and every
    `orchestrate history show`). A first read is ~15 ms this way."""
    try:
        with pq.ParquetFile(path) as parquet:
            table = parquet.read()
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CorruptHistory(f"cannot read {path}: {reason}") from exc
    if not set(LEGACY_NAMES.values()) & set(table.column_names):
        table = table.rename_columns([LEGACY_NAMES.get(n, n) for n in table.column_names])
    table = _zero_missing_activities(table, columns)
    missing = [name for name in columns if name not in table.column_names]
    if missing:
        raise CorruptHistory(f"{path} lacks column(s) {', '.join(missing)}: run a --full build")
    table = table.select(list(columns))
    try:
        hours = table.column(0).cast(UTC_US)
    except (pa.ArrowException, TypeError) as exc:
        raise CorruptHistory(f"{path}: its hour column is not a timestamp ({exc})") from exc
    if hours.null_count:
        raise CorruptHistory(f"{path} has rows without an hour: run a --full build")
    return _rows(table.set_column(0, columns[0], hours))


def _zero_missing_activities(table: pa.Table, columns: tuple[str, ...]) -> pa.Table:
    """``table`` with a 0 column for each activity it lacks: a build made before the
    activity existed (``unknown_ms`` came later) saw none of it, so 0 is its true time,
    and a user who upgrades reads the old history instead of an error."""
    for name in columns:
        if name in ACTIVITY_MS_COLUMNS and name not in table.column_names:
            table = table.append_column(name, pa.array([0] * table.num_rows, pa.int64()))
    return table


def _rows(table: pa.Table) -> Iterator[tuple[Any, ...]]:
    """The rows, converted column by column, each distinct hour once.

    pyarrow's own per-row conversion (``to_pylist``) spent ~10 of the ~27 ms a
    30-day history took to load on turning tz-aware timestamps into datetimes;
    there are five times fewer distinct hours than rows (one per agent)."""
    seen: dict[int, datetime] = {}
    hours = [
        seen[us] if us in seen else seen.setdefault(us, _EPOCH + timedelta(microseconds=us))
        for us in table.column(0).cast(pa.int64()).to_pylist()
    ]
    rest = [table.column(i).to_pylist() for i in range(1, table.num_columns)]
    return zip(hours, *rest, strict=True)


FileVersion = tuple[int, int, int] | None  # one file's (inode, size, mtime_ns), or None
FileVersions = tuple[FileVersion, ...]  # the four files ``load_history`` reads


def history_version(state_dir: Path) -> FileVersions:
    """What the files ``load_history`` reads look like now (inode, size, mtime; None
    for a missing one): a build replaces them, so an unchanged version means a
    snapshot read earlier is still what a read would return. Four stats."""
    paths = HistoryPaths(state_dir)
    versions: list[FileVersion] = []
    for path in (paths.aggregates, paths.usage, paths.markers, paths.state):
        try:
            stat = path.stat()
        except OSError:
            versions.append(None)
        else:
            versions.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(versions)


def load_history(state_dir: Path) -> HistorySnapshot:
    """The last build's aggregates. Raises HistoryNotBuilt before the first build and
    CorruptHistory when a file is damaged (the screen shows a notice, not a crash)."""
    paths = HistoryPaths(state_dir)
    try:
        agg_rows = _read(paths.aggregates, AGG_COLUMNS)
    except FileNotFoundError:
        raise HistoryNotBuilt(
            f"no history in {paths.root}: run `orchestrate history build`"
        ) from None
    marker_rows = _read_optional(paths.markers, MARKER_COLUMNS)
    usage_rows = _read_optional(paths.usage, USAGE_COLUMNS)
    state = load_state(paths)
    return HistorySnapshot(
        rows=tuple(starmap(HourlyAggregate, agg_rows)),
        restarts=tuple(starmap(RestartMarker, marker_rows)),
        built_at=_moment(state.built_at_ms if state else 0),
        facts_rows=state.facts_rows if state else 0,
        malformed_total=state.malformed_total if state else 0,
        usage=tuple(starmap(UsageRow, usage_rows)),
        cutoff=_moment(state.cutoff_ms if state else 0),
        running=len(state.open_jobs) if state else 0,
    )


def _read_optional(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
    try:
        return _read(path, columns)
    except FileNotFoundError:
        return iter(())


def _moment(ms: int) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, tz=UTC) if ms else None
