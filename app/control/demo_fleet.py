"""The demo fleet: a few demo agents (``app/agents/demo_cli.py``), started for
`orchestrate demo` and `watch --demo`, and stopped again when the control room that
started them quits (only those: never another agent)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from app.agents.demo import START as DEMO_START
from app.control.orchestrator import Orchestrator
from app.tmux.errors import TmuxError
from registry.errors import JobNotFound, RegistryError
from registry.records import Job
from registry.vocabulary import FINAL_JOB_STATUSES, JobStatus

DEMO_LABEL_PREFIX = "demo-"
MAX_DEMO_AGENTS = 20  # `demo --agents` and `watch --demo --agents` alike
STOP_GRACE_SEC = 2.0
"""A demo agent exits on its first Ctrl-C; its pane is killed after this anyway."""
STOPPED_WHY = "demo ended: the control room that started it quit"


def start_demo(
    orchestrator: Orchestrator,
    agents: int = 3,
    *,
    seed: int = 0,
    delay: float | None = None,
    steps: int | None = None,
    workdir: str | Path | None = None,
) -> list[Job]:
    """Start `agents` demo agents, one per session `demo-1..N`, with varied behaviour.

    Agent 1 completes, 2 asks permission (and waits for `orchestrate answer`),
    3 fails; the rest complete. Delays of 0.5-1.5 s per step keep the control
    room moving; `seed` makes a run repeatable.
    """
    rng = random.Random(seed)
    started = []
    for number in range(1, agents + 1):
        role = ("completes", "asks permission", "fails")[(number - 1) % 3]
        if number > 3:
            role = "completes"
        argv = list(DEMO_START)
        argv[-1:-1] = [
            "--steps",
            str(steps or rng.randint(4, 6)),
            "--delay",
            f"{delay if delay is not None else rng.uniform(0.5, 1.5):.2f}",
            "--seed",
            str(seed * 100 + number),
        ]
        if role == "asks permission":
            argv.insert(-1, "--ask-permission")
        if role == "fails":
            argv.insert(-1, "--fail")
        prompt = f"Demo task {number}: tidy the code base ({role})."
        started.append(
            orchestrator.submit(
                prompt,
                "demo",
                f"{DEMO_LABEL_PREFIX}{number}",
                agent_cmd=argv,
                workdir=workdir,
            )
        )
    return started


def stop_demo(
    orchestrator: Orchestrator, job_ids: Iterable[str], *, grace_sec: float = STOP_GRACE_SEC
) -> int:
    """Stop the demo agents of ``job_ids``: a live job is cancelled (its agent asked to
    exit, its pane killed after ``grace_sec``), a finished one's pane is closed. A demo
    session left with no agent pane of any job is then stopped (hard) too; one that
    holds another agent is left alone. Returns how many panes were stopped.

    The agents stop side by side, so quitting costs one grace period, not one each."""
    jobs = []
    for job_id in job_ids:
        with contextlib.suppress(JobNotFound):
            jobs.append(orchestrator.registry.get(job_id))
    with ThreadPoolExecutor(max_workers=min(8, len(jobs) or 1)) as pool:
        stopped = sum(pool.map(lambda job: _stop_one(orchestrator, job, grace_sec), jobs))
    for label in sorted({job.agent_session for job in jobs}):
        _stop_session_if_empty(orchestrator, label)
    return stopped


def _stop_one(orchestrator: Orchestrator, job: Job, grace_sec: float) -> bool:
    """Cancel one demo job if it is live, and stop its pane; True if a pane was stopped."""
    if job.status not in FINAL_JOB_STATUSES:
        with contextlib.suppress(RegistryError):  # it ended meanwhile
            job = orchestrator.registry.cancel(job.job_id, STOPPED_WHY)
    try:
        return orchestrator.stop_agent(job, grace_sec=grace_sec)
    except TmuxError:  # the server went away meanwhile: nothing left to stop
        return False


def _stop_session_if_empty(orchestrator: Orchestrator, label: str) -> None:
    """Stop a demo session that no agent pane uses any more (its shell window goes too)."""
    try:
        if orchestrator.driver.agent_panes(label):
            return  # another job's agent works there: not ours to stop
        if orchestrator.registry.list(status=JobStatus.RUNNING, agent_session=label):
            return
        orchestrator.stop_session(label, "hard")
    except (TmuxError, RegistryError):
        return  # already gone, not ours, or not recorded: nothing to stop
