"""Approving a job's work and merging its branch into the base, or nothing at all.

Uncommitted work in the job's tree is committed on its branch first (a commit
naming the job). The merge is then made in the object store (app/git/merge.py)
and the base moved by compare-and-swap; a conflict, a base that moved, or a
checkout of the base whose local changes are in the way leave the base
untouched and the job APPROVED, with the conflicting files recorded.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from app.git.errors import BaseMoved, GitCommandFailed
from app.git.merge import Conflict, advance_branch, commit_all, commit_tree, merge_tree, rebase
from app.git.repo import Repository
from app.review.flow import ReviewFlow
from registry import states
from registry.errors import RegistryError
from registry.review import MERGE_MODES, Review
from registry.vocabulary import JobStatus, ReviewState

MERGE_ATTEMPTS = 3  # a base that moves under the merge (another approve) is retried
TITLE_CHARS = 72


@dataclass(frozen=True)
class Approval:
    """What `approve` did: the review after it, and the merge or its conflicts."""

    review: Review
    merged_commit: str | None = None
    conflicts: tuple[Conflict, ...] = ()
    committed_uncommitted: str | None = None  # the commit made of uncommitted work
    moved_in: str = ""  # "ref", or the work tree where the base was checked out

    @property
    def merged(self) -> bool:
        return self.merged_commit is not None


def approve(flow: ReviewFlow, job_id: str, mode: str = "merge") -> Approval:
    """IN_REVIEW -> APPROVED, then merge into the base -> COMPLETED.

    An APPROVED job whose last merge failed is merged again. Raises
    IllegalTransition for a job in any other state, BaseMoved or
    CheckoutInTheWay (nothing merged, still APPROVED) when the base cannot move.
    """
    if mode not in MERGE_MODES:
        raise GitCommandFailed(f"merge mode must be one of {', '.join(MERGE_MODES)}, not {mode!r}")
    review = flow.reviews.get(job_id)
    if review.state != ReviewState.APPROVED:
        states.next_state(states.WORKER, review.state, "approve", job_id)
        review = flow.reviews.move(
            job_id, "approve", "approved by user", expect=(ReviewState.IN_REVIEW,)
        )
    return _merge(flow, review, mode)


def _merge(flow: ReviewFlow, review: Review, mode: str) -> Approval:
    worktree = Path(review.worktree)
    if review.removed_at is not None or not worktree.is_dir():
        raise GitCommandFailed(f"job {review.job_id}: its work tree {worktree} is gone")
    repo = Repository.at(worktree)
    identity = repo.identity()
    title = _title(flow.registry.get(review.job_id).prompt)
    committed = commit_all(
        worktree,
        f"orchestrate job {review.job_id}: uncommitted work at approval\n\n{title}\n",
        identity,
    )
    for attempt in range(1, MERGE_ATTEMPTS + 1):
        head = repo.branch_commit(review.branch)
        base_tip = repo.branch_commit(review.base)
        if repo.is_ancestor(head, base_tip):  # merged already (by hand, or a retry)
            start = repo.merge_base(review.base_commit, head) or review.base_commit
            return _completed(flow, review, mode, (head, start), committed, "ref")
        if mode == "rebase":
            target, conflicts = (
                (head, ()) if repo.is_ancestor(base_tip, head) else rebase(worktree, base_tip)
            )
        else:
            outcome = merge_tree(repo.toplevel, base_tip, head)
            conflicts = outcome.conflicts
            target = ""
            if outcome.clean:
                target = commit_tree(
                    repo.toplevel,
                    outcome.tree,
                    [base_tip, head] if mode == "merge" else [base_tip],
                    _message(review, mode, title, repo, base_tip, head),
                    identity,
                )
        if conflicts:
            review = flow.reviews.set_conflicts(review.job_id, [c.describe() for c in conflicts])
            return Approval(review, conflicts=conflicts, committed_uncommitted=committed)
        try:
            where = advance_branch(
                repo, review.base, base_tip, target, f"orchestrate: {mode} job {review.job_id}"
            )
        except BaseMoved:
            if attempt == MERGE_ATTEMPTS:
                raise
            continue
        return _completed(flow, review, mode, (target, base_tip), committed, where)
    raise AssertionError("unreachable")  # the loop returns or raises


def _completed(
    flow: ReviewFlow,
    review: Review,
    mode: str,
    merged: tuple[str, str],
    committed: str | None,
    where: str,
) -> Approval:
    """COMPLETED: ``merged`` is the commit now in the base and the base commit it was
    made on (the merged diff runs from one to the other)."""
    commit, onto = merged
    reason = f"merged into {review.base} ({mode}, {commit[:12]})"
    done = flow.reviews.move(
        review.job_id, "merge", reason, expect=(ReviewState.APPROVED,), merged=(mode, commit, onto)
    )
    _complete_job(flow, review.job_id, reason)
    return Approval(done, merged_commit=commit, committed_uncommitted=committed, moved_in=where)


def _complete_job(flow: ReviewFlow, job_id: str, reason: str) -> None:
    """Merged is done: a job still running (its agent idle in its pane, kept for
    changes that were not needed) is completed."""
    with contextlib.suppress(RegistryError):  # it ended meanwhile: nothing to do
        if flow.registry.get(job_id).status == JobStatus.RUNNING:
            flow.registry.set_status(job_id, JobStatus.COMPLETED, reason)


def _title(prompt: str) -> str:
    """The prompt's first line, short enough for a commit subject."""
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1] + "\u2026"


def _message(
    review: Review, mode: str, title: str, repo: Repository, base_tip: str, head: str
) -> str:
    if mode == "merge":
        return (
            f"Merge orchestrate job {review.job_id}: {title}\n\n"
            f"Branch {review.branch} into {review.base}.\n"
        )
    start = repo.merge_base(base_tip, head) or review.base_commit
    subjects = repo.subjects(start, head)
    listed = "".join(f"* {subject}\n" for subject in subjects)
    return (
        f"{title}\n\nOrchestrate job {review.job_id}, {len(subjects)} commit(s) of "
        f"{review.branch} squashed:\n\n{listed}"
    )
