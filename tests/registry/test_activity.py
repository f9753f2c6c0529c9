"""A running job's activity: observed with its source, deduplicated, explained, signed."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.activity import Observation, describe_source
from registry.errors import InvalidEvent, InvalidJobInput
from registry.events import build_event
from registry.jobs import Registry
from registry.signing import verify


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def running(registry: Registry) -> str:
    job = registry.register("run the tests", "claude", "alpha")
    registry.set_status(job.job_id, "running", "picked by submit")
    return job.job_id


WAITING = Observation(
    "waiting",
    "hook:claude:PermissionRequest",
    question="Do you want to proceed?",
    tool="Bash",
    command="npm test",
)


def test_a_running_job_starts_with_activity_starting(registry: Registry) -> None:
    """Moving to running gives the job an activity at once: starting."""
    job = registry.get(running(registry))
    assert job.activity == "starting"
    assert job.to_dict()["activity"]["activity"] == "starting"


def test_an_observation_is_a_signed_activity_event_with_its_source(registry: Registry) -> None:
    """observe() records one signed `activity` event and makes it the job's activity."""
    job_id = running(registry)
    recorded = registry.observe(job_id, WAITING)
    assert recorded is not None and recorded.event.event == "activity"
    job = registry.get(job_id)
    verify(recorded.event, job.auth_token or "")
    assert job.activity == "waiting" and job.waiting
    record = job.to_dict()["activity"]
    assert record["source"] == "hook:claude:PermissionRequest"
    assert record["command"] == "npm test" and record["tool"] == "Bash"


def test_a_repeated_signal_is_one_change(registry: Registry) -> None:
    """The same state about the same question again: no event, no seq used."""
    job_id = running(registry)
    assert registry.observe(job_id, WAITING) is not None
    seq = registry.get(job_id).last_seq
    again = Observation("waiting", "screen:claude.dialog", question="Do you want to proceed?",
                        tool="Bash", command="npm test")  # fmt: skip
    assert registry.observe(job_id, again) is None
    assert registry.get(job_id).last_seq == seq
    other = Observation("waiting", "hook:claude:PermissionRequest", tool="Bash", command="ls")
    assert registry.observe(job_id, other) is not None  # a new question is a change
    assert [c.activity for c in registry.activity_history(job_id)] == [
        "starting",
        "waiting",
        "waiting",
    ]


def test_a_command_cannot_show_in_another_order_than_it_runs(registry: Registry) -> None:
    """Bidi overrides and isolates in what an agent asks to run (Trojan Source) are
    marked in the stored activity, so `job why`, the event and the control room show
    where they were instead of reordering the command the operator answers."""
    job_id = running(registry)
    hidden = "echo safe #\u202e\u2066; rm -rf ~\u2069\u2028x"
    registry.observe(job_id, Observation("waiting", "hook:claude:PermissionRequest",
                                         tool="Bash", command=hidden))  # fmt: skip
    record = registry.get(job_id).to_dict()["activity"]
    assert record["command"] == "echo safe #\ufffd\ufffd; rm -rf ~\ufffd x"
    assert "echo safe #\ufffd\ufffd; rm -rf ~\ufffd x" in registry.why(job_id)


def test_why_gives_the_evidence(registry: Registry) -> None:
    """`job why` names the activity, since when, the source and what it is about."""
    job_id = running(registry)
    registry.observe(job_id, WAITING)
    why = registry.why(job_id)
    assert why.startswith("running since")
    assert "waiting since" in why
    assert "Claude Code hook PermissionRequest: Bash `npm test`" in why


def test_published_events_show_activity(registry: Registry) -> None:
    """An agent that publishes (the demo agent) gets an activity from its events."""
    job_id = running(registry)
    registry.publish(job_id, "started", "on it")
    assert registry.get(job_id).activity == "working"
    registry.publish(job_id, "permission_required", "Allow edit of setup.py?")
    job = registry.get(job_id)
    assert job.activity == "waiting" and job.activity_data is not None
    assert job.activity_data["question"] == "Allow edit of setup.py?"
    registry.publish(job_id, "progress", "edited")
    assert registry.get(job_id).activity == "working"


def test_a_job_that_ends_has_no_activity_but_keeps_its_history(registry: Registry) -> None:
    job_id = running(registry)
    registry.observe(job_id, Observation("idle", "hook:claude:Stop"))
    registry.publish(job_id, "completed", "done")
    job = registry.get(job_id)
    assert job.status == "completed" and job.activity is None and not job.waiting
    assert registry.observe(job_id, WAITING) is None  # a late hook changes nothing
    assert [c.activity for c in registry.activity_history(job_id)][-1] == "idle"


def test_a_pending_job_is_not_observed(registry: Registry) -> None:
    job = registry.register("later", "claude", "alpha")
    assert registry.observe(job.job_id, WAITING) is None
    assert registry.get(job.job_id).activity is None


def test_an_activity_event_with_a_bad_activity_is_refused(registry: Registry) -> None:
    """An `activity` event from the wire naming no known activity stores nothing."""
    job_id = running(registry)
    job = registry.get(job_id)
    bad = build_event(job_id, job.last_seq + 1, "activity", "x", {"activity": "dancing"})
    from registry.signing import sign

    with pytest.raises(InvalidEvent, match="unknown activity"):
        registry.record_event(sign(bad, job.auth_token or ""))
    assert registry.get(job_id).last_seq == job.last_seq


def test_an_unknown_activity_is_refused_at_once() -> None:
    with pytest.raises(InvalidJobInput, match="unknown activity 'busy'"):
        Observation("busy", "screen:x")


def test_agent_text_is_stored_as_one_clean_line(registry: Registry) -> None:
    """Control characters and escape sequences from a screen never reach the record."""
    job_id = running(registry)
    hostile = Observation("waiting", "screen:x", question="Run\x1b]0;pwned\x07 this?\n\x1b[2J")
    registry.observe(job_id, hostile)
    question = registry.get(job_id).activity_data["question"]  # type: ignore[index]
    assert "\x1b" not in question and "\x07" not in question and "\n" not in question
    assert question.startswith("Run")


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("hook:claude:PermissionRequest", "Claude Code hook PermissionRequest"),
        ("osc:codex", "Codex status sequence (OSC 7501)"),
        ("screen:aider.run_shell", "screen rule aider.run_shell matched"),
        ("title:gemini:Action Required", "Gemini CLI pane title Action Required"),
        ("process", "process"),
        ("process:output", "process (output)"),
        ("process:no progress", "process (no progress)"),
        ("appserver:codex:requestApproval", "Codex app-server requestApproval"),
    ],
)
def test_sources_are_said_in_words(source: str, said: str) -> None:
    assert describe_source(source) == said
