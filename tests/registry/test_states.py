"""State machines as data: legal moves pass, illegal ones fail with a clear line, and
explain() says why a record is where it is."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from registry.errors import IllegalTransition, RegistryError, UnknownStatus
from registry.jobs import Registry
from registry.states import (
    BY_HAND,
    JOB,
    MACHINES,
    SESSION,
    WORKER,
    StateChange,
    StateMachine,
    Transition,
    check_transition,
    explain,
    next_state,
)

LEGAL = [
    (JOB, "pending", "running"),
    (JOB, "running", "completed"),
    (JOB, "running", "error"),
    (JOB, "pending", "cancelled"),
    (JOB, "running", "cancelled"),
    (JOB, "running", "pending"),
    (JOB, "error", "pending"),
    (JOB, "cancelled", "pending"),
    (SESSION, "running", "stopped"),
    (SESSION, "running", "archived"),
    (SESSION, "running", "terminated"),
    (SESSION, "stopped", "running"),
    (SESSION, "archived", "running"),
    (SESSION, "archived", "terminated"),
    (SESSION, "stopped", "terminated"),
    (WORKER, "ASSIGNED", "WORKING"),
    (WORKER, "WORKING", "IN_REVIEW"),
    (WORKER, "IN_REVIEW", "APPROVED"),
    (WORKER, "IN_REVIEW", "WORKING"),
    (WORKER, "APPROVED", "WORKING"),
    (WORKER, "APPROVED", "COMPLETED"),
    (WORKER, "CANCELLED", "WORKING"),
    (WORKER, "FAILED", "WORKING"),
    *[
        (WORKER, live, end)
        for live in ("ASSIGNED", "WORKING", "IN_REVIEW", "APPROVED")
        for end in ("CANCELLED", "FAILED")
    ],
]


@pytest.mark.parametrize(("machine", "current", "target"), LEGAL)
def test_legal_moves_pass(machine: StateMachine, current: str, target: str) -> None:
    check_transition(machine, current, target)


def test_every_other_move_is_illegal() -> None:
    """The tables above are the whole story: nothing else slips through."""
    legal = {(m.name, a, b) for m, a, b in LEGAL}
    for machine in MACHINES.values():
        for current in machine.states:
            for target in machine.states:
                if (machine.name, current, target) in legal:
                    continue
                with pytest.raises(IllegalTransition):
                    check_transition(machine, current, target)


@pytest.mark.parametrize(
    ("machine", "current", "target", "message"),
    [
        (
            JOB,
            "completed",
            "running",
            "job abc12345: cannot go from completed to running (allowed from completed: none)",
        ),
        (
            JOB,
            "pending",
            "completed",
            "job abc12345: cannot go from pending to completed "
            "(allowed from pending: running, cancelled)",
        ),
        (
            SESSION,
            "terminated",
            "running",
            "session abc12345: cannot go from terminated to running "
            "(allowed from terminated: none)",
        ),
        (
            WORKER,
            "WORKING",
            "APPROVED",
            "worker abc12345: cannot go from WORKING to APPROVED "
            "(allowed from WORKING: IN_REVIEW, CANCELLED, FAILED)",
        ),
        (
            JOB,
            "running",
            "running",
            "job abc12345: cannot go from running to running "
            "(allowed from running: pending, completed, error, cancelled; already running)",
        ),
    ],
)
def test_illegal_move_message(
    machine: StateMachine, current: str, target: str, message: str
) -> None:
    with pytest.raises(IllegalTransition) as info:
        check_transition(machine, current, target, "abc12345")
    assert str(info.value) == message
    assert info.value.exit_code == 1


def test_unknown_status_names_the_known_ones() -> None:
    with pytest.raises(UnknownStatus, match=r"unknown job status 'runing' \(known: pending, "):
        check_transition(JOB, "pending", "runing")
    with pytest.raises(UnknownStatus, match="unknown worker status 'working'"):
        check_transition(WORKER, "working", "IN_REVIEW")
    assert issubclass(UnknownStatus, RegistryError)


def test_named_transitions() -> None:
    assert next_state(JOB, "pending", "pick") == "running"
    assert next_state(JOB, "running", "lease_expired") == "pending"
    assert next_state(JOB, "error", "resume") == "pending"
    assert next_state(SESSION, "running", "soft_stop") == "archived"
    assert next_state(WORKER, "IN_REVIEW", "reject") == "WORKING"
    assert next_state(WORKER, "APPROVED", "reject") == "WORKING"  # its merge conflicted
    with pytest.raises(IllegalTransition, match=r"job abc12345: cannot resume from completed"):
        next_state(JOB, "completed", "resume", "abc12345")
    with pytest.raises(IllegalTransition, match="no transition called 'fly'"):
        next_state(JOB, "pending", "fly")
    with pytest.raises(IllegalTransition, match="cannot merge from IN_REVIEW"):
        next_state(WORKER, "IN_REVIEW", "merge")


def test_final_states() -> None:
    assert {s for s in JOB.states if JOB.is_final(s)} == {"completed"}
    assert {s for s in SESSION.states if SESSION.is_final(s)} == {"terminated"}
    assert {s for s in WORKER.states if WORKER.is_final(s)} == {"COMPLETED"}  # resumable


def test_machine_table_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown states"):
        StateMachine("x", ("a",), "a", (Transition("go", frozenset({"a"}), "b", "went"),))
    with pytest.raises(ValueError, match="initial"):
        StateMachine("x", ("a",), "z", ())


# -- explain ---------------------------------------------------------------------


def test_explain_running_after_a_lease_expiry() -> None:
    history = [
        ("2026-06-19T13:50:00Z", None, "pending", ""),
        ("2026-06-19T13:55:00Z", "pending", "running", "picked by tmux:claude"),
        ("2026-06-19T13:58:00Z", "running", "pending", ""),
        ("2026-06-19T14:03:10Z", "pending", "running", "picked by tmux:claude"),
    ]
    assert explain(JOB, history) == (
        "running since 14:03:10 (picked by tmux:claude); "
        "retried 1\u00d7 after lease expiry at 13:58:00"
    )


def test_explain_terminal_with_repeats_and_dates() -> None:
    history = [
        StateChange("2026-06-18T09:00:00Z", None, "pending"),
        StateChange("2026-06-18T09:01:00Z", "pending", "running", transition="start"),
        StateChange("2026-06-18T09:02:00Z", "running", "error", "validation fail"),
        StateChange("2026-06-18T10:00:00Z", "error", "pending"),
        StateChange("2026-06-18T10:01:00Z", "pending", "running"),
        StateChange("2026-06-18T10:02:00Z", "running", "cancelled", "cancelled by user"),
        StateChange("2026-06-19T08:00:00Z", "cancelled", "pending", "job resume"),
        StateChange("2026-06-19T08:01:00Z", "pending", "running"),
        StateChange("2026-06-19T08:30:00Z", "running", "completed"),
    ]
    assert explain(JOB, history) == (
        "completed at 2026-06-19 08:30:00 (agent published completed); "
        "resumed 2\u00d7, last at 2026-06-19 08:00:00"
    )


def test_explain_uses_now_to_decide_on_dates() -> None:
    history = [("2026-06-19T14:00:00Z", None, "pending", "")]
    assert explain(JOB, history) == "pending since 14:00:00 (created)"
    tomorrow = datetime(2026, 6, 20, 9, 0, tzinfo=UTC)
    assert explain(JOB, history, now=tomorrow) == "pending since 2026-06-19 14:00:00 (created)"


def test_explain_worker_and_session() -> None:
    worker = [
        ("2026-06-19T10:00:00Z", None, "ASSIGNED", ""),
        ("2026-06-19T10:01:00Z", "ASSIGNED", "WORKING", ""),
        ("2026-06-19T10:05:00Z", "WORKING", "IN_REVIEW", ""),
        ("2026-06-19T10:06:00Z", "IN_REVIEW", "WORKING", "tests missing"),
        ("2026-06-19T10:09:00Z", "WORKING", "IN_REVIEW", ""),
    ]
    assert explain(WORKER, worker) == (
        "IN_REVIEW since 10:09:00 (submitted for review); sent back from review 1\u00d7 at 10:06:00"
    )
    session = [("2026-06-19T10:00:00Z", None, "running", ""), ("x", "running", "archived", "")]
    assert explain(SESSION, session) == "archived since x (soft-stopped, tmux left alive)"


def test_explain_empty_history() -> None:
    assert explain(SESSION, []) == "no recorded session state changes"


def test_a_requeue_by_hand_is_not_called_a_lease_expiry(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path / "state")
    job = registry.register("p", "a", "tmux:w")
    registry.pick("tmux:w")
    registry.set_status(job.job_id, "pending", transition=BY_HAND)
    why = registry.why(job.job_id)
    assert why.startswith("pending since ") and why.endswith("(set to pending by hand)")


def test_status_reasons_leave_out_moves_an_agent_event_made(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path / "state")
    by_event = registry.register("p", "a", "s", sign_events=False)
    registry.publish(by_event.job_id, "started")
    registry.publish(by_event.job_id, "completed")
    cancelled = registry.register("p", "a", "s")
    registry.cancel(cancelled.job_id)
    live = registry.register("p", "a", "s")
    ids = [by_event.job_id, cancelled.job_id, live.job_id]
    assert registry.status_reasons(ids) == {
        cancelled.job_id: "cancelled by user",
        live.job_id: "registered",
    }
