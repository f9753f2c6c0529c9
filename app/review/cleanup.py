"""`orchestrate gc`: the work trees of jobs merged or discarded long enough ago go.

A work tree holding anything uncommitted is never removed: it is listed as kept,
with the reason, and looked at again by the next gc.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.git.errors import GitError
from app.git.worktrees import has_local_changes
from app.review.flow import ReviewFlow
from bus.db import now_ms
from registry.review import Review
from registry.vocabulary import ReviewState

DAY_MS = 24 * 3600 * 1000
DEFAULT_DAYS = 7


@dataclass(frozen=True)
class Collected:
    """One work tree gc looked at: removed, or kept and why."""

    review: Review
    removed: bool
    branch_deleted: bool = False
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "job_id": self.review.job_id,
            "worktree": self.review.worktree,
            "branch": self.review.branch,
            "state": self.review.state,
            "removed": self.removed,
            "branch_deleted": self.branch_deleted,
            "reason": self.reason,
        }


def due(review: Review, older_than_ms: int) -> bool:
    """Merged or discarded before the cutoff, and its work tree not yet removed."""
    finished = review.state == ReviewState.COMPLETED or review.discarded
    return finished and review.removed_at is None and review.updated_at_ms <= older_than_ms


def collect(
    flow: ReviewFlow, days: float = DEFAULT_DAYS, *, dry_run: bool = False
) -> list[Collected]:
    """Remove the work trees (and branches) of reviews merged or discarded more than
    ``days`` ago; what was removed, and what was kept and why."""
    cutoff = now_ms() - int(days * DAY_MS)
    results: list[Collected] = []
    for review in flow.reviews.list(
        state=(ReviewState.COMPLETED, ReviewState.CANCELLED, ReviewState.FAILED)
    ):
        if not due(review, cutoff):
            continue
        worktree = Path(review.worktree)
        try:
            if worktree.is_dir() and has_local_changes(worktree):
                results.append(Collected(review, False, reason="uncommitted changes"))
                continue
            if dry_run:
                results.append(Collected(review, True, reason="would be removed"))
                continue
            _, branch_deleted = flow.remove_tree_and_branch(review)
        except GitError as error:
            results.append(Collected(review, False, reason=str(error)))
            continue
        after = flow.reviews.mark_removed(review.job_id, discarded=review.discarded)
        results.append(Collected(after, True, branch_deleted))
    return results
