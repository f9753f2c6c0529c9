"""The per-job pass of the history build: one vectorised pass over a partition of facts
sorted by job and seq, giving that partition's partial hourly aggregates.

Spark shuffles the facts by job once and sorts each partition (``spark_sql``); this
runs on each partition as Arrow (``mapInArrow``), so the whole time-in-state machine
of ``schema.py`` costs a few numpy passes instead of two window operators over every
fact and an array of structs exploded per fact (measured 3.0x the floor plus that
one shuffle). Every "latest earlier fact of the job where ..." is a running maximum
of row indices cut at the job's first row. The partials are small (per hour and
agent, not per fact); Spark sums them and sorts the percentile values.

No pyspark here: the Python worker imports only numpy and pyarrow, and the tests can
run it alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from registry.activity import ACTIVITIES
from registry.history.schema import TOKEN_COLUMNS, UNKNOWN_AGENT
from registry.vocabulary import Activity

HOUR_MS: Final = 3_600_000
# What each fact is to the pass (``spark_sql`` codes them). The status moves are in
# the order of their codes: ENQUEUED..CANCELLED are the job machine's own moves.
(
    REGISTERED,
    ENQUEUED,
    RUNNING,
    COMPLETED,
    ERRORED,
    CANCELLED,
    OTHER_STATUS,
    EVENT,
    USAGE,
    RESTART,
) = range(10)
COUNTED_KINDS: Final = {  # partial column -> the kind of fact it counts
    "jobs_registered": REGISTERED,
    "retries": ENQUEUED,
    "jobs_started": RUNNING,
    "jobs_completed": COMPLETED,
    "jobs_errored": ERRORED,
    "jobs_cancelled": CANCELLED,
    "events": EVENT,
}
VALUE_COLUMNS: Final = ("run_values", "queue_wait_values", "response_values")
ACTIVITY_CODES: Final = pa.array([str(activity) for activity in ACTIVITIES])
STARTING: Final = ACTIVITIES.index(Activity.STARTING)
WAITING: Final = ACTIVITIES.index(Activity.WAITING)
NONE: Final = -1

# The pass's input (the coded facts, sorted by job_id then seq) and output.
INPUT_DDL: Final = (
    "job_id STRING, seq BIGINT, ts_ms BIGINT, kind INT, activity STRING, "
    "registered_agent STRING, model STRING, measured BOOLEAN, "
    + ", ".join(f"{name} BIGINT" for name in TOKEN_COLUMNS)
    + ", cost_micro_usd BIGINT"
)
_KEYS: Final = [
    ("hour_ms", pa.int64()),
    ("agent", pa.string()),
    ("model", pa.string()),
    ("measured", pa.bool_()),
    ("open_job", pa.string()),
]
PARTIAL_SUMS: Final = [
    *COUNTED_KINDS,
    *(f"{activity}_ms" for activity in ACTIVITIES),
    "answered",
    "restarts",
    "messages",
    *TOKEN_COLUMNS,
]
PARTIAL_SCHEMA: Final = pa.schema(
    [
        *_KEYS,
        *[(name, pa.int64()) for name in PARTIAL_SUMS],
        *[(name, pa.list_(pa.int64())) for name in VALUE_COLUMNS],
        ("agent_cost_micro_usd", pa.int64()),
    ]
)
_SQL_TYPES: Final = {pa.int64(): "BIGINT", pa.string(): "STRING", pa.bool_(): "BOOLEAN"}
PARTIAL_DDL: Final = ", ".join(
    f"{field.name} {_SQL_TYPES.get(field.type, 'ARRAY<BIGINT>')}" for field in PARTIAL_SCHEMA
)

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


def pass_batches(batches: Iterator[pa.RecordBatch], cutoff_ms: int) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function: the partition's batches (whole jobs, sorted) in, its
    partial aggregates out."""
    received = [batch for batch in batches if batch.num_rows]
    if received:
        yield from job_pass(pa.Table.from_batches(received), cutoff_ms).to_batches()


def _ints(column: Any, fill: int = NONE) -> Ints:
    return np.asarray(pc.fill_null(column, fill).to_numpy(), dtype=np.int64)


def _before(mask: Bools, first: Ints) -> Ints:
    """For each row, the index of the latest earlier row of its job where ``mask``
    holds, else NONE: a running maximum of indices, cut at the job's first row."""
    index = np.where(mask, np.arange(len(mask)), NONE)
    np.maximum.accumulate(index, out=index)
    before = np.empty_like(index)
    before[0] = NONE
    before[1:] = index[:-1]
    before[before < first] = NONE
    return before


def _at(values: Ints, index: Ints) -> Ints:
    """``values`` at ``index``, NONE where the index is NONE."""
    return np.where(index >= 0, values[index], NONE)


def job_pass(facts: pa.Table, cutoff_ms: int) -> pa.Table:
    """The partial aggregates of some whole jobs' facts sorted by (job_id, seq): rows
    keyed as ``spark_sql``'s final group-by (hour, agent, model, measured, open job),
    the same key possibly more than once (Spark sums them). Definitions: schema.py;
    the same steps as ``aggregate_py``, column-wise."""
    kinds = _ints(facts["kind"])
    restarts = kinds == RESTART
    parts = [_markers(_ints(facts["ts_ms"])[restarts])]
    jobs = facts.filter(pa.array(~restarts)) if restarts.any() else facts
    if jobs.num_rows:
        parts.extend(_job_parts(jobs, cutoff_ms))
    return pa.concat_tables(parts)


def _job_parts(jobs: pa.Table, cutoff_ms: int) -> list[pa.Table]:
    jobs = jobs.combine_chunks()
    n = jobs.num_rows
    rows = np.arange(n)
    kind, ts, seq = _ints(jobs["kind"]), _ints(jobs["ts_ms"]), _ints(jobs["seq"])
    ids = jobs["job_id"]
    new_job = np.ones(n, dtype=np.bool_)
    if n > 1:
        differs = pc.not_equal(ids.slice(1), ids.slice(0, n - 1))
        new_job[1:] = np.asarray(pc.fill_null(differs, True).to_numpy(zero_copy_only=False))
    first = np.maximum.accumulate(np.where(new_job, rows, 0))
    starts = np.flatnonzero(new_job)
    job_of_row = np.cumsum(new_job) - 1

    # The agent of a job: that of its first job.registered, else "unknown".
    agents = pc.dictionary_encode(jobs["registered_agent"]).combine_chunks()
    names = [*agents.dictionary.to_pylist(), UNKNOWN_AGENT]
    agent_codes = _ints(agents.indices)
    first_registered = np.minimum.reduceat(np.where(kind == REGISTERED, rows, n), starts)
    job_agent = np.where(
        first_registered < n, agent_codes[np.minimum(first_registered, n - 1)], len(names) - 1
    )
    agent = job_agent[job_of_row]

    activity = _ints(pc.index_in(jobs["activity"], value_set=ACTIVITY_CODES))
    enqueue = _before(kind <= ENQUEUED, first)
    running = _before(kind == RUNNING, first)
    status = _at(kind, _before((kind >= ENQUEUED) & (kind <= CANCELLED), first))
    previous = np.where(new_job, NONE, rows - 1)
    prev_kind, prev_activity = _at(kind, previous), _at(activity, previous)

    # Activity boundaries: a move to running starts one (with the activity of an event
    # that started the job while pending), an activity-bearing event while running
    # changes it, a move out of running ends it.
    is_running = status == RUNNING
    was_pending = (status == NONE) | (status == ENQUEUED)
    started_by_event = (prev_kind == EVENT) & (prev_activity >= 0) & was_pending
    new_activity = np.where(
        kind == RUNNING,
        np.where(started_by_event, prev_activity, STARTING),
        np.where((kind == EVENT) & is_running, activity, NONE),
    )
    boundary = (
        (kind == RUNNING)
        | ((kind == EVENT) & (activity >= 0) & is_running)
        | ((kind >= ENQUEUED) & (kind <= CANCELLED) & (kind != RUNNING) & is_running)
    )
    since = _before(boundary, first)
    since_ts, since_activity = _at(ts, since), _at(new_activity, since)
    last_boundary = np.maximum.reduceat(np.where(boundary, rows, NONE), starts)[job_of_row]
    open_at_cutoff = boundary & (rows == last_boundary) & (new_activity >= 0)

    # Measures, each in the hour of the fact that ends it.
    queue = (kind == RUNNING) & (enqueue >= 0)
    ended = ((kind == COMPLETED) | (kind == ERRORED)) & (running >= 0)
    ended &= (enqueue < 0) | (_at(seq, enqueue) < _at(seq, running))
    asked = boundary & (since_activity == WAITING)
    hours = ts - ts % HOUR_MS

    # Activity intervals: each ending at a boundary, and each still open at the cut-off.
    closes = boundary & (since_activity >= 0)
    start = np.concatenate([since_ts[closes], ts[open_at_cutoff]])
    end = np.concatenate([ts[closes], np.full(int(open_at_cutoff.sum()), cutoff_ms)])
    spent = np.concatenate([since_activity[closes], new_activity[open_at_cutoff]])
    spent_agent = np.concatenate([agent[closes], agent[open_at_cutoff]])
    piece_hour, piece_ms, piece_of = _split_hours(start, end)

    counted = (kind != OTHER_STATUS) & (kind != USAGE)
    hourly = _Grouper(
        [hours[counted], piece_hour], [agent[counted], spent_agent[piece_of]], len(names)
    )
    fact_group, piece_group = hourly.groups(0), hourly.groups(1)
    kind_counted = kind[counted]
    sums: dict[str, Ints] = {
        name: hourly.count(fact_group[kind_counted == code]) for name, code in COUNTED_KINDS.items()
    }
    spent_piece = spent[piece_of]
    for code, name in enumerate(ACTIVITIES):
        chosen = spent_piece == code
        sums[f"{name}_ms"] = hourly.total(piece_group[chosen], piece_ms[chosen])
    group_of_row = np.full(n, NONE)
    group_of_row[counted] = fact_group
    sums["answered"] = hourly.count(group_of_row[asked & (new_activity >= 0)])
    values = {
        "run_values": hourly.lists(group_of_row[ended], (ts - _at(ts, running))[ended]),
        "queue_wait_values": hourly.lists(group_of_row[queue], (ts - _at(ts, enqueue))[queue]),
        "response_values": hourly.lists(group_of_row[asked], (ts - since_ts)[asked]),
    }
    hour_keys, agent_keys = hourly.keys()
    parts = [
        _part(
            len(hour_keys),
            hour_ms=pa.array(hour_keys),
            agent=pa.array(names, pa.string()).take(pa.array(agent_keys)),
            **{name: pa.array(total) for name, total in sums.items()},
            **values,
        ),
        _usage(jobs, kind == USAGE, hours, agent, names),
    ]
    opened = ids.filter(pa.array(open_at_cutoff))
    parts.append(_part(len(opened), open_job=opened))
    return parts


def _split_hours(start: Ints, end: Ints) -> tuple[Ints, Ints, Ints]:
    """The intervals [start, end) split at hour boundaries: each piece's hour, its
    milliseconds, and the interval it is of. An empty interval has no piece."""
    keep = end > start
    start, end = np.where(keep, start, 0), np.where(keep, end, 0)
    first = start - start % HOUR_MS
    last = (end - 1) - (end - 1) % HOUR_MS
    count = np.where(keep, (last - first) // HOUR_MS + 1, 0)
    of = np.repeat(np.arange(len(start)), count)
    offset = np.arange(len(of)) - np.repeat(np.cumsum(count) - count, count)
    hour = first[of] + offset * HOUR_MS
    ms = np.minimum(end[of], hour + HOUR_MS) - np.maximum(start[of], hour)
    return hour, ms, of


class _Grouper:
    """Rows keyed by (hour, agent code), several sources of rows sharing the groups."""

    def __init__(self, hours: list[Ints], agents: list[Ints], agent_count: int) -> None:
        self._width = agent_count
        self._keys = [h // HOUR_MS * agent_count + a for h, a in zip(hours, agents, strict=True)]
        self._unique = np.unique(np.concatenate(self._keys))

    def groups(self, source: int) -> Ints:
        return np.searchsorted(self._unique, self._keys[source]).astype(np.int64)

    def keys(self) -> tuple[Ints, Ints]:
        return self._unique // self._width * HOUR_MS, self._unique % self._width

    def count(self, groups: Ints) -> Ints:
        return np.bincount(groups, minlength=len(self._unique)).astype(np.int64)

    def total(self, groups: Ints, amounts: Ints) -> Ints:
        """Exact while a sum stays under 2**53 ms (285,000 years)."""
        summed = np.bincount(groups, weights=amounts, minlength=len(self._unique))
        return summed.astype(np.int64)

    def lists(self, groups: Ints, values: Ints) -> pa.ListArray:
        order = np.argsort(groups, kind="stable")
        offsets = np.zeros(len(self._unique) + 1, dtype=np.int32)
        np.cumsum(self.count(groups), out=offsets[1:])
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[order], pa.int64()))


def _usage(jobs: pa.Table, chosen: Bools, hours: Ints, agent: Ints, names: list[str]) -> pa.Table:
    """Tokens per hour, agent, model and measured; the agent's own cost is null where
    no message of the group gave one."""
    if not chosen.any():
        return _part(0)
    usage = jobs.filter(pa.array(chosen)).combine_chunks()
    models = pc.dictionary_encode(usage["model"]).combine_chunks()
    model_count = max(len(models.dictionary), 1)
    model = _ints(models.indices, 0)
    measured = _ints(pc.cast(pc.fill_null(usage["measured"], False), pa.int64()), 0)
    key = ((hours[chosen] // HOUR_MS * len(names) + agent[chosen]) * model_count + model) * 2
    unique, group = np.unique(key + measured, return_inverse=True)
    size = len(unique)
    cost = usage["cost_micro_usd"]
    valid = np.asarray(pc.is_valid(cost), dtype=np.float64)
    costed = np.bincount(group, weights=valid, minlength=size)
    cost_sum = np.bincount(group, weights=_ints(cost, 0), minlength=size).astype(np.int64)
    rest, measured_key = np.divmod(unique, 2)
    rest, model_key = np.divmod(rest, model_count)
    hour_key, agent_key = np.divmod(rest, len(names))
    return _part(
        size,
        hour_ms=pa.array(hour_key * HOUR_MS),
        agent=pa.array(names, pa.string()).take(pa.array(agent_key)),
        model=models.dictionary.take(pa.array(model_key)),
        measured=pa.array(measured_key.astype(np.bool_)),
        messages=pa.array(np.bincount(group, minlength=size).astype(np.int64)),
        agent_cost_micro_usd=pa.array(cost_sum, mask=costed == 0),
        **{
            name: pa.array(
                np.bincount(group, weights=_ints(usage[name], 0), minlength=size).astype(np.int64)
            )
            for name in TOKEN_COLUMNS
        },
    )


def _markers(restart_ts: Ints) -> pa.Table:
    """Control-room starts per hour (their agent is null)."""
    hours, counts = np.unique(restart_ts - restart_ts % HOUR_MS, return_counts=True)
    return _part(len(hours), hour_ms=pa.array(hours), restarts=pa.array(counts.astype(np.int64)))


def _part(rows: int, **columns: Any) -> pa.Table:
    """A partial table of ``rows`` rows: the given columns, every other key null, sum
    0 and value list empty."""
    arrays = []
    for field in PARTIAL_SCHEMA:
        if field.name in columns:
            value = columns[field.name]
            if isinstance(value, pa.Array | pa.ChunkedArray):
                arrays.append(value.cast(field.type))
            else:
                arrays.append(pa.array(value, field.type))
        elif pa.types.is_list(field.type):
            arrays.append(pa.ListArray.from_arrays(pa.array(np.zeros(rows + 1, np.int32)),
                                                   pa.array([], pa.int64())))  # fmt: skip
        elif field.name in PARTIAL_SUMS:
            arrays.append(pa.array(np.zeros(rows, np.int64)))
        else:
            arrays.append(pa.nulls(rows, field.type))
    return pa.Table.from_arrays(arrays, schema=PARTIAL_SCHEMA)
