"""The first poll over a real registry: every job the table will ever show at start,
already in table order, so the table never has to re-sort older rows in later."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings
from app.tui import registry_source
from app.tui.registry_source import RegistrySource
from app.tui.source import row_order
from registry.jobs import Registry


def test_first_poll_holds_live_jobs_and_the_newest_finished_in_order(
    state_dir: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry_source, "RECENT_FINISHED_JOBS", 3)
    jobs = [registry.register(f"p{n}", "custom", "alpha") for n in range(7)]
    live = {jobs[1].job_id, jobs[4].job_id}  # interleaved with finished ones
    for job in jobs:
        if job.job_id not in live:
            registry.publish(job.job_id, "started")
            registry.publish(job.job_id, "completed", "done")
    source = RegistrySource(Settings(state_dir))

    first = source.poll(0)

    # the table's order: live jobs first, then the finished ones, newest first
    shown = [row.job_id for row in first.jobs]
    assert sorted(first.jobs, key=row_order) == list(first.jobs)  # no re-sort needed
    assert set(shown[:2]) == live
    by_age = [job.job_id for job in sorted(jobs, key=lambda j: (j.created_at_ms, j.job_id))]
    newest_finished = [job_id for job_id in by_age if job_id not in live][-3:]
    assert set(shown[2:]) == set(newest_finished)
    later = source.poll(first.cursor)  # nothing older trickles in afterwards
    assert later.jobs == ()


def test_first_poll_of_an_empty_registry_has_no_jobs(state_dir: Path) -> None:
    assert RegistrySource(Settings(state_dir)).poll(0).jobs == ()


def test_a_job_finished_by_a_status_change_shows_why(state_dir: Path, registry: Registry) -> None:
    """A job cancelled, or failed by the control room, shows its status change where
    the last event and progress go, not the event from before it (a cancelled job
    read "permission_required · Allow edit of src/app.py?", a job failed by reconcile
    read nothing); a job its agent finished keeps the agent's own event."""
    asked, died, done = (registry.register(f"p{n}", "custom", "alpha") for n in range(3))
    registry.publish(asked.job_id, "started")
    registry.publish(asked.job_id, "permission_required", "Allow edit of src/app.py?")
    registry.cancel(asked.job_id)
    registry.publish(died.job_id, "started")
    registry.set_status(died.job_id, "error", "agent pane exited with status 127")
    registry.publish(done.job_id, "started")
    registry.publish(done.job_id, "completed", "all tests pass")
    source = RegistrySource(Settings(state_dir))

    first = source.poll(0)
    rows = {row.job_id: row for row in first.jobs}

    assert (rows[asked.job_id].last_event, rows[asked.job_id].progress_detail) == (
        "cancelled",
        "cancelled by user",
    )
    assert (rows[died.job_id].last_event, rows[died.job_id].progress_detail) == (
        "error",
        "agent pane exited with status 127",
    )
    assert (rows[done.job_id].last_event, rows[done.job_id].progress_detail) == (
        "completed",
        "all tests pass",
    )
    later = registry.register("p3", "custom", "alpha")
    registry.cancel(later.job_id)  # a later poll reads the same way
    (row,) = source.poll(first.cursor).jobs
    assert (row.last_event, row.progress_detail) == ("cancelled", "cancelled by user")
