"""Read the history aggregates back with pyarrow only: what `history show` and the TUI
History screen use, so neither ever waits on a JVM."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from registry.history.errors import CorruptHistory, HistoryNotBuilt
from registry.history.schema import AGG_COLUMNS, MARKER_COLUMNS, HistoryPaths
from registry.history.watermark import load_state

UTC_US = pa.timestamp("us", tz="UTC")
# The on-disk schemas of the two aggregate files (the Spark job casts to these).
AGG_SCHEMA = pa.schema(
    [
        ("hour", UTC_US),
        ("agent", pa.string()),
        *[(name, pa.int64()) for name in AGG_COLUMNS[2:7]],
        ("error_rate", pa.float64()),
        ("runs", pa.int64()),
        ("run_ms_p50", pa.float64()),
        ("run_ms_p95", pa.float64()),
        ("waits", pa.int64()),
        ("wait_ms_p50", pa.float64()),
        ("wait_ms_p95", pa.float64()),
    ]
)
MARKER_SCHEMA = pa.schema([("hour", UTC_US), ("restarts", pa.int64())])


@dataclass(frozen=True)
class HourlyAggregate:
    """One hour of one agent's work; see ``registry.history.schema`` for each field."""

    hour: datetime
    agent: str
    events: int
    jobs_registered: int
    jobs_started: int
    jobs_completed: int
    jobs_errored: int
    error_rate: float | None
    runs: int
    run_ms_p50: float | None
    run_ms_p95: float | None
    waits: int
    wait_ms_p50: float | None
    wait_ms_p95: float | None

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["hour"] = _iso(self.hour)
        return out


@dataclass(frozen=True)
class RestartMarker:
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

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(sorted({row.agent for row in self.rows}))

    def to_json(self) -> dict[str, Any]:
        return {
            "built_at": _iso(self.built_at) if self.built_at else None,
            "facts_rows": self.facts_rows,
            "malformed_total": self.malformed_total,
            "rows": [row.to_json() for row in self.rows],
            "restarts": [{"hour": _iso(m.hour), "restarts": m.restarts} for m in self.restarts],
        }


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read(path: Path, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows of one parquet file; any unreadable or foreign file is CorruptHistory."""
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CorruptHistory(f"cannot read {path}: {reason}") from exc
    missing = [name for name in columns if name not in table.column_names]
    if missing:
        raise CorruptHistory(f"{path} lacks column(s) {', '.join(missing)}: run a --full build")
    rows: list[dict[str, Any]] = table.select(list(columns)).to_pylist()
    return rows


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
    try:
        marker_rows = _read(paths.markers, MARKER_COLUMNS)
    except FileNotFoundError:
        marker_rows = []
    state = load_state(paths)
    built_at = (
        datetime.fromtimestamp(state.built_at_ms / 1000, tz=UTC)
        if state and state.built_at_ms
        else None
    )
    return HistorySnapshot(
        rows=tuple(HourlyAggregate(**row) for row in agg_rows),
        restarts=tuple(RestartMarker(**row) for row in marker_rows),
        built_at=built_at,
        facts_rows=state.facts_rows if state else 0,
        malformed_total=state.malformed_total if state else 0,
    )
