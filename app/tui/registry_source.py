"""The control room's real source: rows read from the registry and the SQLite bus.

Every method blocks (SQLite, tmux, the orchestrator) and is only ever called
from the app's thread workers. The registry is opened lazily on first use, so
a corrupt, locked or newer-schema database becomes a notice in the running app
instead of a crash before it starts.
"""

from __future__ import annotations

import getpass
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from shutil import which
from typing import TYPE_CHECKING, cast

# libtmux (under both) reads sys.stdout.encoding when first imported, which fails
# once Textual has replaced stdout: import it here, before any app runs.
from app.agents import built_in_adapters
from app.approvals.question import AgentAnswers
from app.control import Orchestrator
from app.control.demo_fleet import start_demo, stop_demo
from app.hookrx.slot import ReceiverSlot, log_report
from app.review.flow import ReviewFlow
from app.review.service import ReviewService
from app.review.worktree import default_worktree
from app.tmux.attach import AttachCommand
from app.tmux.driver import CONTROL_ROOM_LABEL, TmuxDriver
from app.tmux.errors import AnswerNotReceived, TmuxError
from app.tui.room_lock import ControlRoomLock
from app.tui.rows import event_row, expand_missing, job_row, timeline_row
from app.tui.source import (
    AnswerOutcome,
    BrokerState,
    Delta,
    EventRow,
    JobDetail,
    Liveness,
    Resumed,
    SessionRow,
    Snapshot,
    StopMode,
    row_order,
)
from app.usage.budget_resume import budget_why
from bus import heartbeats
from bus.db import now_ms
from bus.messages import Outgoing
from registry.budget import BudgetStore
from registry.control_room import ControlRoomReads
from registry.jobs import Registry
from registry.needs_you import Signal, claim
from registry.records import Job
from registry.sessions import Session, SessionStore
from registry.vocabulary import (
    FINAL_JOB_STATUSES,
    Activity,
    Answer,
    MessageType,
    ReviewState,
    SessionStatus,
)
from registry.wording import counted

if TYPE_CHECKING:
    from app.settings import Settings
    from registry.ingest import IngestBridge

BATCH = 2000  # bus messages read per poll: bounded work however far behind we are
INITIAL_EVENTS_WINDOW = 500  # how far back the stream looks when the app opens
RECENT_FINISHED_JOBS = 1000  # finished jobs shown besides every live one
SESSIONS_EVERY_S = 1.0  # tmux and heartbeats are re-read this often
RATE_WINDOW_MS = 5000  # events/s is averaged over this window
TIMELINE_LIMIT = 5000
CONTROL_AGENT = "control-room"
ANSWERS: tuple[Answer, ...] = (Answer.YES, Answer.NO)
"""What a row that waits on nothing offers (the answers of one that waits are its agent's)."""


class RegistrySource:
    """`ControlRoomSource` over `Registry`, `SessionStore`, heartbeats and tmux.

    `poll(0)` is a snapshot that starts at the bus's latest seq (history is
    never replayed: with a million messages the app still opens at once);
    `poll(n)` reads at most BATCH messages after `n` and re-reads only the jobs
    they mention. Actions go through the `Orchestrator`, built on first use.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        tmux_socket: str | None = None,
        orchestrator: Orchestrator | None = None,
        bridge: IngestBridge | None = None,
        clock_ms: Callable[[], int] = now_ms,
        receive_hooks: bool = False,
    ) -> None:
        self.settings = settings
        self.tmux_socket = tmux_socket
        self.bridge = bridge
        self.clock_ms = clock_ms
        self._orchestrator = orchestrator
        self._registry: Registry | None = None
        self._sessions: SessionStore | None = None
        self._reads: ControlRoomReads | None = None
        self._budgets: BudgetStore | None = None
        self._lock = threading.Lock()
        self._event_times: deque[int] = deque(maxlen=20_000)
        self._counts: dict[str, int] = {}
        self._sessions_at = 0.0
        self._tmux_notice_given = False
        self._broker_state: BrokerState = "none"
        self._in_review = 0
        self._agent_answers = AgentAnswers(settings.state_dir)
        self._seen_in_review: set[str] | None = None  # in review at the last reconcile
        self._interrupted = 0
        self._interrupted_told = 0  # how many interrupted jobs the last notice named
        self._room_lock = ControlRoomLock(settings.state_dir)
        self.hooks = (
            ReceiverSlot(settings.state_dir, log_report(settings.state_dir))
            if receive_hooks
            else None
        )
        """Agents' hooks received here while no other process (the supervisor) does."""
        self.review_service = ReviewService(self._review_flow)

    # -- lazily opened parts --------------------------------------------------
    @property
    def registry(self) -> Registry:
        with self._lock:
            if self._registry is None:
                self._registry = Registry.open(
                    self.settings.state_dir, busy_timeout_ms=self.settings.busy_timeout_ms
                )
                self._sessions = SessionStore(self._registry.bus)
            return self._registry

    @property
    def sessions(self) -> SessionStore:
        self.registry  # noqa: B018 - opens both
        assert self._sessions is not None
        return self._sessions

    @property
    def orchestrator(self) -> Orchestrator:
        with self._lock:
            if self._orchestrator is None:
                self._orchestrator = Orchestrator(self.settings, tmux_socket=self.tmux_socket)
            return self._orchestrator

    def _review_flow(self) -> ReviewFlow:
        """The review flow over this registry (made in a worker, on first use)."""
        return ReviewFlow(
            self.settings, registry=self.registry, make_orchestrator=lambda: self.orchestrator
        )

    @property
    def reads(self) -> ControlRoomReads:
        """The registry's read model for the control room (registry/control_room.py)."""
        if self._reads is None:
            self._reads = ControlRoomReads(self.registry.db)
        return self._reads

    @property
    def budgets(self) -> BudgetStore:
        """Jobs' budgets and spend (registry/budget.py), for their rows and pages."""
        if self._budgets is None:
            self._budgets = BudgetStore(self.registry.bus)
        return self._budgets

    # -- polling --------------------------------------------------------------
    def poll(self, after_seq: int) -> Delta:
        notices: list[str] = []
        removed: tuple[str, ...] = ()
        if after_seq <= 0:
            cursor = self.registry.bus.latest_seq()
            jobs = self._initial_jobs()
            self._sessions_at = 0.0  # sessions (a tmux call) come with the next poll
            events = self._recent_events(cursor)
            changed_counts = True
        else:
            messages = self.registry.bus.read_after(after_seq, limit=BATCH)
            cursor = messages[-1].seq if messages else after_seq
            job_ids = {m.correlation_id for m in messages if m.type.startswith(("job.", "review."))}
            found = self.reads.jobs_by_id(sorted(i for i in job_ids if i))
            jobs = list(found.values())
            events = [row for m in messages if (row := event_row(m)) is not None]
            changed_counts = bool(job_ids) or any(m.type.startswith("review.") for m in messages)
            removed = tuple(sorted(i for i in job_ids if i and i not in found))
            session_news = any(m.type.startswith("session.") for m in messages)
            if session_news:
                self._sessions_at = 0.0
        for message_ts in (e.ts for e in events if e.event != "status"):
            self._event_times.append(int(message_ts.timestamp() * 1000))
        if changed_counts:
            self._counts = self.reads.status_counts()
            self._in_review = self.review_service.in_review()
            self._interrupted = self._count_interrupted(notices)
        sessions = None
        if time.monotonic() - self._sessions_at >= SESSIONS_EVERY_S:
            self._sessions_at = time.monotonic()
            sessions = tuple(self._session_rows(notices))
        broker = self._probe_broker(notices)
        reasons = self.registry.status_reasons(
            job.job_id for job in jobs if job.status in FINAL_JOB_STATUSES
        )
        reviewing = self.review_service.states([job.job_id for job in jobs])
        budgets = self.budgets.of_jobs(job.job_id for job in jobs)
        rows = [
            job_row(
                job,
                reasons.get(job.job_id),
                self._agent_answers.of(job.agent) if job.waiting else ANSWERS,
                reviewing.get(job.job_id),
                budgets[job.job_id].line() if job.job_id in budgets else None,
            )
            for job in jobs
        ]
        if after_seq <= 0:
            rows.sort(key=row_order)  # already in table order: see _initial_jobs
        return Delta(
            cursor=cursor,
            jobs=tuple(rows),
            removed_job_ids=removed,
            sessions=sessions,
            events=tuple(events),
            snapshot=Snapshot(
                counts=dict(self._counts),
                events_per_s=self._rate(),
                broker_state=broker,
                in_review=self._in_review,
                interrupted=self._interrupted,
            ),
            notices=tuple(notices),
        )

    def _initial_jobs(self) -> list[Job]:
        """Every live job and the newest finished ones, in one read.

        All of them come in the first delta, already in table order (`poll`
        sorts their rows by `row_order`). The table
        only appends rows, so finished jobs sent later (older than every row
        shown) forced a re-sort and a full redraw: sent in chunks, a ~200 ms
        stall per chunk while live events arrived; sent in one later batch, the
        first frame came later still (measured: bench/tui.py, first paint 3.2x
        the minimal app instead of 2x). A thousand rows cost the first apply
        ~35 ms: cells are measured from their plain text and only the visible
        rows are rendered."""
        return self.reads.live_and_recent_jobs(RECENT_FINISHED_JOBS)

    def _recent_events(self, cursor: int) -> list[EventRow]:
        start = max(0, cursor - INITIAL_EVENTS_WINDOW)
        messages = self.registry.bus.read_after(start, limit=INITIAL_EVENTS_WINDOW)
        rows = [row for m in messages if (row := event_row(m)) is not None]
        return rows[-100:]

    def _count_interrupted(self, notices: list[str]) -> int:
        """Running jobs whose pane is gone; a notice when there are more than last said
        (after a reboot, the first thing to know on opening the control room)."""
        count = self.reads.interrupted_count()
        if count > self._interrupted_told:
            notices.append(
                f"{counted(count, 'job')} interrupted (agent pane gone: a reboot, or tmux "
                "killed): R resumes them all"
            )
        self._interrupted_told = count
        return count

    def _rate(self) -> float:
        horizon = self.clock_ms() - RATE_WINDOW_MS
        while self._event_times and self._event_times[0] < horizon:
            self._event_times.popleft()
        return len(self._event_times) / (RATE_WINDOW_MS / 1000)

    def _probe_broker(self, notices: list[str]) -> BrokerState:
        """The ingest bridge's connection, with one notice each time it is lost."""
        if self.bridge is None:
            return "none"
        state: BrokerState = self.bridge.state
        error = self.bridge.last_error
        if state == "reconnecting" and error and self._broker_state != "reconnecting":
            notices.append(f"MQTT broker unreachable ({error}); the SQLite bus still works")
            self._broker_state = state
        elif state == "standby" and self._broker_state != "standby":
            notices.append(
                "Another control room on this state dir ingests MQTT events; "
                "this one takes over when it closes"
            )
            self._broker_state = state
        elif state != "reconnecting" or error:
            self._broker_state = state
        return state

    def run_bridge(self, stop: threading.Event) -> None:
        """Carry MQTT events into the registry until `stop` (no broker: return at once)."""
        if self.bridge is not None:
            self.bridge.run(stop)

    # -- sessions ---------------------------------------------------------------
    def _session_rows(self, notices: list[str]) -> list[SessionRow]:
        records = self.sessions.list()
        beats = {beat.agent_id: beat for beat in heartbeats.read_all(self.registry.db.conn)}
        running = self.reads.running_jobs_by_session()  # label -> its running jobs, oldest first
        alive = self._tmux_sessions(notices)
        at_ms = self.clock_ms()
        rows = []
        for record in records:
            job_ids = running.get(record.label, [])
            job_id = job_ids[-1] if job_ids else None  # the newest, as before
            # reconcile beats on behalf of each job's agent; a self-reporting agent may
            # beat under its session's name instead
            beat = (
                (beats.get(job_id) if job_id else None)
                or beats.get(record.label)
                or beats.get(record.tmux_session)
            )
            # No running job and no beat of its own: nothing is expected to beat.
            liveness: Liveness = "unknown" if job_id else "idle"
            age_s: float | None = None
            if beat is not None:  # a fresh beat written for a dead agent still says dead
                fresh = cast(Liveness, str(beat.liveness(at_ms)))
                liveness = "DEAD" if beat.status == "dead" else fresh
                age_s = max(0.0, (at_ms - beat.ts_ms) / 1000)
            rows.append(
                SessionRow(
                    label=record.label,
                    state=SessionStatus(record.state),
                    tmux_alive=alive is not None and self._is_alive(record, alive),
                    liveness=liveness,
                    heartbeat_age_s=age_s,
                    current_job=job_id or (beat.current_task if beat is not None else None),
                    jobs=tuple(job_ids),
                )
            )
        return rows

    @staticmethod
    def _is_alive(record: Session, alive: set[str]) -> bool:
        return record.label in alive or record.tmux_session in alive

    def _tmux_sessions(self, notices: list[str]) -> set[str] | None:
        """Labels and names of live tmux sessions; None (with one notice) without tmux."""
        try:
            infos = TmuxDriver(self.tmux_socket).list_sessions()
        except TmuxError as error:
            if not self._tmux_notice_given:
                self._tmux_notice_given = True
                notices.append(f"tmux unavailable, sessions show as gone: {error}")
            return None
        self._tmux_notice_given = False
        return {info.label for info in infos} | {info.session_name for info in infos}

    # -- detail -----------------------------------------------------------------
    def job_detail(self, job_id: str) -> JobDetail:
        registry = self.registry
        job = registry.get(job_id)
        why = registry.why(job_id)
        reviews = self.review_service.flow.reviews
        review = reviews.find(job_id)
        if review is not None:
            why += f"\nreview: {reviews.why(job_id)}"
        spent = budget_why(registry, job_id)
        if spent is not None:
            why += f"\n{spent}"
        timeline = [
            timeline_row(job_id, entry) for entry in self.reads.job_timeline(job_id, TIMELINE_LIMIT)
        ]
        return JobDetail(
            record=job.to_dict(),
            why_text=why,
            timeline=timeline,
            missing_seqs=expand_missing(job.missing_seqs),
            pane_log_path=self.pane_log_path(job_id),
            worktree=review.worktree if review is not None else None,
            branch=review.branch if review is not None else None,
        )

    def pane_log_path(self, job_id: str) -> Path:
        """Where the tmux layer pipes the job's pane (it may not exist yet)."""
        return self.settings.state_dir / "logs" / job_id / "pane.log"

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> str | None:
        """Mark the control room's start on the bus (History shows restarts); a notice
        when another control room already has this state dir open (both work)."""
        holder = self._room_lock.acquire()
        if self.hooks is not None:
            self.hooks.stand_by()
        self.registry.bus.publish(
            Outgoing(
                type=MessageType.CONTROL_STARTED,
                from_agent=CONTROL_AGENT,
                payload={"pid": os.getpid(), "state_dir": str(self.settings.state_dir)},
            )
        )
        if holder is None:
            return None
        who = f"pid {holder}" if holder else "its pid not known yet"
        return f"Another control room ({who}) has this state dir open: both work, on one registry"

    def close(self) -> None:
        """The app is closing: another control room may now be the first, and the
        supervisor (or another control room) the hook receiver."""
        if self.hooks is not None:
            self.hooks.close()
        self._room_lock.release()

    def reconcile(self) -> str | None:
        """Let the orchestrator catch dead panes, expired leases and vanished sessions;
        a line for the user only when the pass changed something."""
        report = self.orchestrator.reconcile()
        followed = self.review_service.flow.follow_jobs()
        moved = [r.job_id for r in followed if r.state == ReviewState.IN_REVIEW]
        in_review = self.review_service.ready_for_review()
        # whichever process brought them up (this pass, the supervisor, a command)
        seen = self._seen_in_review if self._seen_in_review is not None else set(in_review)
        ready = [job_id for job_id in in_review if job_id not in seen or job_id in moved]
        self._seen_in_review = set(in_review)
        lines = [report.summary()] if report.acted else []
        if ready:
            lines.append(f"Ready for review (v): {', '.join(ready)}")
        return "\n".join(lines) or None

    def start_demo(self, agents: int) -> list[str]:
        return [job.job_id for job in start_demo(self.orchestrator, agents)]

    def stop_demo(self, job_ids: list[str]) -> int:
        return stop_demo(self.orchestrator, job_ids)

    def resume_interrupted(self) -> Resumed:
        failed: dict[str, str] = {}
        resumed = self.orchestrator.resume_interrupted(failed=failed)
        return Resumed(tuple(job.job_id for job in resumed), failed)

    # -- actions ----------------------------------------------------------------
    def cancel(self, job_id: str) -> None:
        self.orchestrator.cancel(job_id, by="the control room")

    def resume(self, job_id: str) -> None:
        self.orchestrator.resume_job(job_id)

    def stop_session(self, label: str, mode: StopMode) -> None:
        self.orchestrator.stop_session(label, mode)

    def answer(self, job_id: str, reply: Answer) -> AnswerOutcome:
        """`orchestrate answer`'s own path (app/approvals/), confirmed only by the
        registry's word: the job no longer waits on that question."""
        try:
            answered = self.orchestrator.answer(
                job_id, reply, by="control room", until_recorded=True
            )
        except AnswerNotReceived:
            return AnswerOutcome(False, Activity.WAITING)
        return AnswerOutcome(answered.confirmed, answered.now, answered.how)

    def claim_signal(self, signal: Signal) -> bool:
        return claim(self.registry.bus, signal, by=CONTROL_AGENT)

    def submit(self, prompt: str, agent: str, agent_session: str) -> str:
        """A new job in the control room's directory; with ORCHESTRATE_WORKTREE=auto in a
        git repository, on its own branch and work tree (as `submit` does)."""
        plan = default_worktree(self.settings, Path.cwd())
        return self.orchestrator.submit(prompt, agent, agent_session, worktree=plan).job_id

    def installed_agents(self) -> list[str]:
        kinds = [a.kind for a in built_in_adapters() if a.kind != "demo" and which(a.executable)]
        return [*kinds, "demo"]

    def attach_command(self, job_id: str) -> AttachCommand:
        return self.orchestrator.attach_command(job_id)

    def send_input(self, job_id: str, text: str) -> int:
        by = f"{getpass.getuser()} (control room)"
        return self.orchestrator.send_input(job_id, text, by=by)

    def open_control_room_split(self, job_id: str) -> str:
        self.orchestrator.control_room_split(job_id)
        return self.orchestrator.driver.attach_hint(CONTROL_ROOM_LABEL)


def open_source(settings: Settings, *, tmux_socket: str | None = None) -> RegistrySource:
    """The source over the registry in `settings.state_dir`, with the MQTT ingest bridge
    of the `MQTT_*` environment (none without a broker), receiving agents' hooks
    whenever no other process does (app/hookrx/slot.py).

    Opening touches nothing: the database is opened by the first poll, in a
    worker, so a broken one becomes a notice in the running app.
    """
    from registry.ingest import bridge_from_env

    bridge = bridge_from_env(settings.state_dir, busy_timeout_ms=settings.busy_timeout_ms)
    return RegistrySource(settings, tmux_socket=tmux_socket, bridge=bridge, receive_hooks=True)
