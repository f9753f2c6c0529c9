"""registry.history.reader: the aggregates read back exactly as written, bad files refused."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from registry.history.errors import CorruptHistory
from registry.history.reader import HourlyAggregate, RestartMarker, load_history
from registry.history.schema import AGG_COLUMNS, MARKER_COLUMNS, HistoryPaths
from tests.tui.history.history_fixture import aggregate_rows, restart_rows, write_history


def test_rows_read_back_field_for_field(tmp_path: Path) -> None:
    """The columnar conversion builds each row positionally: the rows' field
    order must be the files' column order, and every value must come back as written."""
    assert HourlyAggregate._fields == AGG_COLUMNS
    assert RestartMarker._fields == MARKER_COLUMNS
    write_history(tmp_path, days=3, agents=4)
    snapshot = load_history(tmp_path)
    assert [row._asdict() for row in snapshot.rows] == aggregate_rows(3, 4)
    assert [m._asdict() for m in snapshot.restarts] == restart_rows(3)
    assert all(row.hour.utcoffset() is not None for row in snapshot.rows)


@pytest.mark.parametrize(
    ("hour", "reason"),
    [
        (pa.array([None], pa.timestamp("us", tz="UTC")), "without an hour"),
        (pa.array(["2026-03-01"]), "not a timestamp"),
    ],
)
def test_a_bad_hour_column_is_corrupt_history(tmp_path: Path, hour: pa.Array, reason: str) -> None:
    write_history(tmp_path)
    paths = HistoryPaths(tmp_path)
    table = pq.read_table(paths.aggregates).slice(0, 1)
    pq.write_table(table.set_column(0, "hour", hour), paths.aggregates)
    with pytest.raises(CorruptHistory, match=reason):
        load_history(tmp_path)
