"""The in-memory source keeps the real one's promises: one set of checks, run against
both.

Every screen test drives the control room through `InMemorySource` (memory_source.py);
what those tests prove holds for the product only while the fake answers as
`RegistrySource` does over real SQLite. Each check here builds the same world on
both (jobs, events, a gap, a session) through a small driver, and asks the same
question of each source, so the two cannot drift apart unseen.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

from app.control import Orchestrator
from app.settings import Settings
from app.tui.registry_source import RegistrySource
from app.tui.source import SOURCE_ERRORS, ControlRoomSource, Delta, JobRow, SessionRow
from registry.errors import JobNotFound
from registry.events import build_event
from registry.jobs import Registry
from registry.needs_you import Signal, Watched
from registry.vocabulary import (
    Activity,
    Answer,
    EventType,
    JobStatus,
    SessionStatus,
)
from tests.tui.memory_source import FIXED_NOW, InMemorySource


class World(Protocol):
    """What a check may do to a source's world, whichever source it is."""

    source: ControlRoomSource

    def new_job(self, agent: str, session: str) -> str:
        """A pending job; its id."""
        ...

    def emit(self, job_id: str, event: str, detail: str = "", *, skip: int = 0) -> None:
        """The job's agent publishes ``event``; ``skip`` events of its seq never arrive."""
        ...

    def new_session(self, label: str, agent: str) -> None:
        """A running agent session."""
        ...


@dataclass
class MemoryWorld:
    """The fake: plain dicts, as the screen tests use it."""

    source: InMemorySource = field(default_factory=lambda: InMemorySource(lambda: FIXED_NOW))

    def new_job(self, agent: str, session: str) -> str:
        return self.source.submit("a task", agent, session)

    def emit(self, job_id: str, event: str, detail: str = "", *, skip: int = 0) -> None:
        self.source.emit(job_id, event, detail, skip=skip)

    def new_session(self, label: str, agent: str) -> None:
        self.source.add_session(SessionRow(label, SessionStatus.RUNNING, False, "idle"))


@dataclass
class RegistryWorld:
    """The product: the registry in a state dir, read and acted on by RegistrySource."""

    registry: Registry
    source: RegistrySource

    def new_job(self, agent: str, session: str) -> str:
        return self.registry.register("a task", agent, session, sign_events=False).job_id

    def emit(self, job_id: str, event: str, detail: str = "", *, skip: int = 0) -> None:
        if not skip:
            self.registry.publish(job_id, event, detail)
            return
        seq = self.registry.get(job_id).last_seq + 1 + skip
        self.registry.record_event(build_event(job_id, seq, event, detail))

    def new_session(self, label: str, agent: str) -> None:
        self.source.sessions.create(label, agent, tmux_session=f"orch-{label}")


@pytest.fixture(params=["memory", "registry"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """Each check runs once on the fake and once on the real source."""
    if request.param == "memory":
        yield MemoryWorld()
        return
    socket = f"orch-contract-{uuid.uuid4().hex[:8]}"  # never started: no check needs a pane
    settings = Settings(tmp_path / "state")
    orchestrator = Orchestrator(settings, tmux_socket=socket)
    source = RegistrySource(settings, tmux_socket=socket, orchestrator=orchestrator)
    yield RegistryWorld(source.registry, source)
    tmux = shutil.which("tmux")
    if tmux is not None:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True, check=False)


def rows(delta: Delta) -> dict[str, JobRow]:
    return {row.job_id: row for row in delta.jobs}


def started(world: World, agent: str = "claude", session: str = "alpha") -> str:
    job_id = world.new_job(agent, session)
    world.emit(job_id, EventType.STARTED, "go")
    return job_id


def test_the_first_poll_lists_every_job_with_its_status_and_the_counts(world: World) -> None:
    """poll(0): every job once, in its status, and the header's counts agree."""
    pending = world.new_job("claude", "alpha")
    running = started(world)
    done = started(world, "codex", "beta")
    world.emit(done, EventType.COMPLETED, "all tests pass")
    delta = world.source.poll(0)
    found = rows(delta)
    assert {job_id: row.status for job_id, row in found.items()} == {
        pending: JobStatus.PENDING,
        running: JobStatus.RUNNING,
        done: JobStatus.COMPLETED,
    }
    counts = {status: n for status, n in delta.snapshot.counts.items() if n}
    assert counts == {JobStatus.PENDING: 1, JobStatus.RUNNING: 1, JobStatus.COMPLETED: 1}
    assert found[done].state == JobStatus.COMPLETED and found[done].last_event == "completed"
    assert found[running].agent == "claude" and found[running].agent_session == "alpha"


def test_a_later_poll_brings_only_what_changed_and_its_events(world: World) -> None:
    """poll(cursor): the job an event moved, with that event; a quiet job stays out."""
    quiet = started(world)
    busy = started(world, "codex", "beta")
    cursor = world.source.poll(0).cursor
    world.emit(busy, EventType.PROGRESS, "running tests 3/12")
    delta = world.source.poll(cursor)
    assert list(rows(delta)) == [busy]
    assert rows(delta)[busy].progress_detail == "running tests 3/12"
    assert [(e.job_id, e.event, e.detail) for e in delta.events] == [
        (busy, "progress", "running tests 3/12")
    ]
    assert delta.cursor > cursor
    assert quiet not in rows(world.source.poll(delta.cursor))


def test_a_permission_request_makes_the_row_wait_with_its_question(world: World) -> None:
    """permission_required: the row waits, says what it asks, and offers yes and no."""
    job_id = started(world, "demo", "alpha")
    world.emit(job_id, EventType.PERMISSION_REQUIRED, "run `rm -rf build/`?")
    row = rows(world.source.poll(0))[job_id]
    assert row.waiting_permission and row.state == Activity.WAITING
    assert row.question == "run `rm -rf build/`?"
    assert dict(row.asked)["question"] == "run `rm -rf build/`?"
    assert {Answer.YES, Answer.NO} <= set(row.answers)
    assert row.state_since is not None


def test_a_row_that_ended_no_longer_waits(world: World) -> None:
    """An error after a question: the row is final, waits on nobody, asks nothing."""
    job_id = started(world)
    world.emit(job_id, EventType.PERMISSION_REQUIRED, "Proceed?")
    world.emit(job_id, EventType.ERROR, "agent exited with code 1")
    row = rows(world.source.poll(0))[job_id]
    assert row.status == JobStatus.ERROR and row.state == JobStatus.ERROR
    assert not row.waiting_permission and row.question == "" and row.asked == ()
    assert row.state_since is not None


def test_a_gap_in_the_events_is_counted_and_listed(world: World) -> None:
    """Two events lost: the row counts them and the job's page lists their seqs."""
    job_id = started(world)
    world.emit(job_id, EventType.PROGRESS, "step 1")
    world.emit(job_id, EventType.PROGRESS, "step 4", skip=2)
    assert rows(world.source.poll(0))[job_id].missing_events == 2
    detail = world.source.job_detail(job_id)
    assert detail.missing_seqs == [3, 4]
    assert [(e.seq, e.event) for e in detail.timeline] == [
        (1, "started"),
        (2, "progress"),
        (5, "progress"),
    ]


def test_the_job_page_holds_its_record_and_timeline(world: World) -> None:
    """job_detail: the record's id, status and agent; the timeline oldest first."""
    job_id = started(world, "codex", "beta")
    world.emit(job_id, EventType.PROGRESS, "indexing")
    detail = world.source.job_detail(job_id)
    assert detail.job_id == job_id
    assert detail.record["status"] == JobStatus.RUNNING and detail.record["agent"] == "codex"
    assert [(e.event, e.detail) for e in detail.timeline] == [
        ("started", "go"),
        ("progress", "indexing"),
    ]
    assert detail.why_text


def test_an_unknown_job_is_not_found(world: World) -> None:
    """A job deleted (or never there): JobNotFound, which the job page says."""
    with pytest.raises(JobNotFound):
        world.source.job_detail("deadbeef")


def test_cancel_ends_a_live_job_and_is_refused_for_an_ended_one(world: World) -> None:
    """cancel: a pending job is cancelled at the next poll; a completed one is refused
    with an error the control room shows (not a crash)."""
    pending = world.new_job("claude", "alpha")
    done = started(world)
    world.emit(done, EventType.COMPLETED, "done")
    cursor = world.source.poll(0).cursor
    world.source.cancel(pending)
    assert rows(world.source.poll(cursor))[pending].status == JobStatus.CANCELLED
    with pytest.raises(SOURCE_ERRORS):
        world.source.cancel(done)


def test_resume_brings_back_a_cancelled_job_and_refuses_in_the_registry_s_words(
    world: World,
) -> None:
    """resume: a cancelled job is pending again; a completed one is refused, and the
    refusal reads as the registry's state machine words it (a notice shows it as is)."""
    cancelled = world.new_job("claude", "alpha")
    world.source.cancel(cancelled)
    done = started(world)
    world.emit(done, EventType.COMPLETED, "done")
    cursor = world.source.poll(0).cursor
    world.source.resume(cancelled)
    assert rows(world.source.poll(cursor))[cancelled].status == JobStatus.PENDING
    with pytest.raises(SOURCE_ERRORS) as refused:
        world.source.resume(done)
    assert str(refused.value) == (
        f"job {done}: cannot resume from completed (resume applies to: error, cancelled)"
    )


def test_answering_a_job_that_does_not_wait_is_refused(world: World) -> None:
    """answer: refused, with an error the control room shows, unless the job waits."""
    job_id = started(world)
    with pytest.raises(SOURCE_ERRORS):
        world.source.answer(job_id, Answer.YES)


def test_stopping_a_session_that_does_not_exist_is_refused(world: World) -> None:
    """stop_session: an unknown label is an error the control room shows."""
    with pytest.raises(SOURCE_ERRORS):
        world.source.stop_session("nobody", "soft")


def test_a_stopped_session_whose_tmux_session_is_gone_is_terminated(world: World) -> None:
    """stop_session soft on a session with no tmux session behind it: nothing is left
    to archive, and a later poll reads it terminated."""
    world.new_session("alpha", "claude")
    cursor = world.source.poll(0).cursor
    world.source.stop_session("alpha", "soft")
    sessions = world.source.poll(cursor).sessions
    assert sessions is not None
    found = {s.label: s for s in sessions}["alpha"]
    assert found.state == SessionStatus.TERMINATED and not found.tmux_alive


def test_a_signal_is_claimed_once(world: World) -> None:
    """claim_signal: the first claim of a change wins, a second is refused."""
    job_id = started(world)
    waiting = Watched(job_id, JobStatus.RUNNING, waiting=True, since_ms=1_700_000_000_000)
    signal = Signal("needs_you", waiting)
    assert world.source.claim_signal(signal) is True
    assert world.source.claim_signal(signal) is False
