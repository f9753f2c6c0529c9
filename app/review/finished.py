"""A work-tree job's agent has ended its work: its review comes up (WORKING -> IN_REVIEW),
with what its branch and work tree hold summarised.

Apart from the rest of the flow so that the supervision pass (app/orchestration)
can call it without the flow's tmux side: nothing here starts or stops an agent.
"""

from __future__ import annotations

from app.git.errors import GitError
from app.review.diffs import summarise
from registry.review import LIVE, Review, ReviewStore

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


def work_finished(
    reviews: ReviewStore,
    job_id: str,
    why: str = "agent finished its task",
    *,
    at_ms: int | None = None,
) -> Review | None:
    """WORKING -> IN_REVIEW with the summary; None for a job without a work tree, or
    one not WORKING. Called when the job completes, and when its agent goes idle
    after its task (the supervision pass)."""
    review = reviews.find(job_id)
    if review is None or review.state != "WORKING":
        return None
    try:
        summary = summarise(review)
    except GitError as error:
        reason = one_line(f"{why}; its work tree could not be read: {error}", 300)
        return reviews.move(job_id, "done", reason, at_ms=at_ms, expect=("WORKING",))
    return reviews.move(
        job_id, "done", f"{why}: {summary.describe()}", at_ms=at_ms, expect=("WORKING",),
        summary=summary,
    )  # fmt: skip
