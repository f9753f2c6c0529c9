"""Who needs a person, and who finished: the facts behind every needs-you signal.

The control room's bell and terminal title, `orchestrate status --tmux` and the
`--notify-cmd` hook all start from the same question ("which jobs wait on a
person, and which started waiting or ended since I last looked?"), so it is
answered once, here, from plain job rows. All of it is pure (no clock, no I/O)
but `claim` and the `read_*` functions at the bottom, which take a connection.

A job *signals* when its mark changes: ``waiting@<ms the wait began>`` while it
waits on a person, ``<final status>@<ms it ended>`` once it has ended, nothing
otherwise. A job that keeps signalling the same state (a hook firing twice for
one question, progress events while it waits) keeps the same mark, so it is
announced once; a second question is a new wait, with a new mark.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

from registry.activity import observation_of
from registry.records import Job, iso_ms_from_ms, job_from_row
from registry.vocabulary import JobStatus, MessageType
from registry.waiting_count import NEEDS_YOU_WHERE

if TYPE_CHECKING:
    from bus.messages import Bus

SignalEvent = Literal["needs_you", "finished", "error", "cancelled"]
SIGNAL_EVENTS: Final[tuple[SignalEvent, ...]] = ("needs_you", "finished", "error", "cancelled")
ENDED: Final[Mapping[str, SignalEvent]] = {
    JobStatus.COMPLETED: "finished",
    JobStatus.ERROR: "error",
    JobStatus.CANCELLED: "cancelled",
}
TITLE: Final = "orchestrate"


@dataclass(frozen=True)
class Watched:
    """What the signals need of one job (from a registry `Job` or a TUI row)."""

    job_id: str
    status: str
    waiting: bool
    since_ms: int
    """When its current state began: the wait's start, or the moment it ended."""
    agent: str = ""
    agent_session: str = ""
    question: str = ""
    """What it waits on ("Bash `npm test`", or the question); empty otherwise."""
    detail: str = ""
    """The question in full while it waits; why it ended (its last detail) once ended."""

    @property
    def mark(self) -> str:
        """The state a signal is about; "" for a job that neither waits nor ended."""
        if self.waiting:
            return f"waiting@{self.since_ms}"
        if self.status in ENDED:
            return f"{self.status}@{self.since_ms}"
        return ""

    @property
    def event(self) -> SignalEvent | None:
        if self.waiting:
            return "needs_you"
        return ENDED.get(self.status)


@dataclass(frozen=True)
class Signal:
    """One change a person may want to hear about."""

    event: SignalEvent
    job: Watched

    @property
    def text(self) -> str:
        """One line for a person: "job 7b0e99a1 (codex, beta) needs you: Bash `ls`"."""
        job = self.job
        who = ", ".join(part for part in (job.agent, job.agent_session) if part)
        subject = f"job {job.job_id}" + (f" ({who})" if who else "")
        if self.event == "needs_you":
            return f"{subject} needs you: {job.question or 'a permission answer'}"
        said = {"finished": "finished", "error": "failed", "cancelled": "was cancelled"}
        ending = f"{subject} {said[self.event]}"
        return f"{ending}: {job.detail}" if job.detail and self.event != "finished" else ending

    def payload(self) -> dict[str, Any]:
        """The job as JSON for a notify command's stdin."""
        job = self.job
        return {
            "event": self.event,
            "job_id": job.job_id,
            "status": job.status,
            "agent": job.agent,
            "agent_session": job.agent_session,
            "question": job.question,
            "detail": job.detail,
            "since": iso_ms_from_ms(job.since_ms),
            "text": self.text,
        }


def changes(
    marks: Mapping[str, str], jobs: Iterable[Watched]
) -> tuple[dict[str, str], list[Signal]]:
    """The signals ``jobs`` raise over what was last seen (``marks``: job id -> mark),
    and the marks to remember. A job seen for the first time signals too (it began
    waiting, or ended, between two looks); start from `prime` to stay quiet about
    the state found on opening."""
    seen = dict(marks)
    raised: list[Signal] = []
    for job in jobs:
        mark = job.mark
        before = seen.get(job.job_id)
        seen[job.job_id] = mark
        event = job.event
        if mark and mark != before and event is not None:
            raised.append(Signal(event, job))
    return seen, raised


def prime(jobs: Iterable[Watched]) -> dict[str, str]:
    """The marks of ``jobs`` as they are now: what a fresh watcher takes as known."""
    return {job.job_id: job.mark for job in jobs}


def opening(jobs: Iterable[Watched]) -> tuple[dict[str, str], list[Signal]]:
    """What a watcher that just opened takes as known, and what it still signals: every
    job that waits on a person now (however long it has waited), but no ending found.

    A wait is news whenever it began: the first look must not decide it. Taking the
    whole first look as known missed a question that began before the watcher
    opened whenever it was recorded before that look (about 1 run in 3), yet rang
    when it was recorded just after. A notify command still runs once per wait: it
    is claimed on the bus first (`claim`), as the background supervisor does."""
    found = list(jobs)
    waits = [Signal("needs_you", job) for job in found if job.waiting]
    return prime(found), waits


def waiting_title(count: int) -> str:
    """The terminal title: "orchestrate (2 waiting)", or "orchestrate" when none wait."""
    return f"{TITLE} ({count} waiting)" if count > 0 else TITLE


def claim_id(signal: Signal) -> str:
    """The bus message id that claims ``signal``: whoever inserts it announces it.
    Under the job's own id prefix, which no `msg send` may use."""
    return f"{signal.job.job_id}:notify:{signal.job.mark}"


def claim(bus: Bus, signal: Signal, *, by: str) -> bool:
    """Record on the bus that ``signal`` is being announced; False if someone already
    did (another control room, or the background supervisor). The bus's unique
    message id makes the claim atomic across processes."""
    from bus.messages import Outgoing  # here: `status --tmux` never needs the bus

    published = bus.publish(
        Outgoing(
            type=MessageType.CONTROL_NOTIFIED,
            from_agent=by,
            correlation_id=signal.job.job_id,
            payload={"event": signal.event, "job_id": signal.job.job_id, "mark": signal.job.mark},
            id=claim_id(signal),
        )
    )
    return not published.duplicate


# -- from registry records ------------------------------------------------------


def _iso_ms(stamp: str | None) -> int:
    if not stamp:
        return 0
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def watched(job: Job) -> Watched:
    """A registry job as the signals see it: one stopped at a block needs a person too."""
    waiting = job.needs_person
    if waiting:
        since = job.activity_at_ms or _iso_ms(job.last_event_at) or _iso_ms(job.updated_at)
        seen = observation_of(job.activity, job.activity_source, job.activity_data)
        question = (seen.summary() if seen is not None else "") or job.last_detail or ""
        detail = (seen.question if seen is not None else "") or question
    else:  # completed_at: set once, when it ends (late events leave it alone)
        since, question = _iso_ms(job.completed_at or job.updated_at), ""
        detail = job.last_detail or ""
    return Watched(
        job_id=job.job_id,
        status=job.status,
        waiting=waiting,
        since_ms=since,
        agent=job.agent,
        agent_session=job.agent_session,
        question=question,
        detail=detail,
    )


def read_waiting(conn: sqlite3.Connection) -> list[Watched]:
    """The jobs waiting on a person now (a dialog, or stopped at a block), oldest first."""
    rows = conn.execute(
        f"SELECT * FROM jobs WHERE {NEEDS_YOU_WHERE} ORDER BY created_at_ms, job_id"
    ).fetchall()
    return [watched(job_from_row(row)) for row in rows]


def transitions_seen(conn: sqlite3.Connection) -> int:
    """The newest status change so far: a watcher starting now reads from here."""
    row = conn.execute("SELECT COALESCE(MAX(id), 0) FROM job_transitions").fetchone()
    return int(row[0]) if row else 0


def read_watched(conn: sqlite3.Connection, after_transition: int) -> tuple[int, list[Watched]]:
    """Every live job, and the jobs whose status moved after transition id
    ``after_transition``: what a background watcher looks at on each pass (never
    the whole history). Returns the newest transition id read, for the next pass."""
    newest = transitions_seen(conn)
    rows = conn.execute(
        f"SELECT * FROM jobs WHERE status IN ('{JobStatus.PENDING}', '{JobStatus.RUNNING}') OR "
        "job_id IN "
        "(SELECT job_id FROM job_transitions WHERE id > ? AND id <= ?)",
        (after_transition, newest),
    ).fetchall()
    return newest, [watched(job_from_row(row)) for row in rows]
