"""Confirmation: did the agent take the answer? Asked once, here, for every way in.

The registry's word counts: the job no longer waits on that question (its
activity changed, or it ended). For keys, the dialog leaving the screen is
also proof they went in, which `orchestrate answer` accepts after NEXT_MOVE_SEC
(nothing may be recording the agent's activity then); the control room waits on for
the registry's word, within the same deadline, because it shows what the agent
does next. The screen is read on all the while: the check may record a question
that replaced the answered one (keys.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from registry.records import Job
from registry.vocabulary import JobStatus

POLL_SEC = 0.05
CONFIRM_SEC = 5.0
"""`orchestrate answer`: how long the agent has to react."""
RECORD_SEC = 6.0
"""The control room, after that: how long the registry has to show the agent moving
on (the supervisor or the control room's reconcile records it within a pass or two)."""
NEXT_MOVE_SEC = 1.0
"""`orchestrate answer`, once the dialog left the screen: how long it still looks for the
agent's next move, the registry's word or a question drawn in the answered one's place
(Claude Code 2.1.332 draws its offer to make auto mode the default a moment after a
"no", and no hook reports that). An answer the registry confirms returns at once."""


class JobReader(Protocol):
    """The registry, as confirmation reads it."""

    def get(self, job_id: str) -> Job: ...


@dataclass(frozen=True)
class Confirmation:
    """How the wait for the agent's reaction ended."""

    recorded: bool
    """The registry shows the agent moved on from the question."""
    delivered: bool
    """The answer went in: recorded, or (keys) its dialog left the screen."""
    now: str
    """The job's state then: its activity while it runs, else its status."""


def moved_on(job: Job, since_ms: int | None) -> bool:
    """Whether ``job`` no longer waits on the question seen at activity ``since_ms``."""
    return not job.waiting or job.activity_at_ms != since_ms


def state_of(job: Job) -> str:
    """ "working", "waiting" while it runs; "completed", "error"… once it ended."""
    if job.status == JobStatus.RUNNING:
        return job.activity or job.status
    return job.status


def confirm(
    registry: JobReader,
    job_id: str,
    since_ms: int | None,
    *,
    timeout: float,
    screen_moved_on: Callable[[], bool] = lambda: False,
    until_recorded: bool = False,
) -> Confirmation:
    """Wait up to ``timeout`` for the job to move on from the question seen at
    activity ``since_ms``. The screen moving on ends the wait unless
    ``until_recorded``; then only the registry's word does."""
    deadline = time.monotonic() + timeout
    delivered_at: float | None = None
    while True:
        job = registry.get(job_id)
        if moved_on(job, since_ms):
            return Confirmation(True, True, state_of(job))
        now = time.monotonic()
        if screen_moved_on() and delivered_at is None:  # read every time: it may see the
            delivered_at = now  # question that takes the answered one's place, later
        settled = delivered_at is not None and now - delivered_at >= NEXT_MOVE_SEC
        if (settled and not until_recorded) or now >= deadline:
            return Confirmation(False, delivered_at is not None, state_of(job))
        time.sleep(POLL_SEC)
