"""Deterministic generated bus exports for the history tests and benchmark.

Produces what ``bus.export`` writes: one message per line, seq increasing with
commit time, with jobs that queue, start, end (some in error, some resumed and
run again, some failed by the control room without an event of their own, some
cancelled), control-room restarts, and chat messages the pipeline must ignore.
As the registry does, every status move is also a ``job.status`` message:
running when the job is handed to its pane, and the end right after the event
that caused it.

Jobs report in one of two ways, as real ones do: a demo-style agent publishes
started/progress/permission_required events; a real CLI's activity arrives as
``activity`` events (working, waiting for a person, idle, stalled, exited) from its
hooks or screen, with the person's answers as ``input`` events and its token usage
as ``job.usage`` messages placed at the transcript's own times. Some jobs start by
their first event while still pending (the status move follows it), some are
interrupted (their pane lost) and restarted, some wait for a person for hours, and
whatever is cut off at the end is still running at the cut-off.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from registry.vocabulary import Activity, Answer, EventType, JobStatus, MessageType

AGENTS = ("claude", "codex", "aider", "gemini")
MODELS = {
    "claude": ("claude-sonnet-4-5", "claude-opus-4-1"),
    "codex": ("gpt-5-codex",),
    "gemini": ("gemini-2.5-pro",),
    "aider": ("openai/gpt-4.1",),
}
HOUR_MS = 3_600_000
DEFAULT_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _iso(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Job:
    """The messages of one generated job, with their commit times."""

    def __init__(self, rng: random.Random, job_id: str, agent: str, t0: int) -> None:
        self.rng, self.job_id, self.agent, self.now = rng, job_id, agent, t0
        self.event_seq = 0
        self.usage_n = 0
        self.out: list[dict[str, Any]] = []

    def registered(self) -> None:
        payload = {
            "job_id": self.job_id,
            "agent": self.agent,
            "agent_session": f"{self.agent}-1",
            "created_at": _iso(self.now),
        }
        self.message("control", MessageType.JOB_REGISTERED, payload)

    def message(self, sender: str, kind: str, payload: dict[str, Any], **extra: Any) -> None:
        self.out.append(
            {
                "ts_ms": self.now,
                "from_agent": sender,
                "type": kind,
                "correlation_id": self.job_id,
                "payload": payload,
                **extra,
            }
        )

    def status(self, before: str, after: str) -> None:
        payload = {"job_id": self.job_id, "from": before, "to": after, "reason": "x"}
        self.message("control", MessageType.JOB_STATUS, payload)

    def event(self, kind: str, detail: str = "", data: dict[str, Any] | None = None) -> None:
        self.event_seq += 1
        payload = {
            "schema_version": 1,
            "seq": self.event_seq,
            "job_id": self.job_id,
            "event": kind,
            "timestamp": _iso(self.now),
            "detail": detail or f"{kind} step",
            "data": {"n": self.event_seq, **(data or {})},
        }
        self.message(
            self.job_id, MessageType.JOB_EVENT, payload, id=f"{self.job_id}:{self.event_seq}"
        )

    def activity(self, activity: str) -> None:
        self.event(
            EventType.ACTIVITY, activity, {"activity": activity, "source": f"hook:{self.agent}:x"}
        )

    def usage(self) -> None:
        """One model message's tokens, recorded a little after the transcript's time."""
        rng = self.rng
        self.usage_n += 1
        aider = self.agent == "aider"
        payload: dict[str, Any] = {
            "job_id": self.job_id,
            "at_ms": self.now - rng.randint(0, 30_000),
            "model": rng.choice(MODELS[self.agent]),
            "input_tokens": rng.randint(200, 30_000),
            "output_tokens": rng.randint(5, 4_000),
            "cache_read_tokens": 0 if aider else rng.randint(0, 50_000),
            "cache_write_tokens": 0 if aider or rng.random() < 0.5 else rng.randint(0, 5_000),
            "measured": not aider,
            "source": f"{self.agent} transcript",
        }
        if aider:
            payload["cost_micro_usd"] = rng.randint(50, 20_000)
        self.message(
            "control", MessageType.JOB_USAGE, payload, id=f"{self.job_id}:usage:{self.usage_n}"
        )

    def wait(self, low: int, high: int) -> None:
        self.now += self.rng.randint(low, high)


def _demo_attempt(job: _Job, end: str | None, *, started: bool) -> None:
    """A demo-style agent: it publishes its own events (``started`` already, when its
    started event is what moved the job to running)."""
    rng = job.rng
    kinds: list[str] = [] if started else [EventType.STARTED]
    kinds += [EventType.PROGRESS] * rng.randint(0, 8)
    if rng.random() < 0.1:
        kinds.insert(min(2, len(kinds)), EventType.PERMISSION_REQUIRED)
    if end is not None:
        kinds.append(end)
    for kind in kinds:
        job.wait(0, 0) if kind == EventType.STARTED else job.wait(50, 400_000)
        job.event(kind)


def _real_attempt(job: _Job, end: str | None) -> str:
    """A real CLI: activity from its hooks, answers from a person, usage from its
    transcript. Returns how it ended: the job's status, or "cancelled" while waiting."""
    rng = job.rng
    for _turn in range(rng.randint(1, 4)):
        job.wait(50, 3_000)
        job.activity(Activity.WORKING)
        for _call in range(rng.randint(1, 3)):
            job.wait(500, 90_000)
            job.usage()
        if rng.random() < 0.35:
            job.wait(100, 60_000)
            job.activity(Activity.WAITING)
            long_wait = rng.random() < 0.08  # nobody there: hours
            job.wait(HOUR_MS, 3 * HOUR_MS) if long_wait else job.wait(300, 240_000)
            if rng.random() < 0.05:
                return JobStatus.CANCELLED  # the person cancelled instead of answering
            job.event(EventType.INPUT, "answered yes", {"kind": "answer", "answer": Answer.YES})
            job.activity(Activity.WORKING)
        if rng.random() < 0.05:
            job.wait(1_000, 200_000)
            job.activity(Activity.STALLED)
            job.wait(1_000, 100_000)
            job.activity(Activity.WORKING)
        job.wait(500, 120_000)
        job.activity(Activity.IDLE)
        job.wait(100, 30_000)
    if end is not None:
        if rng.random() < 0.3:
            job.activity(Activity.EXITED)
            job.wait(10, 2_000)
        if rng.random() < 0.5:  # else the control room ends it (done when idle)
            job.event(end)
    return end or JobStatus.ERROR


def _job_messages(rng: random.Random, job_id: str, agent: str, t0: int) -> list[dict[str, Any]]:
    """Everything one job puts on the bus, unsorted, with commit times."""
    job = _Job(rng, job_id, agent, t0)
    job.registered()
    real = rng.random() < 0.6
    attempts = 2 if rng.random() < 0.1 else 1
    for attempt in range(attempts):
        job.wait(100, 120_000)  # queue wait
        # a queue worker's agent: its started event moves the pending job to running
        started_by_event = not real and rng.random() < 0.2
        if started_by_event:
            job.event(EventType.STARTED)
        job.status(JobStatus.PENDING, JobStatus.RUNNING)
        job.wait(50, 2_000)  # the agent starting in its pane
        last_attempt = attempt == attempts - 1
        roll = rng.random()
        end: str = JobStatus.COMPLETED if last_attempt and roll < 0.85 else JobStatus.ERROR
        if real and rng.random() < 0.05:  # its pane lost (tmux killed), then restarted
            job.activity(Activity.WORKING)
            job.wait(1_000, 300_000)
            job.activity(Activity.INTERRUPTED)
            job.wait(5_000, 2 * HOUR_MS)
            job.status(JobStatus.RUNNING, JobStatus.PENDING)
            job.wait(100, 5_000)
            job.status(JobStatus.PENDING, JobStatus.RUNNING)
            job.wait(50, 2_000)
        # The control room ends some jobs itself (a dead pane, a cancel): no event.
        ended_by_control: str | None = (
            JobStatus.ERROR if roll > 0.97 else JobStatus.CANCELLED if roll > 0.95 else None
        )
        reported_end = None if ended_by_control else end
        if real:
            if _real_attempt(job, reported_end) == JobStatus.CANCELLED:
                ended_by_control = JobStatus.CANCELLED
        else:
            _demo_attempt(job, reported_end, started=started_by_event)
        if ended_by_control is not None:
            job.wait(1000, 60_000)
            end = ended_by_control
        job.status(JobStatus.RUNNING, end)
        if end == JobStatus.CANCELLED:
            break
        if not last_attempt:
            job.wait(1000, 60_000)
            job.status(end, JobStatus.PENDING)
    return job.out


def generate_lines(
    events: int, *, seed: int = 7, start_ms: int = DEFAULT_START_MS, jobs_per_hour: int = 600
) -> list[str]:
    """Exactly ``events`` JSONL lines (all message types counted), seq from 1."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = []
    t = start_ms
    while len(messages) < events * 1.05 + 20:
        t += rng.randint(1, 2 * HOUR_MS // jobs_per_hour)
        job_id = f"{rng.getrandbits(32):08x}"
        messages.extend(_job_messages(rng, job_id, rng.choice(AGENTS), t))
        if rng.random() < 0.02:
            messages.append({"ts_ms": t + 1, "from_agent": "user", "type": "chat", "payload": "hi"})
        if rng.random() < 0.01:
            messages.append(
                {"ts_ms": t + 2, "from_agent": "control", "type": MessageType.CONTROL_STARTED}
            )
    messages.sort(key=lambda m: m["ts_ms"])
    return list(_serialise(messages[:events], rng))


def _serialise(messages: list[dict[str, Any]], rng: random.Random) -> Iterator[str]:
    for seq, message in enumerate(messages, start=1):
        line = {
            "seq": seq,
            "id": message.get("id") or str(uuid.UUID(int=rng.getrandbits(128))),
            "ts_ms": message["ts_ms"],
            "from_agent": message["from_agent"],
            "to_agent": None,
            "type": message["type"],
            "correlation_id": message.get("correlation_id"),
            "in_reply_to": None,
            "payload": message.get("payload"),
            "payload_ref": None,
        }
        yield json.dumps(line, separators=(",", ":")) + "\n"
