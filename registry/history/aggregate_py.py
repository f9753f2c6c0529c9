"""The aggregates of ``schema.py`` computed in plain Python: the reference the Spark job
is tested against, and readable proof of what each number means.

One pass over the facts in bus order, with a small state per job: its status (as
its ``job.status`` moves left it), its activity while it runs and since when, its
latest enqueue and move to running. Each activity interval is split at hour
boundaries into the hours it covers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from registry.activity import ACTIVITIES
from registry.history.facts import Fact, fact_of_line
from registry.history.schema import (
    CONTROL_STARTED,
    ENDED_STATUSES,
    JOB_EVENT,
    JOB_REGISTERED,
    JOB_STATUS,
    JOB_USAGE,
    TOKEN_COLUMNS,
    UNKNOWN_AGENT,
    exact_percentile,
)
from registry.vocabulary import Activity, JobStatus

HOUR_MS = 3_600_000


@dataclass
class _Bucket:
    """One (hour, agent) row in the making."""

    events: int = 0
    jobs_registered: int = 0
    jobs_started: int = 0
    jobs_completed: int = 0
    jobs_errored: int = 0
    jobs_cancelled: int = 0
    retries: int = 0
    run_ms: list[int] = field(default_factory=list)
    queue_wait_ms: list[int] = field(default_factory=list)
    response_ms: list[int] = field(default_factory=list)
    answered: int = 0
    activity_ms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIVITIES, 0))


@dataclass
class _Usage:
    messages: int = 0
    tokens: list[int] = field(default_factory=lambda: [0] * len(TOKEN_COLUMNS))
    cost_micro_usd: int | None = None


@dataclass
class _Job:
    """What the pass remembers of one job."""

    status: str | None = None  # its latest job.status move; None: never moved (pending)
    activity: str | None = None  # while running
    since_ms: int = 0
    enqueued: tuple[int, int] | None = None  # (seq, ts_ms) of its latest enqueue
    running: tuple[int, int] | None = None  # (seq, ts_ms) of its latest move to running
    previous: Fact | None = None  # its fact just before the current one


@dataclass(frozen=True)
class Aggregates:
    """Everything a build writes, as rows (``schema``'s column names)."""

    hourly: list[dict[str, Any]]  # sorted by hour, agent
    usage: list[dict[str, Any]]  # sorted by hour, agent, model, measured
    markers: list[dict[str, Any]]  # sorted by hour
    open_jobs: list[str]  # jobs still running at the cut-off, sorted
    cutoff_ms: int


def hour_of(ts_ms: int) -> datetime:
    """``ts_ms`` truncated to its hour, UTC."""
    return datetime.fromtimestamp((ts_ms - ts_ms % HOUR_MS) // 1000, tz=UTC)


def facts_of_lines(lines: Iterable[str]) -> list[Fact]:
    """The facts of JSONL lines; malformed lines and ignored types dropped."""
    return [fact for fact in map(fact_of_line, lines) if isinstance(fact, Fact)]


def aggregate_lines(lines: Iterable[str], cutoff_ms: int | None = None) -> Aggregates:
    """The aggregates of a JSONL export (see ``aggregate_facts``)."""
    return aggregate_facts(facts_of_lines(lines), cutoff_ms)


class _Pass:
    """The one pass over the facts (``aggregate_facts``)."""

    def __init__(self, agents: dict[str, str], cutoff_ms: int) -> None:
        self.agents = agents
        self.cutoff_ms = cutoff_ms
        self.buckets: dict[tuple[datetime, str], _Bucket] = defaultdict(_Bucket)
        self.usage: dict[tuple[datetime, str, str, bool], _Usage] = defaultdict(_Usage)
        self.markers: dict[datetime, int] = defaultdict(int)
        self.jobs: dict[str, _Job] = defaultdict(_Job)

    def bucket(self, ts_ms: int, job_id: str) -> _Bucket:
        return self.buckets[(hour_of(ts_ms), self.agents.get(job_id, UNKNOWN_AGENT))]

    def spend(self, job_id: str, activity: str, start_ms: int, end_ms: int) -> None:
        """Add the interval [start, end) of ``activity`` to the hours it covers."""
        while start_ms < end_ms:
            hour_end = start_ms - start_ms % HOUR_MS + HOUR_MS
            piece_end = min(end_ms, hour_end)
            self.bucket(start_ms, job_id).activity_ms[activity] += piece_end - start_ms
            start_ms = piece_end

    def end_activity(self, job_id: str, job: _Job, ts_ms: int, *, moved_on: bool) -> None:
        """The job's current activity ends at ``ts_ms``: by another activity
        (``moved_on``) or by the job leaving running."""
        if job.activity is None:
            return
        self.spend(job_id, job.activity, job.since_ms, ts_ms)
        if job.activity == Activity.WAITING:
            bucket = self.bucket(ts_ms, job_id)
            bucket.response_ms.append(ts_ms - job.since_ms)
            bucket.answered += moved_on
        job.activity = None

    def start_activity(self, job_id: str, job: _Job, activity: str, ts_ms: int) -> None:
        self.end_activity(job_id, job, ts_ms, moved_on=True)
        job.activity, job.since_ms = activity, ts_ms

    def take(self, fact: Fact) -> None:
        if fact.type == CONTROL_STARTED:
            self.markers[hour_of(fact.ts_ms)] += 1
            return
        job_id = str(fact.job_id)
        job = self.jobs[job_id]
        if fact.type == JOB_REGISTERED:
            self.bucket(fact.ts_ms, job_id).jobs_registered += 1
            job.enqueued = (fact.seq, fact.ts_ms)
        elif fact.type == JOB_EVENT:
            self.bucket(fact.ts_ms, job_id).events += 1
            if fact.activity is not None and job.status == JobStatus.RUNNING:
                self.start_activity(job_id, job, fact.activity, fact.ts_ms)
        elif fact.type == JOB_STATUS:
            self.move(job_id, job, fact)
        elif fact.type == JOB_USAGE:
            self.count_usage(job_id, fact)
        job.previous = fact

    def move(self, job_id: str, job: _Job, fact: Fact) -> None:
        """A job.status move: counts, durations, and the activity it starts or ends."""
        target, ts_ms = fact.status_to, fact.ts_ms
        if target not in (JobStatus.PENDING, JobStatus.RUNNING, *ENDED_STATUSES):
            return  # not a status of the job machine: nothing to count
        bucket = self.bucket(ts_ms, job_id)
        if target == JobStatus.RUNNING:
            bucket.jobs_started += 1
            if job.enqueued is not None:
                bucket.queue_wait_ms.append(ts_ms - job.enqueued[1])
            job.running = (fact.seq, ts_ms)
            # An event that arrived while the job was pending started it: the job runs
            # with that event's activity (its status move follows it on the bus).
            before = job.previous
            started_by_event = (
                before is not None
                and before.type == JOB_EVENT
                and before.activity is not None
                and job.status in (None, JobStatus.PENDING)
            )
            first = before.activity if started_by_event and before else Activity.STARTING
            self.start_activity(job_id, job, str(first), ts_ms)
        else:
            if job.status == JobStatus.RUNNING:
                self.end_activity(job_id, job, ts_ms, moved_on=False)
            if target == JobStatus.PENDING:
                bucket.retries += 1
                job.enqueued = (fact.seq, ts_ms)
            elif target == JobStatus.CANCELLED:
                bucket.jobs_cancelled += 1
            else:
                if target == JobStatus.COMPLETED:
                    bucket.jobs_completed += 1
                else:
                    bucket.jobs_errored += 1
                start, enqueue = job.running, job.enqueued
                if start is not None and (enqueue is None or enqueue[0] < start[0]):
                    bucket.run_ms.append(ts_ms - start[1])
        job.status = target

    def count_usage(self, job_id: str, fact: Fact) -> None:
        agent = self.agents.get(job_id, UNKNOWN_AGENT)
        key = (hour_of(fact.ts_ms), agent, str(fact.model), bool(fact.measured))
        usage = self.usage[key]
        usage.messages += 1
        counts = (
            fact.input_tokens,
            fact.output_tokens,
            fact.cache_read_tokens,
            fact.cache_write_tokens,
        )
        for index, count in enumerate(counts):
            usage.tokens[index] += count or 0
        if fact.cost_micro_usd is not None:
            usage.cost_micro_usd = (usage.cost_micro_usd or 0) + fact.cost_micro_usd

    def finish(self) -> list[str]:
        """Count every job still running up to the cut-off; the ids of those jobs."""
        open_jobs = []
        for job_id, job in self.jobs.items():
            if job.activity is not None:
                self.spend(job_id, job.activity, job.since_ms, self.cutoff_ms)
                open_jobs.append(job_id)
        return sorted(open_jobs)


def aggregate_facts(facts: Iterable[Fact], cutoff_ms: int | None = None) -> Aggregates:
    """Hourly rows, usage rows, restart markers and the jobs open at the cut-off, from
    facts in any order (they are taken by seq; a repeated seq counts once).
    ``cutoff_ms``: where a job still running stops being counted; default (and at
    least) the newest fact."""
    unique = sorted({fact.seq: fact for fact in facts}.values(), key=lambda fact: fact.seq)
    newest = max((fact.ts_ms for fact in unique), default=0)
    cutoff = newest if cutoff_ms is None else max(cutoff_ms, newest)
    agents: dict[str, str] = {}
    for fact in unique:
        if fact.type == JOB_REGISTERED and fact.job_id not in agents:
            agents[str(fact.job_id)] = UNKNOWN_AGENT if fact.agent is None else fact.agent
    state = _Pass(agents, cutoff)
    for fact in unique:
        state.take(fact)
    open_jobs = state.finish()
    return Aggregates(
        hourly=[_hourly_row(hour, agent, b) for (hour, agent), b in sorted(state.buckets.items())],
        usage=[_usage_row(key, usage) for key, usage in sorted(state.usage.items())],
        markers=[{"hour": h, "restarts": n} for h, n in sorted(state.markers.items())],
        open_jobs=open_jobs,
        cutoff_ms=cutoff,
    )


def _hourly_row(hour: datetime, agent: str, b: _Bucket) -> dict[str, Any]:
    ended = b.jobs_completed + b.jobs_errored
    row: dict[str, Any] = {
        "hour": hour,
        "agent": agent,
        "events": b.events,
        "jobs_registered": b.jobs_registered,
        "jobs_started": b.jobs_started,
        "jobs_completed": b.jobs_completed,
        "jobs_errored": b.jobs_errored,
        "jobs_cancelled": b.jobs_cancelled,
        "retries": b.retries,
        "error_rate": b.jobs_errored / ended if ended else None,
        "runs": len(b.run_ms),
        "run_ms_p50": exact_percentile(b.run_ms, 0.5),
        "run_ms_p95": exact_percentile(b.run_ms, 0.95),
        "queue_waits": len(b.queue_wait_ms),
        "queue_wait_ms_p50": exact_percentile(b.queue_wait_ms, 0.5),
        "queue_wait_ms_p95": exact_percentile(b.queue_wait_ms, 0.95),
    }
    row |= {f"{activity}_ms": ms for activity, ms in b.activity_ms.items()}
    row |= {
        "asks": len(b.response_ms),
        "answered": b.answered,
        "response_ms_p50": exact_percentile(b.response_ms, 0.5),
        "response_ms_p95": exact_percentile(b.response_ms, 0.95),
        "run_values": sorted(b.run_ms),
        "queue_wait_values": sorted(b.queue_wait_ms),
        "response_values": sorted(b.response_ms),
    }
    return row


def _usage_row(key: tuple[datetime, str, str, bool], usage: _Usage) -> dict[str, Any]:
    hour, agent, model, measured = key
    row: dict[str, Any] = {
        "hour": hour,
        "agent": agent,
        "model": model,
        "measured": measured,
        "messages": usage.messages,
    }
    row |= dict(zip(TOKEN_COLUMNS, usage.tokens, strict=True))
    row["agent_cost_micro_usd"] = usage.cost_micro_usd
    return row
