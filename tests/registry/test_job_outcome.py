"""The terminal-event state machine used by `subscribe` and `submit`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from registry.events import build_event
from registry.job_outcome import JobWaiter, wait_on_bus
from registry.jobs import Registry

JOB = "abcd1234"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_first_terminal_event_wins_and_later_ones_are_ignored() -> None:
    waiter = JobWaiter([JOB], timeout_sec=60, idle_timeout_sec=10, clock=Clock())
    assert waiter.offer(build_event(JOB, 1, "started")) == "new"
    assert waiter.offer(build_event(JOB, 1, "started")) == "duplicate"
    assert waiter.offer(build_event(JOB, 3, "completed")) == "terminal"
    assert waiter.offer(build_event(JOB, 2, "progress")) == "late"
    assert waiter.offer(build_event(JOB, 4, "error")) == "late"
    assert waiter.done and waiter.exit_code == 0
    assert waiter.outcomes[JOB].status == "completed"


def test_unexpected_jobs_are_dropped() -> None:
    waiter = JobWaiter([JOB], timeout_sec=60, idle_timeout_sec=10, clock=Clock())
    assert waiter.offer(build_event("ffff0000", 1, "completed")) == "unexpected"
    assert not waiter.done


def test_idle_timeout_resets_on_activity_and_wall_clock_caps_it() -> None:
    clock = Clock()
    waiter = JobWaiter([JOB], timeout_sec=25, idle_timeout_sec=10, clock=clock)
    clock.now = 9
    waiter.offer(build_event(JOB, 1, "progress"))
    clock.now = 18
    assert not waiter.check_deadlines()
    clock.now = 19
    assert waiter.check_deadlines()
    assert waiter.outcomes[JOB].status == "timeout" and "idle" in waiter.outcomes[JOB].reason
    assert waiter.exit_code == 2


def test_several_jobs_worst_outcome_sets_the_exit_code() -> None:
    waiter = JobWaiter([JOB, "ffff0000"], timeout_sec=60, idle_timeout_sec=60, clock=Clock())
    waiter.offer(build_event(JOB, 1, "completed"))
    assert not waiter.done
    waiter.offer(build_event("ffff0000", 1, "error", "tests failed"))
    assert waiter.done and waiter.exit_code == 1


def test_empty_job_list_is_refused() -> None:
    with pytest.raises(ValueError):
        JobWaiter([], timeout_sec=1, idle_timeout_sec=1)


def test_waiting_on_the_bus_sees_events_recorded_by_another_thread(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path)
    job = registry.register(prompt="p", agent="a", agent_session="s", sign_events=False)
    after = registry.bus.latest_seq()

    def agent() -> None:
        other = Registry.open(tmp_path)
        for name in ("started", "progress", "completed"):
            time.sleep(0.02)
            other.publish(job.job_id, name)

    thread = threading.Thread(target=agent)
    thread.start()
    seen: list[str] = []
    waiter = JobWaiter([job.job_id], timeout_sec=20, idle_timeout_sec=20)
    wait_on_bus(registry.bus, waiter, after_seq=after, on_event=lambda e, v: seen.append(e.event))
    thread.join()
    assert seen == ["started", "progress", "completed"]
    assert waiter.exit_code == 0
