"""Hand-made bus exports whose aggregates are worked out by hand in the tests: the
activity intervals of a few jobs, with every case the definitions name."""

from __future__ import annotations

import json
from typing import Any

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR = 3_600_000
MIN = 60_000


class Lines:
    """A bus export in the making: seqs are given in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, ts_ms: int, kind: str, job: str | None, **payload: Any) -> Lines:
        message = {"seq": len(self.lines) + 1, "ts_ms": ts_ms, "type": kind, "correlation_id": job}
        self.lines.append(json.dumps({**message, "payload": payload or None}) + "\n")
        return self

    def registered(self, ts_ms: int, job: str, agent: str) -> Lines:
        return self.add(ts_ms, "job.registered", job, job_id=job, agent=agent)

    def status(self, ts_ms: int, job: str, to: str) -> Lines:
        return self.add(ts_ms, "job.status", job, job_id=job, to=to)

    def event(self, ts_ms: int, job: str, event: str, **data: Any) -> Lines:
        return self.add(ts_ms, "job.event", job, job_id=job, event=event, data=data)

    def activity(self, ts_ms: int, job: str, activity: str) -> Lines:
        return self.event(ts_ms, job, "activity", activity=activity, source="hook:x")

    def usage(self, ts_ms: int, job: str, at_ms: int, **fields: Any) -> Lines:
        return self.add(ts_ms, "job.usage", job, job_id=job, at_ms=at_ms, **fields)


def day_of_agents() -> Lines:
    """Four jobs of two agents across four hours (T0 .. T0 + 4 h):

    * job a (claude): starting 00:10-00:11, working to 00:50, waiting to 02:20 (crosses
      two hour boundaries, then answered), working to 02:30, idle to 02:40, completed.
    * job b (codex): started by its first event while pending at 00:30 (working, not
      starting), interrupted at 01:00, requeued at 01:30, running again at 01:40
      (starting), working at 01:45, still working at the cut-off (03:00).
    * job c (codex): waiting at 02:05, cancelled at 02:15 while waiting (left waiting).
    * job d (claude): registered, never started.
    Plus usage of job a and a restart at 01:05.
    """
    lines = Lines()
    lines.registered(T0, "0000000a", "claude")
    lines.status(T0 + 10 * MIN, "0000000a", "running")
    lines.activity(T0 + 11 * MIN, "0000000a", "working")
    lines.registered(T0 + 20 * MIN, "0000000b", "codex")
    lines.event(T0 + 30 * MIN, "0000000b", "started")
    lines.status(T0 + 30 * MIN, "0000000b", "running")
    lines.activity(T0 + 50 * MIN, "0000000a", "waiting")
    lines.activity(T0 + 60 * MIN, "0000000b", "interrupted")
    lines.add(T0 + 65 * MIN, "control.started", None)
    lines.usage(T0 + 66 * MIN, "0000000a", T0 + 40 * MIN, model="m1", input_tokens=100,
                output_tokens=20, cache_read_tokens=1000, measured=True)  # fmt: skip
    lines.status(T0 + 90 * MIN, "0000000b", "pending")
    lines.status(T0 + 100 * MIN, "0000000b", "running")
    lines.activity(T0 + 105 * MIN, "0000000b", "working")
    lines.registered(T0 + 119 * MIN, "0000000c", "codex")
    lines.status(T0 + 120 * MIN, "0000000c", "running")
    lines.activity(T0 + 125 * MIN, "0000000c", "waiting")
    lines.status(T0 + 135 * MIN, "0000000c", "cancelled")
    lines.activity(T0 + 140 * MIN, "0000000a", "working")
    lines.event(T0 + 141 * MIN, "0000000a", "input", kind="answer", answer="yes")
    lines.activity(T0 + 150 * MIN, "0000000a", "idle")
    lines.status(T0 + 160 * MIN, "0000000a", "completed")
    lines.activity(T0 + 170 * MIN, "0000000a", "working")  # after its end: nothing
    lines.registered(T0 + 175 * MIN, "0000000d", "claude")
    return lines
