"""Review records (registry/review.py) on a real SQLite file: the worker machine's moves,
their history and explanation, and the job moves a review follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.errors import IllegalTransition, InvalidJobInput
from registry.jobs import Registry
from registry.review import ReviewNotFound, ReviewStore, ReviewSummary


def store_with_job(tmp_path: Path) -> tuple[Registry, ReviewStore, str]:
    registry = Registry.open(tmp_path)
    job = registry.register("work", "demo", "s", sign_events=False)
    reviews = ReviewStore(registry.bus)
    reviews.create(
        job.job_id,
        repo="/r",
        base="main",
        base_commit="a" * 40,
        branch=f"orchestrate/{job.job_id}",
        worktree=f"/w/{job.job_id}",
        workdir=f"/w/{job.job_id}",
    )
    return registry, reviews, job.job_id


def test_the_flow_is_recorded_and_explained(tmp_path: Path) -> None:
    _, reviews, job_id = store_with_job(tmp_path)
    reviews.move(job_id, "start", "agent started")
    summary = ReviewSummary("b" * 40, 2, 3, 40, 2, 1)
    reviews.move(job_id, "done", "agent published completed", summary=summary)
    reviews.move(job_id, "reject", "changes requested: more tests")
    reviews.move(job_id, "done", "agent finished its task", summary=summary)
    reviews.move(job_id, "approve", "approved by user")
    done = reviews.move(job_id, "merge", "merged into main", merged=("squash", "c" * 40, "d" * 40))
    assert done.state == "COMPLETED" and done.merge_mode == "squash"
    assert done.summary == summary
    assert summary.describe() == "2 commits, 3 files +40 \u22122 (1 file uncommitted)"
    why = reviews.why(job_id)
    assert why.startswith("COMPLETED at ") and "(merged into main)" in why
    assert "sent back from review 1\u00d7" in why
    states = [change.to_state for change in reviews.history(job_id)]
    assert states == ["ASSIGNED", "WORKING", "IN_REVIEW", "WORKING", "IN_REVIEW", "APPROVED",
                      "COMPLETED"]  # fmt: skip


def test_illegal_and_raced_moves_are_refused_and_store_nothing(tmp_path: Path) -> None:
    _, reviews, job_id = store_with_job(tmp_path)
    with pytest.raises(IllegalTransition, match="cannot approve from ASSIGNED"):
        reviews.move(job_id, "approve", "too early")
    reviews.move(job_id, "start", "agent started")
    with pytest.raises(IllegalTransition, match="is WORKING now; cannot done"):
        reviews.move(job_id, "done", "stale", expect=("ASSIGNED",))
    assert len(reviews.history(job_id)) == 2
    with pytest.raises(ReviewNotFound):
        reviews.get("nope")
    with pytest.raises(InvalidJobInput, match="already has a work tree"):
        reviews.create(job_id, repo="/r", base="m", base_commit="a", branch="b", worktree="w",
                       workdir="w")  # fmt: skip


def test_job_moves_pairs_each_live_review_with_its_jobs_last_move(tmp_path: Path) -> None:
    registry, reviews, job_id = store_with_job(tmp_path)
    registry.set_status(job_id, "running", "picked")
    registry.publish(job_id, "completed", "done")
    [(review, move)] = reviews.job_moves()
    assert review.job_id == job_id and move.status == "completed"
    assert move.reason.startswith("agent published completed")
    assert move.started_at_ms is not None and move.started_at_ms <= move.at_ms
    assert reviews.count("ASSIGNED") == 1 and reviews.count("IN_REVIEW") == 0


def test_every_move_is_announced_on_the_bus(tmp_path: Path) -> None:
    registry, reviews, job_id = store_with_job(tmp_path)
    reviews.move(job_id, "start", "agent started")
    kinds = [m.type for m in registry.bus.read_after(0, limit=100)]
    assert kinds.count("review.status") == 2
