"""Judging a running agent from outside its pane: process, status sequence, screen.

Hooks report from inside the agent and are recorded by `orchestrate hook` as they
fire. Everything else is read here, once per supervision pass, from what tmux
and the pane log show, best source first:

* the process: a dead pane ends the job (exit 0 completes it, anything else is
  an error with the status); a vanished pane (tmux killed, a reboot) leaves the
  job interrupted, to be resumed;
* the agent's own status sequence (Codex's ``OSC 7501``) in the log's new bytes;
* the adapter's screen rules over the pane's text. For an agent that reports
  by hooks or a status sequence they are a slower cross-check: a screen that
  disagrees must hold for ``SCREEN_CONFIRM_SEC`` before it wins (it catches what
  hooks never say, such as a trust dialog or a rejected tool). For an agent
  with no other signal, a screen that has settled decides at once;
* output itself: a working agent whose screen has not moved for the job's idle
  timeout is stalled (model servers are retried silently, some for ever);
* nothing at all: a screen that changed to one no rule explains, and stayed so
  for ``UNKNOWN_AFTER_SEC`` with no structured signal since, makes the activity
  ``unknown``, with the pane's last lines as its evidence. An agent update that
  draws a new dialog or screen is then shown as what it is, not as the stale
  ``working`` or ``waiting`` of before.

Screen rules may be limited to agent versions (app/agents/screen.py); the version
is asked once per job, and only when one of its rules names versions.

An observation that repeats the job's activity is dropped by the registry.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from app.agents import adapter_for
from app.agents.base import AgentAdapter
from app.agents.osc import StatusScanner
from app.agents.screen import match_screen, visible_text
from app.agents.versions import VERSION_CACHE, installed_version
from app.tmux.models import PaneStatus
from registry.activity import APP_SERVER, STRUCTURED_SOURCES, Observation, observation_of
from registry.records import Job
from registry.vocabulary import Activity, JobStatus

SCREEN_CONFIRM_SEC = 2.0
RECAPTURE_SEC = 5.0
"""A quiet pane is read again this often, to catch what changed without output."""
FOOTER_LINES = 6
"""Bottom lines left out when judging progress: spinners and timers live there."""
QUIET_IDLE_SEC = 30.0
"""A rule-less agent whose output stopped this long is idle."""
MAX_LOG_READ = 1024 * 1024
START_GRACE_SEC = 10.0
UNKNOWN_AFTER_SEC = 10.0
"""How long a changed screen may stay unexplained before the activity is ``unknown``.
Two recaptures of a quiet pane (RECAPTURE_SEC), so that it was read unexplained at
least twice, and longer than the slowest structured signal measured after a screen
change (Claude's permission_prompt notification, 6 s after its dialog): a screen
that is only waiting for its hook to speak is not called unknown."""
UNKNOWN_MARGIN_SEC = SCREEN_CONFIRM_SEC
"""For an agent with hooks or a status sequence, the screen must have changed this
long after the structured source last spoke: its own redraw right after a hook (the
idle screen drawn after Stop) is what the hook already explained."""
UNKNOWN_LINES = 3
"""The pane's last lines an ``unknown`` activity carries as its evidence."""
UNEXPLAINED = "process:unexplained screen"
"""The source of an ``unknown``: what was seen of the pane, not a rule."""

ScreenReader = Callable[[str], Sequence[str]]


@dataclass(frozen=True)
class Verdict:
    """What one look at a job found: activity sightings, maybe its end, its heartbeat."""

    observations: tuple[Observation, ...] = ()
    finish: tuple[str, str] | None = None
    """(status, reason) when the job is over: completed or error."""
    heartbeat: str = "working"
    idle_done: bool = False
    """The finish is the agent's idle after its task (--done-when idle), not its exit."""


class StatusStreams:
    """Each job's status sequences, read from its pane log once: by a full look or by
    the quick reader between them, whichever comes first (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scanners: dict[str, tuple[StatusScanner, int]] = {}

    def read(self, job_id: str, log_path: Path, size: int) -> tuple[Observation, ...]:
        """The newest status in the bytes of ``log_path`` not read yet (up to ``size``),
        after the turn's work it ended, if that came in the same read (``passed``)."""
        with self._lock:
            scanner, offset = self._scanners.get(job_id, (StatusScanner(), 0))
            start = 0 if size < offset else offset  # a smaller log was replaced
            start = max(start, size - MAX_LOG_READ)
            seen: list[Observation] = []
            if size > start:
                with log_path.open("rb") as handle:
                    handle.seek(start)
                    seen = scanner.feed(handle.read(size - start))
            self._scanners[job_id] = (scanner, size)
            return passed(seen)

    def forget_all_but(self, job_ids: set[str]) -> None:
        with self._lock:
            for job_id in set(self._scanners) - job_ids:
                del self._scanners[job_id]


def passed(seen: Sequence[Observation]) -> tuple[Observation, ...]:
    """The newest state is the one that counts; but a turn that began and ended between
    two reads (working, then done) must still be seen to have worked: without that, a
    job done when idle never completed (its agent had not worked since it started)."""
    if not seen:
        return ()
    newest = seen[-1]
    if newest.activity != Activity.WORKING:
        worked = next((s for s in reversed(seen[:-1]) if s.activity == Activity.WORKING), None)
        if worked is not None:
            return (worked, newest)
    return (newest,)


@dataclass
class Watch:
    """What the observer remembers of one job between passes."""

    adapter: AgentAdapter
    log_size: int = -1
    output_at: float = 0.0
    screen_at: float = 0.0
    body_hash: str = ""
    body_changed_at: float = 0.0
    candidate: Observation | None = None
    candidate_since: float = 0.0
    seen_pane: bool = False
    app_server: bool = False
    """Codex's own app-server reports for this job: its status sequences, read later
    from the pane log, are redundant and may be stale (they once undid its wait)."""
    seen_in_attempt: float = 0.0  # the start (claim) of the attempt whose pane was seen
    version: Version | None = None
    """The agent's version, for the rules limited to some (None: not known)."""
    explained: bool = True
    """The last screen read matched a rule."""
    ever_explained: bool = False
    """A rule has matched one of its screens: it got past its start (whose banner and
    loading screens no rule describes, and may take 20 s under load: Aider's)."""
    last_lines: str = ""
    """The pane's last lines at that read (the evidence of an ``unknown``)."""


def pane_end_reason(status: PaneStatus | None, *, server_gone: bool = False) -> str:
    """Why a job's agent pane is no longer running, as recorded on the job."""
    if server_gone:
        return "its tmux server is gone (a reboot, or tmux kill-server)"
    if status is None or not status.exists:
        return "agent pane is gone (killed, or its tmux session was closed)"
    if status.dead_status is not None:
        return f"agent pane exited with status {status.dead_status}"
    if status.dead_signal is not None:
        return f"agent pane was killed by signal {status.dead_signal}"
    return "agent pane exited"


class AgentObserver:
    """Looks at running jobs' panes; one per supervisor (it keeps per-job memory)."""

    def __init__(
        self,
        read_screen: ScreenReader,
        *,
        state_dir: Path | None = None,
        idle_grace_sec: float = 30.0,
    ) -> None:
        self.read_screen = read_screen
        self.state_dir = state_dir
        self.idle_grace_sec = idle_grace_sec
        self.watches: dict[str, Watch] = {}
        self.statuses = StatusStreams()

    def forget_all_but(self, job_ids: set[str]) -> None:
        """Drop the memory of jobs no longer running."""
        for job_id in set(self.watches) - job_ids:
            del self.watches[job_id]
        self.statuses.forget_all_but(job_ids)

    def look(
        self,
        job: Job,
        pane: PaneStatus | None,
        log_path: Path,
        now: float,
        *,
        started_at: float,
        worked: Callable[[], bool],
        server_gone: bool = False,
    ) -> Verdict:
        """One judgement of ``job`` from its pane's status, log and screen
        (``server_gone``: no tmux server runs at all, so no pane can)."""
        watch = self.watches.get(job.job_id)
        if watch is None:
            watch = self._watch(job)
        if pane is None or not pane.exists:
            # its pane seen, or its header printed, in this attempt: a resumed job's
            # log holds the last attempt's output while its new pane is starting
            seen_now = watch.seen_pane and watch.seen_in_attempt == started_at
            started = seen_now or _has_output(log_path, since=started_at)
            if not started and now - started_at < START_GRACE_SEC:
                return Verdict(heartbeat="working")  # its pane may be starting right now
            why = pane_end_reason(pane, server_gone=server_gone)
            gone = Observation(Activity.INTERRUPTED, "process:pane gone", question=why)
            return Verdict((gone,), heartbeat="dead")
        watch.seen_pane, watch.seen_in_attempt = True, started_at
        if pane.dead:
            status = pane.dead_status
            exited = Observation(Activity.EXITED, "process", exit_status=status)
            ended = (JobStatus.COMPLETED, "agent exited with status 0") if status == 0 else None
            return Verdict(
                (exited,), ended or (JobStatus.ERROR, pane_end_reason(pane)), heartbeat="dead"
            )
        found: list[Observation] = []
        current = observation_of(job.activity, job.activity_source, job.activity_data)
        grew = self._read_output(job.job_id, watch, log_path, now, found, current)
        if found:
            current = found[-1]
        seen = self._read_screen(watch, pane.pane_id, now, grew)
        if seen is not None:
            accepted = self._judge_screen(watch, seen, current, job, now, grew)
            if accepted is not None:
                found.append(accepted)
                current = accepted
        elif not watch.adapter.screen_rules or not (
            watch.adapter.has_hooks or watch.adapter.reads_osc_status
        ):
            by_output = self._by_output(watch, current, now, grew)
            if by_output is not None:
                found.append(by_output)
                current = by_output
        unknown = self._unknown(watch, current, job, now)
        if unknown is not None:
            found.append(unknown)
            current = unknown
        stalled = self._stall(watch, current, job, now)
        if stalled is not None:
            found.append(stalled)
            current = stalled
        activity = current.activity if current is not None else Activity.STARTING
        finish: tuple[str, str] | None = None
        done_when = job.done_when or watch.adapter.done_when
        if done_when == "idle" and activity == Activity.IDLE and not found:
            idle_for = now - (job.activity_at_ms or 0) / 1000
            if idle_for >= self.idle_grace_sec and worked():
                finish = (
                    JobStatus.COMPLETED,
                    f"agent finished its turn and stayed idle for {idle_for:.0f} s",
                )
        return Verdict(
            tuple(found), finish, heartbeat=_heartbeat(activity), idle_done=finish is not None
        )

    def _watch(self, job: Job) -> Watch:
        """The new memory of a job: its adapter, and its agent's version when one of
        its rules is limited to some (a --version call, cached in the state dir)."""
        watch = Watch(adapter_for(job.agent, self.state_dir))
        if any(rule.versions for rule in watch.adapter.screen_rules):
            cache = self.state_dir / VERSION_CACHE if self.state_dir is not None else None
            watch.version = installed_version(watch.adapter.executable, None, cache)
        self.watches[job.job_id] = watch
        return watch

    def look_at_output(self, job: Job, log_path: Path, now: float) -> tuple[Observation, ...]:
        """Only the agent's status sequence in its new output: cheap enough to do ten
        times a second between full looks (a stat, and a read when it grew)."""
        watch = self.watches.get(job.job_id)
        if watch is None or not watch.adapter.reads_osc_status:
            return ()
        try:
            size = log_path.stat().st_size
        except OSError:
            return ()
        current = observation_of(job.activity, job.activity_source, job.activity_data)
        found: list[Observation] = []
        outranked = self._outranked(watch, current)
        for seen in self.statuses.read(job.job_id, log_path, size):
            if not outranked and not seen.defers_to(current):
                found.append(seen)
                current = seen
        return tuple(found)

    @staticmethod
    def _outranked(watch: Watch, current: Observation | None) -> bool:
        """Whether the job's status sequences no longer count (its app-server reports)."""
        if current is not None and current.source.startswith(APP_SERVER):
            watch.app_server = True
        return watch.app_server

    # -- sources ------------------------------------------------------------

    def _read_output(
        self,
        job_id: str,
        watch: Watch,
        log_path: Path,
        now: float,
        found: list[Observation],
        current: Observation | None,
    ) -> bool:
        """Note new output; read its status sequences. True if it grew."""
        try:
            size = log_path.stat().st_size
        except OSError:
            return False
        grew = size != watch.log_size
        if grew:
            watch.output_at = now
        watch.log_size = size
        if watch.adapter.reads_osc_status:
            outranked = self._outranked(watch, current)
            for seen in self.statuses.read(job_id, log_path, size):
                if not outranked and not seen.defers_to(current):
                    found.append(seen)
                    current = seen
        return grew

    def _read_screen(
        self, watch: Watch, pane_id: str, now: float, grew: bool
    ) -> Observation | None:
        """The screen rules' view, read only when something may have changed."""
        due = grew or watch.candidate is not None or now - watch.screen_at >= RECAPTURE_SEC
        if not due:
            return None
        lines = list(self.read_screen(pane_id))
        watch.screen_at = now
        body = "\n".join(lines[:-FOOTER_LINES] if len(lines) > FOOTER_LINES else lines)
        digest = hashlib.sha256(body.encode("utf-8", "replace")).hexdigest()
        if digest != watch.body_hash:
            watch.body_hash, watch.body_changed_at = digest, now
        seen = match_screen(watch.adapter.kind, watch.adapter.screen_rules, lines, watch.version)
        watch.explained = seen is not None
        watch.ever_explained = watch.ever_explained or watch.explained
        if seen is None:
            watch.last_lines = " | ".join(visible_text(lines, UNKNOWN_LINES).splitlines())
        return seen

    def _judge_screen(
        self,
        watch: Watch,
        seen: Observation,
        current: Observation | None,
        job: Job,
        now: float,
        grew: bool,
    ) -> Observation | None:
        """The screen's observation if it should win now, else None (maybe later)."""
        if seen.defers_to(current) or (
            current is not None and seen.same_as(current.activity, current.to_data())
        ):
            watch.candidate = None
            return None
        if (
            current is not None
            and current.activity == seen.activity == Activity.WAITING
            and not current.command
            and seen.command
        ):
            watch.candidate = None  # the screen names what a status sequence only announced
            return seen
        same = watch.candidate is not None and seen.same_as(
            watch.candidate.activity, watch.candidate.to_data()
        )
        if not same:
            watch.candidate, watch.candidate_since = seen, now
        structured = watch.adapter.has_hooks or watch.adapter.reads_osc_status
        held = now - watch.candidate_since
        before_task = current is None or current.activity == Activity.STARTING
        if structured and seen.activity == Activity.IDLE and before_task:
            return None  # its prompt, drawn before it took the task: its hooks will speak
        if structured:
            changed_since = (job.activity_at_ms or 0) / 1000 > watch.candidate_since
            if changed_since:
                watch.candidate_since = now  # the structured source moved: start again
                return None
            accept = held >= SCREEN_CONFIRM_SEC
        else:
            accept = not grew or same  # a settled screen, or the same thing twice
        if not accept:
            return None
        watch.candidate = None
        return seen

    def _by_output(
        self, watch: Watch, current: Observation | None, now: float, grew: bool
    ) -> Observation | None:
        """For an agent without rules for this screen: output means working, a long
        silence idle."""
        activity = current.activity if current is not None else None
        moving = (None, Activity.STARTING, Activity.IDLE, Activity.STALLED, Activity.UNKNOWN)
        if grew and activity in moving:
            return Observation(Activity.WORKING, "process:output")
        answered = (
            activity == Activity.WAITING
            and current is not None
            and current.source.startswith("screen:")
        )
        if grew and answered:  # its question left the screen, and it went on
            return Observation(Activity.WORKING, "process:output")
        if (
            not grew
            and activity == Activity.WORKING
            and not watch.adapter.screen_rules
            and now - watch.output_at >= QUIET_IDLE_SEC
        ):
            return Observation(Activity.IDLE, "process:no output")
        return None

    def _unknown(
        self, watch: Watch, current: Observation | None, job: Job, now: float
    ) -> Observation | None:
        """``unknown`` when no rule explains the screen and it has stayed so for
        UNKNOWN_AFTER_SEC (for an agent with a structured signal, a screen that changed
        UNKNOWN_MARGIN_SEC or more after that signal last spoke; an agent without one
        has only its screen and its output, and both are quiet then). Only for an
        adapter whose rules describe its screens (a working or idle rule: a generic
        agent's yes/no rules explain only its questions), and never over a wait its
        hook or app-server reported (the agent itself says it asks)."""
        if watch.explained or not watch.ever_explained or current is None:
            return None
        if current.activity not in (Activity.WORKING, Activity.WAITING, Activity.IDLE):
            return None
        describes = any(
            rule.activity in (Activity.WORKING, Activity.IDLE)
            for rule in watch.adapter.screen_rules
        )
        structured = watch.adapter.has_hooks or watch.adapter.reads_osc_status
        if not describes or (
            current.activity == Activity.WAITING and current.source.startswith(STRUCTURED_SOURCES)
        ):
            return None
        decided_at = (job.activity_at_ms or 0) / 1000
        if structured and watch.body_changed_at <= decided_at + UNKNOWN_MARGIN_SEC:
            return None  # the screen its signal spoke about, or its own redraw after it
        if now - watch.body_changed_at < UNKNOWN_AFTER_SEC:
            return None
        unexplained = f"no screen rule explains its screen: {watch.last_lines}"
        return Observation(Activity.UNKNOWN, UNEXPLAINED, question=unexplained)

    def _stall(
        self, watch: Watch, current: Observation | None, job: Job, now: float
    ) -> Observation | None:
        """Working with a screen that has not moved (spinners aside) past the job's idle
        timeout: stalled. A stalled agent whose screen moves again is working."""
        if current is None:
            return None
        quiet_since = max(watch.body_changed_at, (job.activity_at_ms or 0) / 1000)
        if current.activity == Activity.WORKING and now - quiet_since >= job.idle_timeout_sec:
            return Observation(
                Activity.STALLED,
                "process:no progress",
                question=f"no progress for {now - quiet_since:.0f} s",
            )
        if (
            current.activity == Activity.STALLED
            and watch.body_changed_at > (job.activity_at_ms or 0) / 1000
        ):
            return Observation(Activity.WORKING, "process:progress again")
        return None


def _has_output(log_path: Path, *, since: float = 0.0) -> bool:
    """Whether the pane log holds output written at ``since`` or later."""
    try:
        found = log_path.stat()
    except OSError:
        return False
    return found.st_size > 0 and found.st_mtime >= since


def _heartbeat(activity: str) -> str:
    """The liveness word a heartbeat carries for an activity (the sessions panel reads it)."""
    beats: dict[str, str] = {
        Activity.WAITING: "blocked",
        Activity.IDLE: "idle",
        Activity.EXITED: "dead",
        Activity.INTERRUPTED: "dead",
    }
    return beats.get(activity, "working")
