"""A work-tree job's agent has ended its work: its review comes up (WORKING -> IN_REVIEW),
with what its branch and work tree hold summarised.

Apart from the rest of the flow so that the supervision pass (app/orchestration)
can call it without the flow's tmux side: nothing here starts or stops an agent.
"""

from __future__ import annotations

from pathlib import Path

from app.git.errors import GitError
from app.git.runner import run_git
from app.git.worktrees import has_local_changes
from app.review.diffs import summarise
from registry.review import LIVE, Review, ReviewStore
from registry.vocabulary import JobStatus, ReviewState

MAX_REASON_CHARS = 160


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """A reason as one short line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def under_review(reviews: ReviewStore, job_id: str) -> bool:
    """Whether the job has a live review: its agent's idle is then the end of a round
    of work (IN_REVIEW), not of the job (which ends when it is merged or discarded)."""
    review = reviews.find(job_id)
    return review is not None and review.state in LIVE


def tree_holds_work(reviews: ReviewStore, job_id: str) -> bool:
    """Whether a WORKING job's tree holds work of its agent: commits on its branch, or
    changes in the tree. Evidence that the agent worked when no look caught it
    working (a task done between two passes): its idle is then the end of its work,
    not a wait for its task. False for any other job."""
    review = reviews.find(job_id)
    if (
        review is None
        or review.state not in (ReviewState.ASSIGNED, ReviewState.WORKING)
        or review.removed_at
    ):
        return False
    worktree = Path(review.worktree)
    try:
        head = run_git(["rev-parse", "--verify", "HEAD"], worktree).text
        return head != review.base_commit or has_local_changes(worktree)
    except GitError:
        return False


def work_finished(
    reviews: ReviewStore,
    job_id: str,
    why: str = "agent finished its task",
    *,
    at_ms: int | None = None,
) -> Review | None:
    """WORKING -> IN_REVIEW with the summary; None for a job without a work tree, or
    one not WORKING. Called when the job completes, and when its agent goes idle
    after its task (the supervision pass); a review nobody caught up with its job's
    start yet (no control room, no review command since) is started first."""
    review = reviews.find(job_id)
    if review is not None and review.state == ReviewState.ASSIGNED:
        review = _started(reviews, review)
    if review is None or review.state != ReviewState.WORKING:
        return None
    try:
        summary = summarise(review)
    except GitError as error:
        reason = one_line(f"{why}; its work tree could not be read: {error}", 300)
        return reviews.move(job_id, "done", reason, at_ms=at_ms, expect=(ReviewState.WORKING,))
    return reviews.move(
        job_id, "done", f"{why}: {summary.describe()}", at_ms=at_ms, expect=(ReviewState.WORKING,),
        summary=summary,
    )  # fmt: skip


def _started(reviews: ReviewStore, review: Review) -> Review:
    """ASSIGNED -> WORKING, dated when its job started running (as `follow_jobs` does)."""
    moves = [move for found, move in reviews.job_moves() if found.job_id == review.job_id]
    if not moves or moves[0].status not in (JobStatus.RUNNING, JobStatus.COMPLETED):
        return review
    move = moves[0]
    at_ms = move.started_at_ms if move.started_at_ms is not None else move.at_ms
    return reviews.move(
        review.job_id, "start", "agent started", at_ms=at_ms, expect=(ReviewState.ASSIGNED,)
    )
