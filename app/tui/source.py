"""The boundary between the control room and the registry: what the screens show.

The TUI only ever sees these frozen rows, fetched by a `ControlRoomSource` whose
blocking methods are called from thread workers, never from the event loop.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from app.tmux.attach import AttachCommand
from bus.errors import BusError
from registry.errors import JobNotFound as JobNotFound  # re-exported for the screens
from registry.errors import RegistryError
from registry.vocabulary import Activity, Answer, JobStatus, SessionStatus
from registry.waiting_count import stuck
from registry.wording import counted

if TYPE_CHECKING:
    from registry.needs_you import Signal

Liveness = Literal["ok", "WARN", "STALE", "DEAD", "unknown", "idle"]
BrokerState = Literal["connected", "reconnecting", "standby", "none"]
StopMode = Literal["graceful", "soft", "hard"]
Severity = Literal["information", "warning", "error"]
"""How a notice is shown (Textual's SeverityLevel; this module imports no Textual)."""
SessionState = SessionStatus

JOB_STATUSES: tuple[JobStatus, ...] = tuple(JobStatus)
STOP_MODES: tuple[StopMode, ...] = ("graceful", "soft", "hard")

# What a source may raise for an unhealthy store or transport (locked or corrupt
# database, broker down, missing file); the TUI shows these and keeps running.
SOURCE_ERRORS: tuple[type[Exception], ...] = (BusError, RegistryError, OSError, sqlite3.Error)

# The stream keeps this many events in a merged delta: older ones would scroll
# out of the bounded event log anyway.
MAX_EVENTS_PER_DELTA = 1000


@dataclass(frozen=True)
class JobRow:
    """One line of the jobs table."""

    job_id: str
    status: JobStatus
    agent: str
    agent_session: str
    created_at: datetime
    updated_at: datetime
    last_event: str | None = None
    progress_detail: str = ""
    missing_events: int = 0
    waiting_permission: bool = False
    activity: str | None = None
    """What a running job's agent is doing (registry/activity.py), None otherwise."""
    question: str = ""
    """What it waits on: the question, or the tool and its command."""
    state_since: datetime | None = None
    """When its current state began: the start of its wait, or its end (None: unknown)."""
    asked: tuple[tuple[str, str], ...] = ()
    """While it waits: what it asks, as (label, text) pairs: question, tool, command,
    and which signal saw it."""
    answers: tuple[Answer, ...] = (Answer.YES, Answer.NO)
    """The answers its agent takes (``always`` only where the agent has one)."""

    @property
    def names_command(self) -> bool:
        """Whether its wait says what it would run (a tool or a command), not only that
        it waits (Codex's status sequence comes before its screen shows the command)."""
        return any(label in ("tool", "command") for label, _ in self.asked)

    @property
    def needs_person(self) -> bool:
        """Whether a person must act: it waits for an answer, or it is stuck (stopped
        at a block, or at a screen nothing explains): what the bell and title count."""
        return self.waiting_permission or stuck(self.status, self.activity)

    @property
    def state(self) -> str:
        """The one word shown for the job: its activity while it runs (`waiting` for a
        permission answer, `working`, `idle`, `interrupted`…), its status otherwise."""
        if self.status != JobStatus.RUNNING:
            return self.status
        if self.waiting_permission:
            return Activity.WAITING
        return self.activity or JobStatus.RUNNING


LIVE_ORDER: Mapping[str, int] = {JobStatus.RUNNING: 1, JobStatus.PENDING: 2}
FINISHED_GROUP = 3


def row_order(job: JobRow) -> tuple[int, float, str]:
    """Where a job sits in the table: the live ones first, so they stay in view
    however many jobs have finished; those waiting for a permission answer top
    them, then running, then pending, oldest first (the order they were asked
    for); below them the finished jobs, newest first."""
    created = job.created_at.timestamp()
    if job.waiting_permission:
        return (0, created, job.job_id)
    group = LIVE_ORDER.get(job.status)
    if group is None:
        return (FINISHED_GROUP, -created, job.job_id)
    return (group, created, job.job_id)


def waiting_after(
    waiting: Mapping[str, JobRow], delta: Delta
) -> tuple[dict[str, JobRow], tuple[JobRow, ...]]:
    """The jobs waiting on a person once ``delta`` is applied: by id, and in table order
    (what the main screen's panel and the inbox list)."""
    now = {job_id: job for job_id, job in waiting.items() if job_id not in delta.removed_job_ids}
    for job in delta.jobs:
        if job.waiting_permission:
            now[job.job_id] = job
        else:
            now.pop(job.job_id, None)
    return now, tuple(sorted(now.values(), key=row_order))


@dataclass(frozen=True)
class AnswerOutcome:
    """How an answer went: confirmed only once the registry saw the agent move on."""

    confirmed: bool
    now: str
    """The job's state afterwards ("working", "completed", or still "waiting")."""
    how: str = ""
    """How it went in ("keys y Enter", "hook decision"), when it did."""


@dataclass(frozen=True)
class SessionRow:
    """One agent session with its tmux state and heartbeat liveness."""

    label: str
    state: SessionState
    tmux_alive: bool
    liveness: Liveness
    heartbeat_age_s: float | None = None
    current_job: str | None = None
    jobs: tuple[str, ...] = ()
    """Every running job in the session (a session can run several agents' panes)."""


@dataclass(frozen=True)
class EventRow:
    """One job event as it landed on the bus."""

    seq: int
    ts: datetime
    job_id: str
    event: str
    detail: str = ""


@dataclass(frozen=True)
class JobDetail:
    """Everything the job detail screen shows about one job."""

    record: Mapping[str, Any]
    why_text: str
    timeline: list[EventRow] = field(default_factory=list)
    missing_seqs: list[int] = field(default_factory=list)
    pane_log_path: Path | None = None
    worktree: str | None = None
    """The job's own git work tree, for a job run in one (and its branch, below)."""
    branch: str | None = None

    @property
    def job_id(self) -> str:
        return str(self.record.get("job_id", ""))


@dataclass(frozen=True)
class Snapshot:
    """The header figures at one instant: totals, not changes."""

    counts: Mapping[str, int] = field(default_factory=dict)
    events_per_s: float = 0.0
    broker_state: BrokerState = "none"
    in_review: int = 0  # work-tree jobs waiting for a person's review
    interrupted: int = 0  # running jobs whose agent pane is gone (a reboot, tmux killed)


@dataclass(frozen=True)
class Resumed:
    """What resuming every interrupted job did: those back in a pane, those not and why."""

    job_ids: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)  # job id -> why not

    def notices(self) -> list[tuple[str, Severity]]:
        """What the person is told: those resumed, each refusal, or that there were none."""
        said: list[tuple[str, Severity]] = []
        if self.job_ids:
            back = counted(len(self.job_ids), "interrupted job")
            said.append((f"Resumed {back}: {', '.join(self.job_ids)}", "information"))
        said.extend(
            (f"Could not resume {job_id}: {why}", "error") for job_id, why in self.failed.items()
        )
        return said or [("No interrupted job to resume", "information")]


@dataclass(frozen=True)
class Delta:
    """What changed after a bus seq; `cursor` is the `after_seq` of the next poll."""

    cursor: int
    jobs: tuple[JobRow, ...] = ()
    removed_job_ids: tuple[str, ...] = ()
    sessions: tuple[SessionRow, ...] | None = None  # None: unchanged since last poll
    events: tuple[EventRow, ...] = ()
    snapshot: Snapshot = field(default_factory=Snapshot)
    notices: tuple[str, ...] = ()  # one-off warnings (tmux missing, broker down) to show

    def merge(self, newer: Delta) -> Delta:
        """Collapse two consecutive deltas into one: the newer row of a job wins,
        events accumulate (bounded), totals and sessions come from the newer one."""
        jobs = {job.job_id: job for job in self.jobs}
        removed = set(self.removed_job_ids)
        for job_id in newer.removed_job_ids:
            jobs.pop(job_id, None)
            removed.add(job_id)
        for job in newer.jobs:
            jobs[job.job_id] = job
            removed.discard(job.job_id)
        events = (*self.events, *newer.events)[-MAX_EVENTS_PER_DELTA:]
        return replace(
            newer,
            jobs=tuple(jobs.values()),
            removed_job_ids=tuple(sorted(removed)),
            sessions=newer.sessions if newer.sessions is not None else self.sessions,
            events=events,
            notices=(*self.notices, *newer.notices),
        )


class ControlRoomSource(Protocol):
    """What the control room needs from the registry. Every method may block
    (SQLite, tmux, MQTT), so the app calls them only from thread workers."""

    def poll(self, after_seq: int) -> Delta:
        """Changes after bus seq `after_seq` (0: everything)."""
        ...

    def job_detail(self, job_id: str) -> JobDetail:
        """The job's record, timeline and pane log; raises JobNotFound if deleted."""
        ...

    def cancel(self, job_id: str) -> None: ...

    def resume(self, job_id: str) -> None: ...

    def stop_session(self, label: str, mode: StopMode) -> None: ...

    def answer(self, job_id: str, reply: Answer) -> AnswerOutcome:
        """Answer the question the job waits on (as `orchestrate answer` does) and wait
        for the registry to show the agent moving on; refused if it does not wait."""
        ...

    def claim_signal(self, signal: Signal) -> bool:
        """Claim the right to announce ``signal`` (a notify command runs once per
        change, whichever control room or supervisor sees it first)."""
        ...

    def submit(self, prompt: str, agent: str, agent_session: str) -> str:
        """Register a job and start its agent pane; returns the new job_id."""
        ...

    def installed_agents(self) -> list[str]:
        """The agent kinds this machine can start (their CLI is on PATH), the demo last."""
        ...

    def attach_command(self, job_id: str) -> AttachCommand:
        """The tmux command that shows the job's agent pane to the person at this
        terminal (attach, switch client, or nested: app/tmux/attach.py)."""
        ...

    def send_input(self, job_id: str, text: str) -> int:
        """Paste `text` into the job's agent pane and submit it, recorded as an `input`
        event (as `orchestrate send`); returns the characters sent."""
        ...

    def open_control_room_split(self, job_id: str) -> str:
        """Open the tmux window with the job's pane log above its events; returns
        the command that attaches to it (it lives on orchestrate's tmux server)."""
        ...

    def start(self) -> str | None:
        """Called once when the app opens (the real source marks a restart on the bus);
        a notice for the user, such as another control room having this state dir open."""
        ...

    def close(self) -> None:
        """Called once when the app closes."""
        ...

    def reconcile(self) -> str | None:
        """Bring liveness up to date (dead panes, expired leases); a notice or None."""
        ...

    def start_demo(self, agents: int) -> list[str]:
        """Start `agents` demo agents as real jobs; returns their job ids."""
        ...

    def stop_demo(self, job_ids: list[str]) -> int:
        """Stop the demo agents of these jobs (only those); how many panes were stopped."""
        ...

    def resume_interrupted(self) -> Resumed:
        """Start every interrupted job's agent again (as `job resume --all-interrupted`)."""
        ...

    def run_bridge(self, stop: threading.Event) -> None:
        """Carry MQTT events into the registry until `stop` is set (the header
        shows its connection); returns at once when no broker is configured."""
        ...
