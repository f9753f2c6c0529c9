"""Who waits on a person and who finished: the signals behind the bell, the title,
`status --tmux` and the notify command (registry/needs_you.py), over real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from bus.messages import Outgoing
from registry.activity import Observation
from registry.jobs import Registry
from registry.needs_you import (
    Signal,
    Watched,
    changes,
    claim,
    claim_id,
    opening,
    prime,
    read_waiting,
    read_watched,
    transitions_seen,
    waiting_title,
    watched,
)
from registry.waiting_count import read_waiting_count, tmux_segment

ASKS = Observation(
    "waiting", "hook:claude:PermissionRequest", "Do you want to proceed?", "Bash", "npm test"
)


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def running(registry: Registry, label: str = "s1") -> str:
    job = registry.register("do it", "claude", label, sign_events=False)
    registry.publish(job.job_id, "started", "go")
    return job.job_id


def row(job_id: str, *, status: str = "running", waiting: bool = False, since: int = 1) -> Watched:
    return Watched(job_id, status, waiting, since, "claude", "s1", "Bash `ls`")


def test_a_wait_signals_once_however_often_it_is_seen() -> None:
    """The same wait seen again (a hook firing twice, progress while it waits) is
    one signal; a second question (a new wait) is another."""
    marks = prime([row("a")])
    marks, first = changes(marks, [row("a", waiting=True, since=5)])
    assert [(s.event, s.job.job_id) for s in first] == [("needs_you", "a")]
    for _ in range(3):
        marks, again = changes(marks, [row("a", waiting=True, since=5)])
        assert again == []
    marks, working = changes(marks, [row("a", since=9)])
    assert working == []
    marks, second = changes(marks, [row("a", waiting=True, since=12)])
    assert [s.event for s in second] == ["needs_you"]


def test_endings_are_told_apart_and_a_resumed_job_ends_again() -> None:
    marks = prime([row("a"), row("b"), row("c")])
    ended = [
        row("a", status="completed", since=7),
        row("b", status="error", since=7),
        row("c", status="cancelled", since=7),
    ]
    marks, signals = changes(marks, ended)
    assert [s.event for s in signals] == ["finished", "error", "cancelled"]
    marks, repeated = changes(marks, ended)
    assert repeated == []
    marks, _ = changes(marks, [row("b", status="pending", since=8)])
    marks, again = changes(marks, [row("b", status="error", since=20)])
    assert [s.event for s in again] == ["error"]


def test_priming_stays_quiet_about_what_was_found() -> None:
    """The state found on opening is known, not news: nothing signals for it."""
    found = [row("a", waiting=True, since=3), row("b", status="completed", since=2)]
    marks = prime(found)
    assert changes(marks, found)[1] == []
    assert [s.event for s in changes({}, found)[1]] == ["needs_you", "finished"]


def test_opening_signals_the_waits_found_but_no_ending() -> None:
    """A wait found on opening is news, whenever it began (it was missed when it was
    recorded before the first look); what ended before is not."""
    found = [row("a", waiting=True, since=3), row("b", status="completed", since=2), row("c")]
    marks, signals = opening(found)
    assert marks == prime(found)
    assert [(s.event, s.job.job_id) for s in signals] == [("needs_you", "a")]
    assert changes(marks, found)[1] == []  # seen again: nothing more


def test_signal_text_and_payload_say_what_happened() -> None:
    wait = Signal("needs_you", row("7b0e99a1", waiting=True, since=1_700_000_000_000))
    assert wait.text == "job 7b0e99a1 (claude, s1) needs you: Bash `ls`"
    payload = wait.payload()
    assert payload["event"] == "needs_you" and payload["since"] == "2023-11-14T22:13:20.000Z"
    failed = Watched("j2", "error", False, 1, "codex", "x", "", "exit status 1")
    assert Signal("error", failed).text == "job j2 (codex, x) failed: exit status 1"
    assert Signal("finished", row("j3", status="completed")).text == "job j3 (claude, s1) finished"


def test_title_and_tmux_segment() -> None:
    assert waiting_title(0) == "orchestrate"
    assert waiting_title(2) == "orchestrate (2 waiting)"
    assert tmux_segment(0) == "" and tmux_segment(0, "ok") == "ok"
    assert tmux_segment(3) == "⚠ 3"


def test_the_sql_count_agrees_with_job_waiting(registry: Registry) -> None:
    """WAITING_WHERE is `Job.waiting` in SQL: a hook's wait, a published
    permission_required with no activity seen, and neither after the job ends."""
    by_hook, by_event, busy = running(registry, "a"), running(registry, "b"), running(registry)
    registry.observe(by_hook, ASKS)
    conn = registry.db.conn
    conn.execute("UPDATE jobs SET activity = NULL WHERE job_id = ?", (by_event,))
    registry.publish(by_event, "permission_required", "Allow edit of x?")
    conn.execute("UPDATE jobs SET activity = NULL WHERE job_id = ?", (by_event,))
    registry.observe(busy, Observation("working", "osc:codex"))
    jobs = [registry.get(job_id) for job_id in (by_hook, by_event, busy)]
    assert [job.waiting for job in jobs] == [True, True, False]
    assert read_waiting_count(conn) == 2
    assert [w.job_id for w in read_waiting(conn)] == [by_hook, by_event]
    registry.cancel(by_hook)
    assert read_waiting_count(conn) == 1 and not registry.get(by_hook).waiting


def test_watched_from_the_registry(registry: Registry) -> None:
    job_id = running(registry)
    registry.observe(job_id, ASKS)
    seen = watched(registry.get(job_id))
    assert seen.waiting and seen.question == "Bash `npm test`"
    assert seen.detail == "Do you want to proceed?"
    assert seen.since_ms == registry.get(job_id).activity_at_ms
    registry.publish(job_id, "error", "tests failed")
    ended = watched(registry.get(job_id))
    assert (ended.event, ended.detail) == ("error", "tests failed")


def test_a_background_watch_reads_live_jobs_and_fresh_endings(registry: Registry) -> None:
    """read_watched: every live job, plus the ones whose status moved since the
    last read; an old ending is not read again."""
    old = running(registry, "old")
    registry.publish(old, "completed", "done")
    after = transitions_seen(registry.db.conn)
    live, ending = running(registry, "a"), running(registry, "b")
    registry.publish(ending, "completed", "done")
    after, rows = read_watched(registry.db.conn, after)
    assert {r.job_id for r in rows} == {live, ending}
    after, rows = read_watched(registry.db.conn, after)
    assert {r.job_id for r in rows} == {live}


def test_a_claim_is_taken_once(registry: Registry) -> None:
    """Two watchers (a control room, the supervisor) announce each change once: the
    claim's bus id is unique, so the second insert is a duplicate."""
    job_id = running(registry)
    registry.observe(job_id, ASKS)
    signal = Signal("needs_you", watched(registry.get(job_id)))
    assert claim(registry.bus, signal, by="control-room") is True
    assert claim(registry.bus, signal, by="supervisor") is False
    assert claim_id(signal).startswith(f"{job_id}:notify:waiting@")


def test_a_sender_cannot_claim_a_signal_ahead(registry: Registry) -> None:
    """The claim lives under the job's own id prefix, which `msg send` may not use."""
    from registry.bus_types import check_sendable
    from registry.errors import ReservedMessage

    job_id = running(registry)
    registry.observe(job_id, ASKS)
    signal = Signal("needs_you", watched(registry.get(job_id)))
    forged = Outgoing(type="chat", from_agent="me", id=claim_id(signal))
    with pytest.raises(ReservedMessage):
        check_sendable(forged)
