"""The control room's real source: rows read from the registry and the SQLite bus.

Every method blocks (SQLite, tmux, the orchestrator) and is only ever called
from the app's thread workers. The registry is opened lazily on first use, so
a corrupt, locked or newer-schema database becomes a notice in the running app
instead of a crash before it starts.
"""

from __future__ import annotations

import getpass
import json
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from shutil import which
from typing import TYPE_CHECKING, Any, cast

# libtmux (under both) reads sys.stdout.encoding when first imported, which fails
# once Textual has replaced stdout: import it here, before any app runs.
from app.agents import adapter_for, built_in_adapters
from app.agents.base import ANSWERS as ANSWER_ORDER
from app.control import Orchestrator
from app.control.demo_fleet import start_demo, stop_demo
from app.control.errors import NotWaitingForPermission
from app.review.flow import ReviewFlow
from app.review.service import ReviewService
from app.review.worktree import default_worktree
from app.tmux.attach import AttachCommand
from app.tmux.driver import CONTROL_ROOM_LABEL, TmuxDriver
from app.tmux.errors import AnswerNotReceived, TmuxError
from app.tui.room_lock import ControlRoomLock
from app.tui.source import (
    AnswerOutcome,
    AnswerReply,
    BrokerState,
    Delta,
    EventRow,
    JobDetail,
    JobRow,
    JobStatus,
    Liveness,
    Resumed,
    SessionRow,
    SessionState,
    Snapshot,
    StopMode,
    row_order,
)
from bus import heartbeats
from bus.db import now_ms, translate
from bus.messages import Message, Outgoing
from registry.activity import Observation, describe_source, interruption, observation_of
from registry.errors import RegistryError
from registry.jobs import Registry
from registry.jobstore import FINAL_STATUSES, moved_by_agent
from registry.needs_you import Signal, claim, watched
from registry.records import Job, job_from_row
from registry.sessions import Session, SessionStore
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
MISSING_SEQS_SHOWN = 1000
CONTROL_AGENT = "control-room"
ANSWERS: tuple[AnswerReply, ...] = ("yes", "no")
MOVED_ON_SEC = 6.0
"""After the answer went in: how long the registry has to show the agent moving on
(the supervisor or the control room's reconcile records it within a pass or two)."""

# What a work-tree job's row says while its review waits for a person.
REVIEW_PROGRESS = {
    "IN_REVIEW": "in review: press v",
    "APPROVED": "approved, not merged yet: press v",
}


def _ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _parse_iso(stamp: str | None, fallback_ms: int) -> datetime:
    try:
        return datetime.fromisoformat(stamp) if stamp else _ts(fallback_ms)
    except ValueError:
        return _ts(fallback_ms)


def job_row(
    job: Job,
    status_reason: str | None = None,
    answers: tuple[AnswerReply, ...] = ("yes", "no"),
    review: str | None = None,
) -> JobRow:
    """The jobs-table line for one registry record. `status_reason`: why a final
    job got its status when no event of its agent says so (a cancel, the control
    room failing a job whose pane exited); the row then shows that instead of an
    event from before (a cancelled job still read "permission_required").
    `review`: a work-tree job's review state; one waiting for a person says so."""
    last_event, detail = job.last_event, job.last_detail or ""
    if status_reason is not None and job.status in FINAL_STATUSES:
        last_event, detail = job.status, status_reason
    if review in REVIEW_PROGRESS:
        detail = REVIEW_PROGRESS[review]
    interrupted = interruption(job.activity, job.activity_data) if job.status == "running" else None
    if interrupted is not None:  # why it stopped, not its last progress
        detail = interrupted
    return JobRow(
        job_id=job.job_id,
        status=cast(JobStatus, job.status),
        agent=job.agent,
        agent_session=job.agent_session,
        created_at=_ts(job.created_at_ms),
        updated_at=_parse_iso(job.updated_at, job.created_at_ms),
        last_event=last_event,
        progress_detail=detail,
        missing_events=job.missing_count,
        waiting_permission=job.waiting,
        activity=job.activity if job.status == "running" else None,
        question=_question(job),
        state_since=_ts(seen.since_ms) if (seen := watched(job)).mark else None,
        asked=_asked(job),
        answers=answers,
    )


def _question(job: Job) -> str:
    """What a waiting job waits on, in a few words (empty for any other job)."""
    if not job.waiting:
        return ""
    seen = observation_of(job.activity, job.activity_source, job.activity_data)
    return seen.summary() if seen is not None else job.last_detail or ""


def _asked(job: Job) -> tuple[tuple[str, str], ...]:
    """What a waiting job asks, for the inbox: the question, tool, command, who saw it."""
    if not job.waiting:
        return ()
    seen = observation_of(job.activity, job.activity_source, job.activity_data)
    published = "its agent's own permission_required event"
    if seen is None:
        return (("question", job.last_detail or ""), ("seen by", published))
    pairs = [("question", seen.question), ("tool", seen.tool), ("command", seen.command)]
    by = published if seen.source.startswith("publish:") else describe_source(seen.source)
    pairs.append(("seen by", by))
    return tuple((label, text) for label, text in pairs if text)


def event_detail(payload: dict[str, Any]) -> str:
    """An event's detail as the stream and the timeline show it; a wait says what it
    waits on ("waiting: Bash `npm test`"), its detail alone reads "waiting"."""
    detail = str(payload.get("detail", ""))
    data = payload.get("data")
    if payload.get("event") != "activity" or not isinstance(data, dict):
        return detail
    if data.get("activity") != "waiting":
        return detail
    try:
        about = Observation.from_data(data).summary()
    except RegistryError:  # not an activity it knows: its detail as written
        return detail
    return f"{detail}: {about}" if about else detail


def event_row(message: Message) -> EventRow | None:
    """A stream line for a `job.event` message, for a status change nobody's event
    explains (a cancel, a resume, an expired lease), or for a review's move; None
    for the rest."""
    payload = message.payload if isinstance(message.payload, dict) else {}
    job_id = str(message.correlation_id or payload.get("job_id", ""))
    if message.type == "job.event":
        return EventRow(
            seq=int(payload.get("seq", 0)),
            ts=_ts(message.ts_ms),
            job_id=job_id,
            event=str(payload.get("event", "?")),
            detail=event_detail(payload),
        )
    reason = str(payload.get("reason", ""))
    if message.type == "review.status" and payload.get("to"):  # a work-tree job's review moved
        detail = f"{payload.get('from') or 'new'} → {payload.get('to')}: {reason}"
        return EventRow(seq=0, ts=_ts(message.ts_ms), job_id=job_id, event="review", detail=detail)
    if message.type == "job.status" and not moved_by_agent(reason):
        detail = f"{payload.get('from')} → {payload.get('to')}: {reason}"
        return EventRow(seq=0, ts=_ts(message.ts_ms), job_id=job_id, event="status", detail=detail)
    return None


def expand_missing(ranges: Sequence[Sequence[int]], limit: int = MISSING_SEQS_SHOWN) -> list[int]:
    """[[3, 5], [9, 9]] -> [3, 4, 5, 9], at most `limit` of them."""
    seqs: list[int] = []
    for first, last in ranges:
        seqs.extend(range(first, min(last, first + limit - len(seqs) - 1) + 1))
        if len(seqs) >= limit:
            break
    return seqs


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
    ) -> None:
        self.settings = settings
        self.tmux_socket = tmux_socket
        self.bridge = bridge
        self.clock_ms = clock_ms
        self._orchestrator = orchestrator
        self._registry: Registry | None = None
        self._sessions: SessionStore | None = None
        self._lock = threading.Lock()
        self._event_times: deque[int] = deque(maxlen=20_000)
        self._counts: dict[str, int] = {}
        self._sessions_at = 0.0
        self._tmux_notice_given = False
        self._broker_state: BrokerState = "none"
        self._in_review = 0
        self._agent_answers: dict[str, tuple[AnswerReply, ...]] = {}
        self._seen_in_review: set[str] | None = None  # in review at the last reconcile
        self._interrupted = 0
        self._interrupted_told = 0  # how many interrupted jobs the last notice named
        self._room_lock = ControlRoomLock(settings.state_dir)
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

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """A read on this thread's connection (errors become bus errors)."""
        db = self.registry.db
        try:
            return list(db.conn.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error as error:
            raise translate(error, db.path) from error

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
            found = self._jobs_by_id(sorted(i for i in job_ids if i))
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
            self._counts = self._count_jobs()
            self._in_review = self.review_service.in_review()
            self._interrupted = self._count_interrupted(notices)
        sessions = None
        if time.monotonic() - self._sessions_at >= SESSIONS_EVERY_S:
            self._sessions_at = time.monotonic()
            sessions = tuple(self._session_rows(notices))
        broker = self._probe_broker(notices)
        reasons = self.registry.status_reasons(
            job.job_id for job in jobs if job.status in FINAL_STATUSES
        )
        reviewing = self.review_service.states([job.job_id for job in jobs])
        rows = [
            job_row(
                job,
                reasons.get(job.job_id),
                self._answers(job) if job.waiting else ANSWERS,
                reviewing.get(job.job_id),
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
        live = self._rows("SELECT * FROM jobs WHERE status IN ('pending', 'running')")
        finished = self._rows(
            "SELECT * FROM jobs WHERE status IN ('completed', 'error', 'cancelled') "
            "ORDER BY created_at_ms DESC, job_id DESC LIMIT ?",
            (RECENT_FINISHED_JOBS,),
        )
        return [job_from_row(row) for row in (*live, *finished)]

    def _jobs_by_id(self, job_ids: list[str]) -> dict[str, Job]:
        found: dict[str, Job] = {}
        for start in range(0, len(job_ids), 500):
            chunk = job_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._rows(f"SELECT * FROM jobs WHERE job_id IN ({marks})", chunk):
                found[row["job_id"]] = job_from_row(row)
        return found

    def _recent_events(self, cursor: int) -> list[EventRow]:
        start = max(0, cursor - INITIAL_EVENTS_WINDOW)
        messages = self.registry.bus.read_after(start, limit=INITIAL_EVENTS_WINDOW)
        rows = [row for m in messages if (row := event_row(m)) is not None]
        return rows[-100:]

    def _count_jobs(self) -> dict[str, int]:
        rows = self._rows("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        return {str(row[0]): int(row[1]) for row in rows}

    def _count_interrupted(self, notices: list[str]) -> int:
        """Running jobs whose pane is gone; a notice when there are more than last said
        (after a reboot, the first thing to know on opening the control room)."""
        rows = self._rows(
            "SELECT COUNT(*) FROM jobs WHERE status = 'running' AND activity = 'interrupted'"
        )
        count = int(rows[0][0]) if rows else 0
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
        running: dict[str, list[str]] = {}  # session label -> its running jobs, oldest first
        for row in self._rows(
            "SELECT agent_session, job_id FROM jobs WHERE status = 'running' "
            "ORDER BY created_at_ms, job_id"
        ):
            running.setdefault(str(row[0]), []).append(str(row[1]))
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
                    state=cast(SessionState, record.state),
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
        rows = self._rows(
            "SELECT seq, ts_ms, type, payload FROM messages WHERE correlation_id = ? "
            "AND type = 'job.event' ORDER BY seq DESC LIMIT ?",
            (job_id, TIMELINE_LIMIT),
        )
        timeline = []
        for row in reversed(rows):
            try:
                payload = json.loads(row["payload"]) if row["payload"] else {}
            except ValueError:
                payload = {}
            timeline.append(
                EventRow(
                    seq=int(payload.get("seq", 0)),
                    ts=_ts(int(row["ts_ms"])),
                    job_id=job_id,
                    event=str(payload.get("event", "?")),
                    detail=event_detail(payload),
                )
            )
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
        self.registry.bus.publish(
            Outgoing(
                type="control.started",
                from_agent=CONTROL_AGENT,
                payload={"pid": os.getpid(), "state_dir": str(self.settings.state_dir)},
            )
        )
        if holder is None:
            return None
        who = f"pid {holder}" if holder else "its pid not known yet"
        return f"Another control room ({who}) has this state dir open: both work, on one registry"

    def close(self) -> None:
        """The app is closing: another control room may now be the first."""
        self._room_lock.release()

    def reconcile(self) -> str | None:
        """Let the orchestrator catch dead panes, expired leases and vanished sessions;
        a line for the user only when the pass changed something."""
        report = self.orchestrator.reconcile()
        moved = [r.job_id for r in self.review_service.flow.follow_jobs() if r.state == "IN_REVIEW"]
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

    def _answers(self, job: Job) -> tuple[AnswerReply, ...]:
        """The answers the job's agent takes (its adapter's keys; read once per kind)."""
        found = self._agent_answers.get(job.agent)
        if found is None:
            keys = adapter_for(job.agent, self.settings.state_dir).keys
            found = tuple(reply for reply in ANSWER_ORDER if keys.answer(reply))
            self._agent_answers[job.agent] = found
        return found

    def answer(self, job_id: str, reply: AnswerReply) -> AnswerOutcome:
        """`orchestrate answer`'s own code, then the registry's word: confirmed once the
        job no longer waits on that question (its activity changed, or it ended)."""
        before = self.registry.get(job_id)
        if not before.waiting:
            doing = before.activity or before.last_event or before.status
            raise NotWaitingForPermission(f"job {job_id} is not waiting for an answer ({doing})")
        try:
            answered = self.orchestrator.answer(job_id, reply, by="control room")
        except AnswerNotReceived:
            return AnswerOutcome(False, "waiting")
        deadline = time.monotonic() + MOVED_ON_SEC
        while True:
            job = self.registry.get(job_id)
            moved = not job.waiting or job.activity_at_ms != before.activity_at_ms
            if moved or time.monotonic() >= deadline:
                now = (job.activity or job.status) if job.status == "running" else job.status
                return AnswerOutcome(moved, now, answered.how)
            time.sleep(0.05)

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
    of the `MQTT_*` environment (none without a broker).

    Opening touches nothing: the database is opened by the first poll, in a
    worker, so a broken one becomes a notice in the running app.
    """
    from registry.ingest import bridge_from_env

    bridge = bridge_from_env(settings.state_dir, busy_timeout_ms=settings.busy_timeout_ms)
    return RegistrySource(settings, tmux_socket=tmux_socket, bridge=bridge)
