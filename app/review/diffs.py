"""What a job's branch holds against its base: the diff, its commits, and a summary.

The diff runs from the merge base of the base branch (as it is now) and the
job's branch, to a snapshot of the job's work tree, so uncommitted work is
included and nothing in the tree or its index is touched.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from app.git.diff import Diff, read_diff, read_worktree_diff
from app.git.errors import BaseNotFound, GitCommandFailed
from app.git.repo import Repository, branch_commit, merge_base
from app.git.runner import run_git
from app.git.snapshot import Snapshot, index_with_untracked, take_snapshot
from registry.review import Review, ReviewSummary


@dataclass(frozen=True)
class Commit:
    """One commit of the job's branch: its id and subject line."""

    sha: str
    subject: str


@dataclass(frozen=True)
class ReviewDiff:
    """A review's diff: from ``merge_base`` to the job's work tree as it is now."""

    review: Review
    base_tip: str
    merge_base: str
    head: str
    dirty: bool
    diff: Diff
    commits: tuple[Commit, ...] = ()


@dataclass(frozen=True)
class _Ends:
    """Where a review's diff starts and ends, and in which directory git runs."""

    cwd: Path
    base_tip: str
    merge_base: str
    head: str
    new: str  # the snapshot tree, or the head when there is no work tree
    dirty: bool
    snapshot: Snapshot | None


def _ends(review: Review) -> _Ends:
    """Read the base tip and the work tree's snapshot at once (two processes)."""
    worktree = Path(review.worktree)
    if review.removed_at is None and worktree.is_dir():
        cwd = worktree
        with ThreadPoolExecutor(max_workers=2) as pool:
            tip = pool.submit(_base_tip, cwd, review)
            snapshot = take_snapshot(cwd)
            base_tip = tip.result()
        head, new, dirty = snapshot.head, snapshot.tree, snapshot.dirty
        found: Snapshot | None = snapshot
    else:  # removed (discard, gc): the branch if it is still there, else the merge
        cwd = Path(review.repo)
        base_tip = _base_tip(cwd, review)
        repo = Repository.at(cwd)
        if not repo.has_branch(review.branch):
            raise GitCommandFailed(f"job {review.job_id}: its work tree and branch are gone")
        head = repo.branch_commit(review.branch)
        new, dirty, found = head, False, None
    start = merge_base(cwd, base_tip, head) or review.base_commit
    return _Ends(cwd, base_tip, start, head, new, dirty, found)


def _base_tip(cwd: Path, review: Review) -> str:
    """The base branch's commit now; where the job started if the base is gone."""
    try:
        return branch_commit(cwd, review.base)
    except BaseNotFound:
        return review.base_commit


def read_review_diff(review: Review, *, patch: bool = True, commits: bool = True) -> ReviewDiff:
    """The review's diff (``patch=False``: counts only) and the branch's commits; for
    a merged job, what the merge brought into its base."""
    if review.merged_commit:
        return _read_merged(review, patch=patch, commits=commits)
    worktree = Path(review.worktree)
    if review.removed_at is None and worktree.is_dir():
        try:
            return _read_live(review, worktree, patch=patch)
        except GitCommandFailed:
            if _has_branch(worktree, review.base):
                raise
            # the base branch is gone: diff from where the job started, below
    ends = _ends(review)
    with ThreadPoolExecutor(max_workers=2) as pool:
        listed = pool.submit(_commits, ends.cwd, ends.merge_base, ends.head) if commits else None
        diff = read_diff(ends.cwd, ends.merge_base, ends.new, patch=patch)
        found = listed.result() if listed is not None else ()
    return ReviewDiff(
        review=review,
        base_tip=ends.base_tip,
        merge_base=ends.merge_base,
        head=ends.head,
        dirty=ends.dirty,
        diff=diff,
        commits=found,
    )


def _read_merged(review: Review, *, patch: bool, commits: bool) -> ReviewDiff:
    """A merged job's diff: from the base commit the merge was made on to the commit
    it put in the base, whatever its work tree holds now (or if it is gone)."""
    cwd = Path(review.repo)
    if not cwd.is_dir():
        cwd = Path(review.worktree)
    merged = review.merged_commit or ""
    onto = review.merged_onto or run_git(["rev-parse", "--verify", f"{merged}^1"], cwd).text
    diff = read_diff(cwd, onto, merged, patch=patch)
    return ReviewDiff(
        review=review,
        base_tip=_base_tip(cwd, review),
        merge_base=onto,
        head=merged,
        dirty=False,
        diff=diff,
        commits=_commits(cwd, onto, merged) if commits else (),
    )


def _read_live(review: Review, worktree: Path, *, patch: bool) -> ReviewDiff:
    """A live work tree's diff in one round of git processes, all at once: the diff
    (`git diff --merge-base`), the tree's status, the two tips, and the branch's
    commits with their boundary (the merge base). Only untracked files cost a
    second diff, through an index that holds them; only a branch that merged its
    base in (two boundary commits) costs a `git merge-base`."""
    base = f"refs/heads/{review.base}"
    with ThreadPoolExecutor(max_workers=3) as pool:
        diff_job = pool.submit(read_worktree_diff, worktree, base, patch=patch)
        status_job = pool.submit(
            run_git, ["status", "--porcelain", "-z", "--untracked-files=all"], worktree
        )
        range_job = pool.submit(_commit_range, worktree, base)
        tip, head = run_git(["rev-parse", base, "HEAD"], worktree).text.splitlines()
        commits, boundary = range_job.result()
        status = _untracked(status_job.result().fields)
        diff = diff_job.result()
    if not commits:
        start = head  # nothing of HEAD's is missing from the base: HEAD is in it
    elif len(boundary) == 1:
        start = boundary[0]
    else:
        start = merge_base(worktree, tip, head) or tip
    dirty, untracked = status
    if untracked:
        with index_with_untracked(worktree, untracked) as env:
            diff = read_worktree_diff(worktree, base, env=env, patch=patch)
    return ReviewDiff(
        review=review,
        base_tip=tip,
        merge_base=start,
        head=head,
        dirty=dirty,
        diff=diff,
        commits=commits,
    )


def _commit_range(cwd: Path, base: str) -> tuple[tuple[Commit, ...], list[str]]:
    """The commits of HEAD that ``base`` lacks, newest first, and the boundary of that
    range (for a branch made from the base: the merge base)."""
    result = run_git(["log", "-z", "--boundary", "--format=%m%H %s", f"{base}..HEAD", "--"], cwd)
    commits: list[Commit] = []
    boundary: list[str] = []
    for field in result.fields:
        mark, rest = field[:1], field[1:]
        sha, _, subject = rest.partition(" ")
        if mark == "-":
            boundary.append(sha)
        else:
            commits.append(Commit(sha, subject))
    return tuple(commits), boundary


def _untracked(status: list[str]) -> tuple[bool, list[str]]:
    """From `git status --porcelain -z`: whether anything is uncommitted, and the
    untracked paths (a rename's or copy's second field is its old path, skipped)."""
    untracked: list[str] = []
    fields = iter(status)
    for entry in fields:
        if entry.startswith("?? "):
            untracked.append(entry[3:])
        elif entry[:1] in ("R", "C"):
            next(fields, None)
    return bool(status), untracked


def _has_branch(cwd: Path, branch: str) -> bool:
    try:
        branch_commit(cwd, branch)
    except BaseNotFound:
        return False
    return True


def _commits(cwd: Path, merge_base: str, head: str) -> tuple[Commit, ...]:
    result = run_git(["log", "-z", "--format=%H %s", f"{merge_base}..{head}", "--"], cwd)
    commits = []
    for field in result.fields:
        sha, _, subject = field.partition(" ")
        commits.append(Commit(sha, subject))
    return tuple(commits)


def summarise(review: Review) -> ReviewSummary:
    """What the branch and its work tree hold now, for the IN_REVIEW record."""
    ends = _ends(review)
    diff = read_diff(ends.cwd, ends.merge_base, ends.new, patch=False)
    count = run_git(["rev-list", "--count", f"{ends.merge_base}..{ends.head}"], ends.cwd).text
    uncommitted = 0
    if ends.snapshot is not None and ends.snapshot.dirty:
        changed = run_git(
            ["diff", "-z", "--name-only", ends.snapshot.head_tree, ends.snapshot.tree], ends.cwd
        )
        uncommitted = len(changed.fields)
    return ReviewSummary(
        head=ends.head,
        commits=int(count or 0),
        files=len(diff.files),
        added=diff.added,
        deleted=diff.deleted,
        uncommitted_files=uncommitted,
    )
