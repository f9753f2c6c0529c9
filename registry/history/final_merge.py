"""The last step of the history build, on the driver: the per-job pass's partials
(``job_pass``, one small table per job partition) summed per key into the hourly
aggregates, usage, restart markers and open jobs that ``registry.history.schema``
defines.

The partials are per hour and agent, not per fact (about 20,000 rows for a million
facts), so a Spark group-by over them was mostly Spark's own cost: planning, a
shuffle and a stage, about 0.6 s of CPU on a million facts. Here it is one pyarrow
group-by and a few numpy passes. The percentiles are Spark's exact ``percentile``
to the last bit (``schema.exact_percentile``: the same double arithmetic, in the
same order). No pyspark: the tests run it alone.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from registry.history.job_pass import PARTIAL_SUMS, VALUE_COLUMNS

KEYS: Final = ("hour_ms", "agent", "model", "measured", "open_job")
PERCENTILES: Final = (("p50", 0.5), ("p95", 0.95))
# The count each value list gives, and the measure its percentiles are named for.
COUNTS: Final = {
    "run_values": "runs",
    "queue_wait_values": "queue_waits",
    "response_values": "asks",
}
MEASURES: Final = {
    "run_values": "run_ms",
    "queue_wait_values": "queue_wait_ms",
    "response_values": "response_ms",
}
_ROW: Final = "__row"
UTC_US: Final = pa.timestamp("us", tz="UTC")

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def merge_partials(partials: pa.Table) -> pa.Table:
    """One row per key (hour, agent, model, measured, open job) with every partial
    summed, its value lists joined and sorted, and the counts, percentiles, error
    rate and hour read off them, as Spark's final group-by gave."""
    numbered = partials.append_column(_ROW, pa.array(np.arange(partials.num_rows)))
    sums = [(name, "sum") for name in (*PARTIAL_SUMS, "agent_cost_micro_usd")]
    grouped = numbered.group_by(list(KEYS), use_threads=False).aggregate([*sums, (_ROW, "list")])
    rows = grouped[f"{_ROW}_list"].combine_chunks()
    columns: dict[str, pa.Array | pa.ChunkedArray] = {key: grouped[key] for key in KEYS}
    columns |= {name: grouped[f"{name}_sum"] for name, _ in sums}
    for name in VALUE_COLUMNS:
        joined = _joined_sorted(partials[name], rows)
        columns[name] = joined
        columns[COUNTS[name]] = pc.list_value_length(joined)
        for suffix, fraction in PERCENTILES:
            columns[f"{MEASURES[name]}_{suffix}"] = _percentile(joined, fraction)
    columns["hour"] = pc.cast(pc.multiply(grouped["hour_ms"], 1000), UTC_US)
    columns["error_rate"] = _error_rate(grouped["jobs_completed_sum"], grouped["jobs_errored_sum"])
    return pa.table(columns)


def _joined_sorted(values: pa.ChunkedArray, rows: pa.ListArray) -> pa.ListArray:
    """Each group's value lists (its partial ``rows``) as one sorted list."""
    lists = values.combine_chunks().take(rows.values)  # the groups' rows, group by group
    if not isinstance(lists, pa.ListArray):  # take() of a list array is a list array
        raise TypeError(f"expected a list column, got {lists.type}")
    row_offsets = np.asarray(rows.offsets.to_numpy(), dtype=np.int64)
    value_offsets = np.asarray(lists.offsets.to_numpy(), dtype=np.int64)
    offsets = value_offsets[row_offsets] - value_offsets[0]
    flat = np.asarray(lists.flatten().to_numpy(), dtype=np.int64)
    group = np.repeat(np.arange(len(rows)), np.diff(offsets))
    order = np.lexsort((flat, group))
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(flat[order]))


def _percentile(lists: pa.ListArray, fraction: float) -> pa.Array:
    """Spark's exact ``percentile`` of each sorted list (null for an empty one):
    ``low + (position - floor) * (high - low)``, in doubles, in that order."""
    offsets = np.asarray(lists.offsets.to_numpy(), dtype=np.int64)
    sizes = np.diff(offsets)
    filled = sizes > 0
    values = np.asarray(lists.flatten().to_numpy(), dtype=np.int64)
    position = (sizes - 1).astype(np.float64) * fraction
    low_rank, high_rank = np.floor(position), np.ceil(position)
    start = offsets[:-1]
    low = _gather(values, start + low_rank.astype(np.int64), filled)
    high = _gather(values, start + high_rank.astype(np.int64), filled)
    result = low + (position - low_rank) * (high - low)
    return pa.array(result, pa.float64(), mask=~filled)


def _gather(values: Ints, index: Ints, filled: npt.NDArray[np.bool_]) -> Floats:
    """``values`` at ``index`` as doubles where ``filled``, 0 elsewhere."""
    safe = np.where(filled, index, 0)
    return np.where(filled, values[safe] if len(values) else 0, 0).astype(np.float64)


def _error_rate(completed: pa.ChunkedArray, errored: pa.ChunkedArray) -> pa.Array:
    """errored / (completed + errored) in doubles, null with neither (Spark's ``/``)."""
    done = np.asarray(pc.fill_null(completed, 0).to_numpy(), dtype=np.float64)
    failed = np.asarray(pc.fill_null(errored, 0).to_numpy(), dtype=np.float64)
    ended = done + failed
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = failed / ended
    return pa.array(rate, pa.float64(), mask=ended == 0)
