"""Events that arrive after their job's end, the confirmations the registry gives, and the
agent's outbox: real SQLite files, no broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from bus.delivery_outbox import Confirmation, Outbox
from registry.delivery import AgentOutbox, applied_topic, confirmation_for, outbox_path
from registry.errors import DuplicateEvent, EventAfterTerminal, InvalidEvent
from registry.events import build_event
from registry.jobs import Registry
from registry.remote_seq import next_seq, seq_path
from registry.signing import sign


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def test_events_from_before_the_end_that_arrive_after_it_are_recorded(registry: Registry) -> None:
    """A broker lost seqs 1-2 and kept the retained completed (3): when 1 and 2 come
    again they join the history and close the gap; the status and last event stay
    as the end left them; anything past the end is still refused."""
    job = registry.register("p", "demo", "tmux:demo", sign_events=False)
    registry.record_event(build_event(job.job_id, 3, "completed"), via="mqtt")
    assert registry.get(job.job_id).missing_seqs == [[1, 2]]
    late = registry.record_event(build_event(job.job_id, 1, "started"), via="mqtt")
    assert late.status == "completed" and late.missing_count == 1
    registry.record_event(build_event(job.job_id, 2, "progress"), via="mqtt")
    after = registry.get(job.job_id)
    assert (after.status, after.last_event, after.missing_seqs) == ("completed", "completed", [])
    events = [m.payload["seq"] for m in registry.bus.read_after(0) if m.type == "job.event"]
    assert events == [3, 1, 2]
    with pytest.raises(DuplicateEvent):
        registry.record_event(build_event(job.job_id, 2, "progress"), via="mqtt")
    with pytest.raises(EventAfterTerminal, match="after the job was completed"):
        registry.record_event(build_event(job.job_id, 4, "progress"), via="mqtt")


def test_a_cancelled_job_takes_no_late_events(registry: Registry) -> None:
    job = registry.register("p", "demo", "tmux:demo", sign_events=False)
    registry.record_event(build_event(job.job_id, 2, "progress"), via="mqtt")
    registry.cancel(job.job_id)
    with pytest.raises(EventAfterTerminal):
        registry.record_event(build_event(job.job_id, 1, "started"), via="mqtt")


def test_confirmations_say_what_the_registry_holds(registry: Registry) -> None:
    """through = highest seen, missing = the gaps, closed = nothing more will come."""
    job = registry.register("p", "demo", "tmux:demo", sign_events=False)
    assert confirmation_for(registry.get(job.job_id), "e") == Confirmation(0, (), False, "e")
    for seq, name in ((1, "started"), (4, "completed")):
        registry.record_event(build_event(job.job_id, seq, name), via="mqtt")
    ended = confirmation_for(registry.get(job.job_id), "e")
    assert (ended.through, ended.missing, ended.closed) == (4, ((2, 3),), False)
    assert [ended.has(seq) for seq in (1, 2, 3, 4, 5)] == [True, False, False, True, False]
    for seq in (2, 3):
        registry.record_event(build_event(job.job_id, seq, "progress"), via="mqtt")
    assert confirmation_for(registry.get(job.job_id), "e").closed
    other = registry.register("p", "demo", "tmux:demo", sign_events=False)
    registry.record_event(build_event(other.job_id, 3, "progress"), via="mqtt")
    registry.cancel(other.job_id)
    assert confirmation_for(registry.get(other.job_id), "e").closed


def test_confirmation_wire_form_round_trips_and_refuses_junk() -> None:
    confirmation = Confirmation(7, ((2, 3),), False, "ab")
    assert Confirmation.from_bytes(confirmation.to_bytes()) == confirmation
    junk_forms = [
        b"", b"[]", b'{"through": -1}', b'{"through": "3"}', b'{"through": 1.5}',
        b'{"through": 1, "missing": [[1]]}', b'{"through": 1, "closed": "yes"}',
    ]  # fmt: skip
    for junk in junk_forms:
        assert Confirmation.from_bytes(junk) is None, junk


def test_the_agent_outbox_takes_seqs_with_the_seq_file(tmp_path: Path) -> None:
    """Seqs continue from an older version's counter file, the file follows the
    outbox, and an event that cannot be built takes no seq."""
    home = tmp_path / "agent"
    assert next_seq(home, "abcdef12") == 1  # an older orchestrate sent seq 1
    box = AgentOutbox(home)
    topic = "jobs/abcdef12/events"

    def make(name: str):  # type: ignore[no-untyped-def]
        return lambda seq: sign(build_event("abcdef12", seq, name), "t" * 43)

    first = box.queue("abcdef12", topic, "mqtt://h:1883", make("progress"))
    assert (first.position, first.retain) == (2, False)
    with pytest.raises(InvalidEvent):
        box.queue("abcdef12", topic, "mqtt://h:1883", make("finished"))
    last = box.queue("abcdef12", topic, "mqtt://h:1883", make("completed"))
    assert (last.position, last.retain) == (3, True)
    assert int(seq_path(home, "abcdef12").read_text()) == 3
    stored = Outbox(outbox_path(home))
    assert [m.position for m in stored.pending(stream="abcdef12")] == [2, 3]
    assert [s.confirm_topic for s in stored.streams()] == ["jobs/abcdef12/applied"]
    assert stored.confirm("abcdef12", Confirmation(3, ((2, 2),))) == 1
    assert [m.position for m in stored.pending()] == [2]
    assert stored.confirm("abcdef12", Confirmation(0, (), closed=True)) == 1
    assert stored.pending_count() == 0
    with pytest.raises(InvalidEvent):
        applied_topic("jobs/abcdef12/other")


def test_the_confirmer_confirms_at_once_then_at_most_once_an_interval(registry: Registry) -> None:
    """The first commit of a job is confirmed at once; a burst after it waits for the
    interval, then its last state goes out; an event on another job's topic is not
    confirmed there."""
    from registry.delivery_confirmer import Confirmer

    sent: list[tuple[str, Confirmation | None]] = []
    confirmer = Confirmer(
        lambda topic, payload: sent.append((topic, Confirmation.from_bytes(payload))) or True,
        min_interval_s=3600,
    )
    job = registry.register("p", "demo", "tmux:demo", sign_events=False)
    topic = job.events_topic
    for seq in (1, 2):
        event = build_event(job.job_id, seq, "progress")
        verdicts = registry.record_events([event], via="mqtt")
        confirmer.after_commit(registry, [(topic, event.to_bytes())], verdicts)
    assert [(t, c.through if c else None) for t, c in sent] == [(applied_topic(topic), 1)]
    assert confirmer.due_in() is not None
    confirmer.min_interval_s = 0
    confirmer.flush(registry)
    assert [c.through if c else None for _t, c in sent] == [1, 2] and confirmer.due_in() is None
    stray = build_event(job.job_id, 3, "progress")
    confirmer.after_commit(registry, [("jobs/elsewhere/events", stray.to_bytes())],
                           registry.record_events([stray], via="mqtt"))  # fmt: skip
    assert len(sent) == 2
