"""The per-job pass alone, without a JVM: its partials, computed per partition of whole
jobs and summed, equal the plain-Python reference (the Spark tests check the same
through a build; this one shows a job partition is independent of the others)."""

from __future__ import annotations

import zlib
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from registry.history import job_pass as jp
from registry.history.aggregate_py import Aggregates, aggregate_facts, facts_of_lines, hour_of
from registry.history.facts import Fact
from registry.history.final_merge import merge_partials
from registry.history.schema import (
    CONTROL_STARTED,
    JOB_EVENT,
    JOB_REGISTERED,
    JOB_STATUS,
    JOB_USAGE,
    TOKEN_COLUMNS,
    UNKNOWN_AGENT,
)
from registry.vocabulary import JobStatus
from tests.history.history_files import suite_events
from tests.history.scenarios import day_of_agents

STATUS_KIND = {
    JobStatus.PENDING: jp.ENQUEUED,
    JobStatus.RUNNING: jp.RUNNING,
    JobStatus.COMPLETED: jp.COMPLETED,
    JobStatus.ERROR: jp.ERRORED,
    JobStatus.CANCELLED: jp.CANCELLED,
}


def coded(fact: Fact) -> dict[str, Any]:
    """A fact as ``spark_sql.CODED_SQL`` hands it to the pass."""
    kind = {JOB_REGISTERED: jp.REGISTERED, JOB_EVENT: jp.EVENT, JOB_USAGE: jp.USAGE}.get(
        fact.type, jp.RESTART
    )
    if fact.type == JOB_STATUS:
        kind = STATUS_KIND.get(fact.status_to or "", jp.OTHER_STATUS)
    registered = (fact.agent or UNKNOWN_AGENT) if fact.type == JOB_REGISTERED else None
    row = {"job_id": fact.job_id, "seq": fact.seq, "ts_ms": fact.ts_ms, "kind": kind}
    row |= {"activity": fact.activity, "registered_agent": registered, "model": fact.model}
    row |= {name: getattr(fact, name) for name in (*TOKEN_COLUMNS, "cost_micro_usd")}
    return row | {"measured": fact.measured}


def passed(facts: list[Fact], cutoff_ms: int, partitions: int) -> list[dict[str, Any]]:
    """The partials of ``partitions`` partitions of whole jobs, each sorted by job, seq."""
    parts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for fact in facts:
        parts[zlib.crc32(str(fact.job_id).encode()) % partitions].append(coded(fact))
    rows: list[dict[str, Any]] = []
    for part in parts.values():
        part.sort(key=lambda r: (r["job_id"] is not None, r["job_id"] or "", r["seq"]))
        table = pa.Table.from_pylist(part, schema=INPUT_SCHEMA)
        batches = jp.pass_batches(iter(table.to_batches(max_chunksize=97)), cutoff_ms)
        rows += pa.Table.from_batches(list(batches), jp.PARTIAL_SCHEMA).to_pylist()
    return rows


INPUT_SCHEMA = pa.schema(
    [
        ("job_id", pa.string()),
        ("seq", pa.int64()),
        ("ts_ms", pa.int64()),
        ("kind", pa.int32()),
        ("activity", pa.string()),
        ("registered_agent", pa.string()),
        ("model", pa.string()),
        *[(name, pa.int64()) for name in TOKEN_COLUMNS],
        ("cost_micro_usd", pa.int64()),
        ("measured", pa.bool_()),
    ]
)


def summed(rows: list[dict[str, Any]]) -> Aggregates:
    """The partials merged per key on the driver (``final_merge``, as a build does), in
    the reference's row shapes: every count, percentile and rate as merged, none
    recomputed here."""
    merged = merge_partials(pa.Table.from_pylist(rows, jp.PARTIAL_SCHEMA))
    hourly, usage, markers, open_jobs = [], [], [], []
    for row in sorted(
        merged.to_pylist(),
        key=lambda r: tuple((r[k] is None, r[k]) for k in ("hour_ms", "agent", "model")),
    ):
        hour_ms, agent, model, open_job = (
            row["hour_ms"],
            row["agent"],
            row["model"],
            row["open_job"],
        )
        if open_job is not None:
            open_jobs.append(open_job)
        elif agent is None:
            markers.append({"hour": hour_of(hour_ms), "restarts": row["restarts"]})
        elif model is not None:
            usage.append(
                {"hour": hour_of(hour_ms), "agent": agent, "model": model,
                 "measured": row["measured"], "messages": row["messages"],
                 **{n: row[n] for n in TOKEN_COLUMNS},
                 "agent_cost_micro_usd": row["agent_cost_micro_usd"]}
            )  # fmt: skip
        else:
            assert row["hour"] == datetime.fromtimestamp(hour_ms / 1000, UTC)
            hourly.append({"hour": hour_of(hour_ms), **row})
    return Aggregates(hourly, usage, markers, sorted(open_jobs), 0)


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("lines", ["suite", "day"])
def test_pass_per_partition_equals_plain_python(lines: str, partitions: int) -> None:
    events = suite_events() if lines == "suite" else day_of_agents().lines
    facts = facts_of_lines(events)
    reference = aggregate_facts(facts)
    got = summed(passed(facts, reference.cutoff_ms, partitions))
    by_key = {(r["hour"], r["agent"]): r for r in reference.hourly}
    assert [(r["hour"], r["agent"]) for r in got.hourly] == list(by_key)
    for row in got.hourly:
        want = by_key[(row["hour"], row["agent"])]
        assert {k: row.get(k) for k in want} == want
    assert got.usage == reference.usage
    assert got.markers == reference.markers
    assert got.open_jobs == reference.open_jobs
    assert any(r["unknown_ms"] or r["waiting_ms"] for r in got.hourly)


def test_restarts_only_and_an_empty_partition() -> None:
    """A partition of control-room starts alone has markers and nothing else; one with
    no rows gives no partials."""
    restart = Fact(7, 3 * 3_600_000 + 5, CONTROL_STARTED, *([None] * 12))
    got = summed(passed([restart], 4 * 3_600_000, 1))
    assert got.markers == [{"hour": hour_of(3 * 3_600_000), "restarts": 1}]
    assert got.hourly == [] and got.usage == [] and got.open_jobs == []
    assert list(jp.pass_batches(iter([]), 0)) == []
