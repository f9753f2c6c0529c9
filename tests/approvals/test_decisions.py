"""The decision record and protocol: what the control room posts is what a waiting hook
or the Codex bridge reads, newest first, only from after its question, and an
unreadable one leaves the agent to its own dialog."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.approvals.decision import decide, wait_for_decision
from bus.messages import Outgoing
from registry import decisions
from registry.decisions import DecisionReader, latest_decision
from registry.jobs import Registry
from registry.vocabulary import Answer, MessageType


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def raw(registry: Registry, job_id: str, payload: object) -> int:
    """A decision message as anything on the bus could hold it."""
    message = Outgoing(
        type=MessageType.JOB_DECISION, from_agent="x", correlation_id=job_id, payload=payload
    )
    return registry.bus.publish(message).seq


def test_the_newest_decision_after_the_question_is_the_one(registry: Registry) -> None:
    before = decide(registry.bus, "j1", Answer.NO, by="cli")
    asked = registry.bus.latest_seq()
    assert latest_decision(registry.bus, "j1", asked) is None
    decide(registry.bus, "j1", Answer.YES, by="control room")
    decide(registry.bus, "j2", Answer.NO, by="cli")  # another job's
    found = latest_decision(registry.bus, "j1", asked)
    assert found is not None and found.seq > before
    assert (found.answer, found.by, found.allow, found.readable) == (
        Answer.YES,
        "control room",
        True,
        True,
    )
    stored = registry.bus.read_after(before - 1, limit=1)[0]
    assert stored.type == "job.decision" and stored.correlation_id == "j1"
    assert stored.payload == {"job_id": "j1", "answer": "no", "by": "cli"}


def test_always_allows_and_no_denies(registry: Registry) -> None:
    for answer, allow in ((Answer.ALWAYS, True), (Answer.NO, False)):
        decide(registry.bus, "j1", answer, by="cli")
        found = latest_decision(registry.bus, "j1", 0)
        assert found is not None and (found.answer, found.allow) == (answer, allow)


def test_an_unreadable_decision_is_said_so_and_an_unknown_word_allows_nothing(
    registry: Registry,
) -> None:
    raw(registry, "j1", ["yes"])
    found = latest_decision(registry.bus, "j1", 0)
    assert found is not None and not found.readable and not found.allow
    raw(registry, "j1", {"answer": "maybe"})
    found = latest_decision(registry.bus, "j1", 0)
    assert found is not None and found.readable and found.answer is None and not found.allow


def test_a_reader_reads_only_what_came_since_across_pages(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pending Codex request polls for hours: each look starts where the last ended."""
    monkeypatch.setattr(decisions, "PAGE", 2)
    reader = DecisionReader(registry.bus, "j1", registry.bus.latest_seq())
    for n in range(5):
        registry.bus.publish(Outgoing(type="job.event", from_agent="x", correlation_id="j1"))
        assert reader.latest() is None, n
    decide(registry.bus, "j1", Answer.NO, by="cli")
    for _ in range(3):
        registry.bus.publish(Outgoing(type="job.event", from_agent="x", correlation_id="j1"))
    found = reader.latest()
    assert found is not None and found.answer == Answer.NO
    assert reader.cursor == registry.bus.latest_seq()
    assert reader.latest() == found  # kept: nothing newer came
    # another job's messages are passed over once, not on every look
    registry.bus.publish(Outgoing(type="job.event", from_agent="x", correlation_id="j2"))
    assert reader.latest() == found and reader.cursor == registry.bus.latest_seq()


def test_a_waiting_hook_gets_the_decision_or_nothing_by_its_deadline(registry: Registry) -> None:
    asked = registry.bus.latest_seq()
    started = time.monotonic()
    assert wait_for_decision(registry.bus, "j1", asked, started + 0.3, poll_sec=0.05) is None
    assert time.monotonic() - started >= 0.3
    decide(registry.bus, "j1", Answer.ALWAYS, by="cli")
    found = wait_for_decision(registry.bus, "j1", asked, time.monotonic() + 5)
    assert found is not None and found.answer == Answer.ALWAYS
    after = registry.bus.latest_seq()
    raw(registry, "j1", "not an object")
    assert wait_for_decision(registry.bus, "j1", after, time.monotonic() + 5) is None
