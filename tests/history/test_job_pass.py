"""The per-job pass alone, without a JVM: its partials, computed per partition of whole
jobs and summed, equal the plain-Python reference (the Spark tests check the same
through a build; this one shows a job partition is independent of the others)."""

from __future__ import annotations

import zlib
from collections import defaultdict
from typing import Any

import pyarrow as pa
import pytest

from registry.history import job_pass as jp
from registry.history.aggregate_py import Aggregates, aggregate_facts, facts_of_lines, hour_of
from registry.history.facts import Fact
from registry.history.schema import (
    CONTROL_STARTED,
    JOB_EVENT,
    JOB_REGISTERED,
    JOB_STATUS,
    JOB_USAGE,
    TOKEN_COLUMNS,
    UNKNOWN_AGENT,
    exact_percentile,
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
    """The partials summed per key, as ``spark_sql.FINAL_SQL`` does, in the reference's
    row shapes."""
    keys = ("hour_ms", "agent", "model", "measured", "open_job")
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        into = groups.get(key)
        if into is None:
            groups[key] = dict(row)
            continue
        for name, value in row.items():
            if name in keys:
                continue
            if name in jp.VALUE_COLUMNS:
                into[name] = into[name] + value
            elif name == "agent_cost_micro_usd":
                if value is not None:
                    into[name] = (into[name] or 0) + value
            else:
                into[name] += value
    hourly, usage, markers, open_jobs = [], [], [], []
    for (hour_ms, agent, model, measured, open_job), row in sorted(
        groups.items(), key=lambda item: tuple((v is None, v) for v in item[0])
    ):
        if open_job is not None:
            open_jobs.append(open_job)
        elif agent is None:
            markers.append({"hour": hour_of(hour_ms), "restarts": row["restarts"]})
        elif model is not None:
            usage.append(
                {"hour": hour_of(hour_ms), "agent": agent, "model": model, "measured": measured,
                 "messages": row["messages"], **{n: row[n] for n in TOKEN_COLUMNS},
                 "agent_cost_micro_usd": row["agent_cost_micro_usd"]}
            )  # fmt: skip
        else:
            hourly.append(hourly_row(hour_ms, agent, row))
    return Aggregates(hourly, usage, markers, sorted(open_jobs), 0)


def hourly_row(hour_ms: int, agent: str, row: dict[str, Any]) -> dict[str, Any]:
    out = {"hour": hour_of(hour_ms), "agent": agent}
    for name in ("events", "jobs_registered", "jobs_started", "jobs_completed", "jobs_errored",
                 "jobs_cancelled", "retries", "answered"):  # fmt: skip
        out[name] = row[name]
    for name in row:
        if name.endswith("_ms") and name != "hour_ms":
            out[name] = row[name]
    ended = row["jobs_completed"] + row["jobs_errored"]
    out["error_rate"] = row["jobs_errored"] / ended if ended else None
    for measure in ("run", "queue_wait", "response"):
        values = sorted(row[f"{measure}_values"])
        out[f"{measure}_values"] = values
        out[f"{measure}_ms_p50"] = exact_percentile(values, 0.5)
        out[f"{measure}_ms_p95"] = exact_percentile(values, 0.95)
    out["runs"], out["queue_waits"] = len(out["run_values"]), len(out["queue_wait_values"])
    out["asks"] = len(out["response_values"])
    return out


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
