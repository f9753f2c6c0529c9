"""The aggregates of ``schema.py`` computed in plain Python: the reference the Spark job
is tested against, and readable proof of what each number means."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from registry.history.schema import (
    CONTROL_STARTED,
    EVENT_KINDS,
    JOB_EVENT,
    JOB_REGISTERED,
    JOB_STATUS,
    JOB_TYPES,
    KEPT_TYPES,
    TERMINAL_KINDS,
    UNKNOWN_AGENT,
    exact_percentile,
)


@dataclass
class _Bucket:
    events: int = 0
    jobs_registered: int = 0
    jobs_started: int = 0
    jobs_completed: int = 0
    jobs_errored: int = 0
    run_ms: list[int] = field(default_factory=list)
    wait_ms: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Fact:
    seq: int
    ts_ms: int
    type: str
    job_id: str | None
    event: str | None
    agent: str | None
    status_to: str | None


def _hour(ts_ms: int) -> datetime:
    moment = datetime.fromtimestamp(ts_ms // 1000, tz=UTC)
    return moment.replace(minute=0, second=0, microsecond=0)


def _agent_of(agents: dict[str, str | None], job: str) -> str:
    agent = agents.get(job)
    return UNKNOWN_AGENT if agent is None else agent


def _fact(line: str) -> _Fact | None:
    """A kept message, or None for a malformed line or an ignored type (as Spark)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    seq: Any = message.get("seq")
    ts_ms: Any = message.get("ts_ms")
    kind = message.get("type")
    # bool is an int subclass in Python but not a JSON number for Spark: exact type check.
    if type(seq) is not int or type(ts_ms) is not int or not isinstance(kind, str):
        return None
    payload = message.get("payload")
    if kind in KEPT_TYPES and payload is not None and not isinstance(payload, dict):
        return None  # Spark flags the whole line corrupt: malformed
    payload = payload if isinstance(payload, dict) else {}
    job_id = message.get("correlation_id")
    if job_id is None:
        job_id = payload.get("job_id")
    if kind in JOB_TYPES and job_id is None:
        return None
    event = payload.get("event") if kind == JOB_EVENT else None
    if kind == JOB_EVENT and event not in EVENT_KINDS:
        return None
    if kind not in (*JOB_TYPES, CONTROL_STARTED):
        return None
    return _Fact(
        seq=seq,
        ts_ms=ts_ms,
        type=kind,
        job_id=job_id if kind != CONTROL_STARTED else None,
        event=event,
        agent=payload.get("agent") if kind == JOB_REGISTERED else None,
        status_to=payload.get("to") if kind == JOB_STATUS else None,
    )


def aggregate_lines(lines: Iterable[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(hourly rows sorted by hour, agent; restart markers sorted by hour) from JSONL lines."""
    facts = sorted((f for f in map(_fact, lines) if f is not None), key=lambda f: f.seq)
    unique = list({f.seq: f for f in facts}.values())
    agents: dict[str, str | None] = {}
    for fact in unique:
        if fact.type == JOB_REGISTERED and fact.job_id not in agents:
            agents[str(fact.job_id)] = fact.agent
    buckets: dict[tuple[datetime, str], _Bucket] = defaultdict(_Bucket)
    markers: dict[datetime, int] = defaultdict(int)
    last_enqueue: dict[str, tuple[int, int]] = {}  # job -> (seq, ts_ms)
    last_start: dict[str, tuple[int, int]] = {}
    for fact in unique:
        if fact.type == CONTROL_STARTED:
            markers[_hour(fact.ts_ms)] += 1
            continue
        job = str(fact.job_id)
        enqueue, start = last_enqueue.get(job), last_start.get(job)
        ends = fact.type == JOB_STATUS and fact.status_to in TERMINAL_KINDS
        if fact.type != JOB_STATUS or ends:
            bucket = buckets[(_hour(fact.ts_ms), _agent_of(agents, job))]
            if fact.type == JOB_REGISTERED:
                bucket.jobs_registered += 1
            elif fact.type == JOB_EVENT:
                bucket.events += 1
                if fact.event == "started":
                    bucket.jobs_started += 1
                    if enqueue is not None:
                        bucket.wait_ms.append(fact.ts_ms - enqueue[1])
            else:  # the job ended: completed or error, whoever moved it there
                if fact.status_to == "completed":
                    bucket.jobs_completed += 1
                else:
                    bucket.jobs_errored += 1
                if start is not None and (enqueue is None or enqueue[0] < start[0]):
                    bucket.run_ms.append(fact.ts_ms - start[1])
        if fact.type == JOB_REGISTERED or (fact.type == JOB_STATUS and fact.status_to == "pending"):
            last_enqueue[job] = (fact.seq, fact.ts_ms)
        if fact.event == "started":
            last_start[job] = (fact.seq, fact.ts_ms)
    rows = []
    for (hour, agent), b in sorted(buckets.items()):
        ended = b.jobs_completed + b.jobs_errored
        rows.append(
            {
                "hour": hour,
                "agent": agent,
                "events": b.events,
                "jobs_registered": b.jobs_registered,
                "jobs_started": b.jobs_started,
                "jobs_completed": b.jobs_completed,
                "jobs_errored": b.jobs_errored,
                "error_rate": b.jobs_errored / ended if ended else None,
                "runs": len(b.run_ms),
                "run_ms_p50": exact_percentile(b.run_ms, 0.5),
                "run_ms_p95": exact_percentile(b.run_ms, 0.95),
                "waits": len(b.wait_ms),
                "wait_ms_p50": exact_percentile(b.wait_ms, 0.5),
                "wait_ms_p95": exact_percentile(b.wait_ms, 0.95),
            }
        )
    restart_rows = [{"hour": h, "restarts": n} for h, n in sorted(markers.items())]
    return rows, restart_rows
