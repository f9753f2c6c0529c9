"""A Jepsen-style checker for job events: a history of publishes against what the registry holds.

The history records every `orchestrate publish` a test ran: the event it
printed (printed means stored in the agent's outbox: it is printed only after
that) and how the process ended: ``ok`` (exit 0: acknowledged to the caller),
``failed`` (non-zero exit), ``crashed`` (killed by the test; it may have
printed nothing). The checker reads every ``job.event`` row of the registry
and reports:

* lost acknowledged: an ``ok`` publish whose event is not in the registry;
* lost terminal: a job whose terminal event (completed/error) was printed but
  is not in the registry, or whose status is not the one it asked for;
* lost queued: a printed event (``failed``/``crashed`` too) not in the registry
  (the outbox took it, so it must arrive);
* duplicates: a (job, seq) applied more than once;
* mismatched: a (job, seq) whose applied event differs from the one printed
  (another event under a seq already used);
* gaps: seqs a job is still missing;
* phantoms: applied events no publish could have made (a seq past the last
  one any publish of that job took).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Outcome = Literal["ok", "failed", "crashed"]
TERMINAL = ("completed", "error")


@dataclass(frozen=True)
class Op:
    """One publish, as the test saw it."""

    job_id: str
    event: str
    outcome: Outcome
    printed: dict[str, Any] | None  # the event as published (None: killed before printing)
    exit_code: int | None = None
    fault: str = ""  # the fault in progress when it ran

    @property
    def seq(self) -> int | None:
        return None if self.printed is None else int(self.printed["seq"])


@dataclass
class History:
    """Every publish a test ran, safe to append to from several threads."""

    ops: list[Op] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, op: Op) -> None:
        with self._lock:
            self.ops.append(op)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for op in self.ops if op.outcome == outcome)


@dataclass(frozen=True)
class Applied:
    """What the registry holds: every job.event row, and each job's status and gaps."""

    rows: list[tuple[str, int, dict[str, Any]]]  # (job_id, seq, event)
    status: dict[str, str]
    missing: dict[str, int]

    @classmethod
    def read(cls, state_dir: Path) -> Applied:
        """Read the registry's database from a connection of our own."""
        conn = sqlite3.connect(state_dir / "state.db")
        try:
            rows = []
            for (payload,) in conn.execute("SELECT payload FROM messages WHERE type = 'job.event'"):
                event = json.loads(payload)
                rows.append((str(event["job_id"]), int(event["seq"]), event))
            status, missing = {}, {}
            for job_id, job_status, gaps in conn.execute(
                "SELECT job_id, status, missing_seqs FROM jobs"
            ):
                status[job_id] = job_status
                missing[job_id] = sum(b - a + 1 for a, b in json.loads(gaps))
            return cls(rows, status, missing)
        finally:
            conn.close()


@dataclass
class Report:
    """What the checker found; ``ok`` when nothing is wrong."""

    acknowledged: int = 0
    queued: int = 0
    applied: int = 0
    lost_acknowledged: list[str] = field(default_factory=list)
    lost_terminal: list[str] = field(default_factory=list)
    lost_queued: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    phantoms: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost_acknowledged or self.lost_terminal or self.lost_queued
            or self.duplicates or self.mismatched or self.gaps or self.phantoms
        )  # fmt: skip

    def summary(self) -> str:
        problems = {
            name: getattr(self, name)
            for name in ("lost_acknowledged", "lost_terminal", "lost_queued", "duplicates",
                         "mismatched", "gaps", "phantoms")
            if getattr(self, name)
        }  # fmt: skip
        head = f"{self.acknowledged} acknowledged, {self.queued} queued, {self.applied} applied"
        return head + ("" if not problems else f"; PROBLEMS: {problems}")


def check(history: History, applied: Applied, jobs: list[str]) -> Report:
    """Compare the history of publishes for ``jobs`` with what the registry applied."""
    report = Report(applied=sum(1 for job, _seq, _e in applied.rows if job in jobs))
    held: dict[tuple[str, int], dict[str, Any]] = {}
    counts = Counter((job, seq) for job, seq, _event in applied.rows)
    for job, seq, event in applied.rows:
        held[(job, seq)] = event
    for (job, seq), times in counts.items():
        if job in jobs and times > 1:
            report.duplicates.append(f"{job}:{seq} x{times}")
    highest: dict[str, int] = {}
    for op in history.ops:
        if op.job_id not in jobs or op.printed is None:
            continue
        seq = op.seq
        assert seq is not None
        highest[op.job_id] = max(highest.get(op.job_id, 0), seq)
        report.queued += 1
        where = f"{op.job_id}:{seq} {op.event} ({op.outcome}{', ' + op.fault if op.fault else ''})"
        if op.outcome == "ok":
            report.acknowledged += 1
        stored = held.get((op.job_id, seq))
        if stored is None:
            (report.lost_acknowledged if op.outcome == "ok" else report.lost_queued).append(where)
            if op.event in TERMINAL:
                report.lost_terminal.append(where)
            continue
        if stored != op.printed:
            report.mismatched.append(where)
        if op.event in TERMINAL and applied.status.get(op.job_id) != op.event:
            report.lost_terminal.append(f"{where}: job is {applied.status.get(op.job_id)}")
    for job in jobs:
        if applied.missing.get(job):
            report.gaps.append(f"{job}: {applied.missing[job]} seq(s) missing")
    # A publish killed before it printed may still have stored its event: its seq is
    # then one no printed op has, but never past the last seq a later publish took.
    for job, seq, _event in applied.rows:
        if job in jobs and seq > highest.get(job, 0):
            report.phantoms.append(f"{job}:{seq}")
    return report
