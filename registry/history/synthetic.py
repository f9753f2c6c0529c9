"""Deterministic generated bus exports for the history tests and benchmark.

Produces what ``bus.export`` writes: one message per line, seq increasing with
commit time, with jobs that queue, start, report progress, end (some in
error, some resumed and run again, some failed by the control room without an
event of their own, some cancelled), control-room restarts, and chat messages
the pipeline must ignore. As the registry does, every status move is also a
``job.status`` message: running when the job is handed to its pane, and the end
right after the event that caused it.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

AGENTS = ("claude", "codex", "aider", "gemini")
HOUR_MS = 3_600_000
DEFAULT_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _iso(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _job_messages(rng: random.Random, job_id: str, agent: str, t0: int) -> list[dict[str, Any]]:
    """Everything one job puts on the bus, unsorted, with commit times."""
    out: list[dict[str, Any]] = [
        {
            "ts_ms": t0,
            "from_agent": "control",
            "type": "job.registered",
            "correlation_id": job_id,
            "payload": {
                "job_id": job_id,
                "agent": agent,
                "agent_session": f"{agent}-1",
                "created_at": _iso(t0),
            },
        }
    ]
    event_seq = 0
    now = t0

    def status(before: str, after: str) -> None:
        out.append(
            {
                "ts_ms": now,
                "from_agent": "control",
                "type": "job.status",
                "correlation_id": job_id,
                "payload": {"job_id": job_id, "from": before, "to": after, "reason": "x"},
            }
        )

    attempts = 2 if rng.random() < 0.1 else 1
    for attempt in range(attempts):
        now += rng.randint(100, 120_000)  # queue wait
        status("pending", "running")
        now += rng.randint(50, 2_000)  # the agent starting in its pane
        kinds = ["started"] + ["progress"] * rng.randint(0, 8)
        if rng.random() < 0.1:
            kinds.insert(2, "permission_required")
        last_attempt = attempt == attempts - 1
        roll = rng.random()
        end = "completed" if last_attempt and roll < 0.85 else "error"
        # The control room ends some jobs itself (a dead pane, a cancel): no event.
        ended_by_control = "error" if roll > 0.97 else "cancelled" if roll > 0.95 else None
        if ended_by_control is None:
            kinds.append(end)
        for kind in kinds:
            now += 0 if kind == "started" else rng.randint(50, 400_000)
            event_seq += 1
            out.append(
                {
                    "ts_ms": now,
                    "from_agent": agent,
                    "type": "job.event",
                    "correlation_id": job_id,
                    "id": f"{job_id}:{event_seq}",
                    "payload": {
                        "schema_version": 1,
                        "seq": event_seq,
                        "job_id": job_id,
                        "event": kind,
                        "timestamp": _iso(now),
                        "detail": f"{kind} step",
                        "data": {"n": event_seq},
                    },
                }
            )
        if ended_by_control is not None:
            now += rng.randint(1000, 60_000)
            end = ended_by_control
        status("running", end)
        if not last_attempt:
            now += rng.randint(1000, 60_000)
            status(end, "pending")
    return out


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
            messages.append({"ts_ms": t + 2, "from_agent": "control", "type": "control.started"})
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
