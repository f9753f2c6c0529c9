"""An in-memory source for the screen tests: deterministic rows, no SQLite, no tmux.

It keeps jobs, sessions and a bus of events in plain dicts and applies the same
state machine as the registry, so the look of every screen and the wiring of
every key can be pinned fast; `tests/tui/live` does the same against the real
registry and tmux.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app.control.errors import AgentNotStarted
from app.tmux.attach import AttachCommand
from app.tui.source import (
    JOB_STATUSES,
    AnswerOutcome,
    Delta,
    EventRow,
    JobDetail,
    JobRow,
    Resumed,
    SessionRow,
    Snapshot,
    StopMode,
)
from registry import states
from registry.errors import IllegalTransition, JobNotFound, SessionNotFound
from registry.needs_you import Signal, claim_id
from registry.vocabulary import Answer, SessionStatus

FIXED_NOW = datetime(2025, 1, 15, 12, 0, 0, tzinfo=UTC)
STOP_STATES = {
    "graceful": SessionStatus.STOPPED,
    "soft": SessionStatus.ARCHIVED,
    "hard": SessionStatus.TERMINATED,
}
ENDED = ("completed", "error", "cancelled")
AGENT_ANSWERS: dict[str, tuple[Answer, ...]] = {
    "claude": tuple(Answer),
    "codex": tuple(Answer),
    "aider": tuple(Answer),
}
"""What each agent kind takes, as its adapter's keys say (the others: yes and no)."""


class InMemorySource:
    """A thread-safe, in-memory `ControlRoomSource`; `clock` makes it deterministic."""

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self.clock = clock or (lambda: datetime.now(UTC))
        self.jobs: dict[str, JobRow] = {}
        self.prompts: dict[str, str] = {}
        self.sessions: dict[str, SessionRow] = {}
        self.events: list[tuple[int, EventRow]] = []  # (bus seq, event with its job seq)
        self.job_seq: dict[str, int] = {}
        self.pane_logs: dict[str, Path] = {}
        self.removed: list[tuple[int, str]] = []  # (bus seq at removal, job_id)
        self.changed_at: dict[str, int] = {}  # job_id -> bus seq of its last change
        self.broker_state: Any = "none"
        self.inputs: list[tuple[str, str]] = []  # (job_id, text) sent to agents
        self.kept_panes: set[str] = set()
        """Finished jobs whose agent is still at its prompt (`--done-when idle`)."""
        self.seq = 0
        self.claimed: set[str] = set()  # notify claims, as the bus's unique ids keep them
        self.lock = threading.RLock()

    # -- building state -------------------------------------------------
    def add_job(self, job: JobRow, prompt: str = "") -> None:
        with self.lock:
            self.jobs[job.job_id] = job
            self.prompts[job.job_id] = prompt
            self.changed_at[job.job_id] = self.seq

    def add_session(self, session: SessionRow) -> None:
        with self.lock:
            self.sessions[session.label] = session

    def emit(self, job_id: str, event: str, detail: str = "", *, skip: int = 0) -> None:
        """Append an event to the bus and move the job as the registry would;
        `skip` leaves a gap of that many lost events in the job's seq."""
        with self.lock:
            self.seq += 1
            now = self.clock()
            job_seq = self.job_seq.get(job_id, 0) + 1 + skip
            self.job_seq[job_id] = job_seq
            self.events.append((self.seq, EventRow(job_seq, now, job_id, event, detail)))
            job = self.jobs[job_id]
            status = {"started": "running", "completed": "completed", "error": "error"}.get(
                event, job.status
            )
            waiting = event == "permission_required" and status == "running"
            self._put(
                replace(
                    job,
                    status=status,  # type: ignore[arg-type]
                    updated_at=now,
                    last_event=event,
                    progress_detail=detail or job.progress_detail,
                    missing_events=job.missing_events + skip,
                    waiting_permission=waiting,
                    question=detail if waiting else "",
                    state_since=now if waiting or status in ENDED else None,
                    asked=(("question", detail), ("seen by", "screen rule")) if waiting else (),
                    answers=AGENT_ANSWERS.get(job.agent, ("yes", "no")),
                )
            )

    def delete_job(self, job_id: str) -> None:
        with self.lock:
            self.jobs.pop(job_id, None)
            self.seq += 1
            self.removed.append((self.seq, job_id))

    def _put(self, job: JobRow) -> None:
        self.jobs[job.job_id] = job
        self.changed_at[job.job_id] = self.seq

    def _job(self, job_id: str) -> JobRow:
        try:
            return self.jobs[job_id]
        except KeyError:
            raise JobNotFound(f"no job {job_id!r}") from None

    def _move(self, job_id: str, transition: str) -> None:
        """Move the job as the registry's own state machine does (and refuse as it does,
        in its words), so the fake cannot allow what the registry refuses."""
        with self.lock:
            job = self._job(job_id)
            status = states.next_state(states.JOB, job.status, transition, job_id)
            self.seq += 1
            self._put(replace(job, status=status, updated_at=self.clock()))  # type: ignore[arg-type]

    # -- ControlRoomSource ----------------------------------------------
    def poll(self, after_seq: int) -> Delta:
        with self.lock:
            counts = {status: 0 for status in JOB_STATUSES}
            for job in self.jobs.values():
                counts[job.status] += 1
            changed = tuple(
                job
                for job_id, job in self.jobs.items()
                if after_seq == 0 or self.changed_at.get(job_id, 0) > after_seq
            )
            window_start = self.clock() - timedelta(seconds=10)
            recent = sum(1 for _, event in self.events[-1000:] if event.ts >= window_start)
            return Delta(
                cursor=self.seq,
                jobs=changed,
                removed_job_ids=tuple(j for s, j in self.removed if s > after_seq),
                sessions=tuple(self.sessions.values()),
                events=tuple(e for s, e in self.events if s > after_seq)[-1000:],
                snapshot=Snapshot(
                    counts,
                    recent / 10.0,
                    self.broker_state,
                    interrupted=sum(j.activity == "interrupted" for j in self.jobs.values()),
                ),
            )

    def job_detail(self, job_id: str) -> JobDetail:
        with self.lock:
            job = self._job(job_id)
            timeline = [event for _, event in self.events if event.job_id == job_id]
            seqs = [event.seq for event in timeline]
            missing = sorted(set(range(seqs[0], seqs[-1] + 1)) - set(seqs)) if seqs else []
            record: dict[str, Any] = {
                "job_id": job.job_id,
                "status": job.status,
                "agent": job.agent,
                "agent_session": job.agent_session,
                "prompt": self.prompts.get(job_id, ""),
                "created_at": job.created_at.isoformat(),
                "updated_at": job.updated_at.isoformat(),
                "last_seq": seqs[-1] if seqs else 0,
                "last_event": job.last_event,
                "timeout_sec": 3600,
                "idle_timeout_sec": 120,
            }
            if job.status == "running":
                record["activity"] = {
                    "activity": job.state,
                    "source": "hook",
                    "since": job.updated_at.isoformat(),
                }
            why = f"{job.status}: last event {job.last_event or 'none'}"
            if job.waiting_permission:
                why = "running: waiting for a yes/no answer to permission_required"
            return JobDetail(record, why, timeline, missing, self.pane_logs.get(job_id))

    def cancel(self, job_id: str) -> None:
        self._move(job_id, "cancel")
        with self.lock:  # the row says why, as the registry's does
            job = self.jobs[job_id]
            self.jobs[job_id] = replace(
                job,
                last_event="cancelled",
                progress_detail="cancelled by user",
                waiting_permission=False,
            )

    def resume(self, job_id: str) -> None:
        if self._job(job_id).activity == "interrupted":  # restarted as it is, running
            with self.lock:
                self.seq += 1
                self._put(replace(self.jobs[job_id], activity="starting", progress_detail=""))
            return
        self._move(job_id, "resume")

    def resume_interrupted(self) -> Resumed:
        with self.lock:
            job_ids = sorted(j.job_id for j in self.jobs.values() if j.activity == "interrupted")
            for job_id in job_ids:
                self.resume(job_id)
            return Resumed(tuple(job_ids))

    def stop_session(self, label: str, mode: StopMode) -> None:
        with self.lock:
            if label not in self.sessions:
                raise SessionNotFound(f"no session {label!r}")
            session = self.sessions[label]
            # as the orchestrator: a session whose tmux session is gone is terminated
            vanished = not session.tmux_alive and mode != "hard"
            self.sessions[label] = replace(
                session,
                state=SessionStatus.TERMINATED if vanished else STOP_STATES[mode],
                tmux_alive=mode == "soft" and session.tmux_alive,
            )

    def answer(self, job_id: str, reply: Answer) -> AnswerOutcome:
        with self.lock:
            if not self._job(job_id).waiting_permission:
                raise IllegalTransition(f"job {job_id} is not waiting for permission")
            if reply not in self.jobs[job_id].answers:
                raise IllegalTransition(f"job {job_id}: its agent has no '{reply}' answer")
            granted = "permission granted" if reply != "no" else "permission denied"
            self.emit(job_id, "progress", granted)
            return AnswerOutcome(True, "working", f"keys {reply[0]}")

    def claim_signal(self, signal: Signal) -> bool:
        with self.lock:
            key = claim_id(signal)
            fresh = key not in self.claimed
            self.claimed.add(key)
            return fresh

    def submit(self, prompt: str, agent: str, agent_session: str) -> str:
        with self.lock:
            job_id = f"{len(self.jobs) + len(self.removed) + 1:08x}"
            now = self.clock()
            self.seq += 1
            self.add_job(JobRow(job_id, "pending", agent, agent_session, now, now), prompt)
            return job_id

    def installed_agents(self) -> list[str]:
        return ["codex", "demo"]

    def attach_command(self, job_id: str) -> AttachCommand:
        if self._job(job_id).status != "running" and job_id not in self.kept_panes:
            raise AgentNotStarted(f"job {job_id} has no agent pane to attach to")
        argv = ["tmux", "-L", "orchestrate-test", "attach-session", "-t", "%1"]
        return AttachCommand(argv, switches_client=False)

    def send_input(self, job_id: str, text: str) -> int:
        """As the orchestrator: a completed job whose pane is kept runs again."""
        with self.lock:
            job = self._job(job_id)
            if job.status != "running" and job_id not in self.kept_panes:
                raise AgentNotStarted(f"job {job_id} has no live agent pane to send to")
            if job.status == "completed":
                self._move(job_id, "follow_up")
            self.inputs.append((job_id, text))
            self.emit(job_id, "input", f"{len(text)} characters from the control room")
        return len(text)

    def open_control_room_split(self, job_id: str) -> str:
        self._job(job_id)
        return "tmux -L orchestrate-test attach -t =control-room"

    def start(self) -> str | None:
        return None

    def close(self) -> None:
        return None

    def reconcile(self) -> str | None:
        return None

    def run_bridge(self, stop: threading.Event) -> None:
        return None

    def start_demo(self, agents: int) -> list[str]:
        return [self.submit(f"demo task {n}", "demo", "alpha") for n in range(agents)]

    def stop_demo(self, job_ids: list[str]) -> int:
        for job_id in job_ids:
            if self._job(job_id).status in ("pending", "running"):
                self.cancel(job_id)
        return len(job_ids)


def demo_source(clock: Callable[[], datetime] | None = None) -> InMemorySource:
    """A source seeded with a handful of agents in every state (deterministic data)."""
    source = InMemorySource(clock or (lambda: FIXED_NOW))
    now = source.clock()
    agents = [("claude", "alpha"), ("codex", "beta"), ("aider", "gamma"), ("claude", "delta")]
    for label, liveness, age, state in [
        ("alpha", "ok", 4.0, "running"),
        ("beta", "WARN", 42.0, "running"),
        ("gamma", "STALE", 130.0, "running"),
        ("delta", "DEAD", 600.0, "stopped"),
    ]:
        alive = state == "running"
        source.add_session(SessionRow(label, state, alive, liveness, age, None))  # type: ignore[arg-type]
    plan = [
        ("3fa2c1d0", 0, ["started", "progress:reading repo", "progress:running tests 3/12"]),
        ("7b0e99a1", 1, ["started", "permission_required:run `rm -rf build/`?"]),
        ("c4d5e6f7", 2, ["started", "progress:step 1", "completed:all tests pass"]),
        ("0a1b2c3d", 3, ["started", "error:agent exited with code 1"]),
        ("9e8d7c6b", 0, []),
        ("5f4e3d2c", 1, ["started", "progress:indexing", "progress:refactor 2/5"]),
    ]
    for index, (job_id, agent_index, events) in enumerate(plan):
        agent, session = agents[agent_index]
        created = now - timedelta(minutes=5 * (len(plan) - index))
        source.add_job(JobRow(job_id, "pending", agent, session, created, created), "demo task")
        for item in events:
            event, _, detail = item.partition(":")
            source.emit(job_id, event, detail)
    # a gap in 5f4e3d2c's sequence: two events never arrived
    source.emit("5f4e3d2c", "progress", "refactor 4/5", skip=2)
    source.cancel("9e8d7c6b")
    for job_id, activity in (("3fa2c1d0", "working"), ("5f4e3d2c", "idle")):
        source.jobs[job_id] = replace(source.jobs[job_id], activity=activity)
    for job in source.jobs.values():
        if job.status == "running":
            session = source.sessions[job.agent_session]
            jobs = (*session.jobs, job.job_id)
            source.sessions[job.agent_session] = replace(session, current_job=job.job_id, jobs=jobs)
    return source
