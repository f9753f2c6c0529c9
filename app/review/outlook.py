"""Conflicts seen early: would each live job's work merge into its base now, and
which other jobs touch the same files.

Each job's work tree is snapshotted (uncommitted work included, nothing
touched) and merged with the base's current tip in the object store (`git
merge-tree --write-tree`): no checkout, no index, nothing for anyone to clean up.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from app.git.diff import read_diff
from app.git.errors import GitError
from app.git.merge import Conflict, merge_tree
from app.git.repo import branch_commit, merge_base
from app.git.snapshot import snapshot_commit, take_snapshot
from registry.review import LIVE, Review

PARALLEL_JOBS = 2  # the machine has 2 cores; git does the work


@dataclass(frozen=True)
class Outlook:
    """One job's merge outlook against its base as it is now."""

    job_id: str
    base: str
    clean: bool | None  # None: could not tell (see ``problem``)
    conflicts: tuple[Conflict, ...] = ()
    touched: frozenset[str] = frozenset()
    overlaps: dict[str, tuple[str, ...]] = field(default_factory=dict)  # job -> shared files
    problem: str = ""

    def describe(self) -> str:
        """'merges cleanly into main', 'conflicts with main in a.py', or the problem."""
        if self.clean is None:
            return f"unknown ({self.problem})"
        if self.clean:
            return f"merges cleanly into {self.base}"
        files = ", ".join(c.path for c in self.conflicts[:5])
        more = f" (+{len(self.conflicts) - 5} more)" if len(self.conflicts) > 5 else ""
        return f"conflicts with {self.base} in {files}{more}"

    def describe_overlaps(self) -> str:
        """'also touched by 1a2b3c4d (a.py), 5e6f7a8b (b.py, c.py)'; '' when none."""
        if not self.overlaps:
            return ""
        parts = []
        for job_id, files in sorted(self.overlaps.items()):
            shown = ", ".join(files[:3]) + (" \u2026" if len(files) > 3 else "")
            parts.append(f"{job_id} ({shown})")
        return "also touched by " + ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {
            "clean": self.clean,
            "conflicts": [{"path": c.path, "kinds": list(c.kinds)} for c in self.conflicts],
            "touched": sorted(self.touched),
            "overlaps": {job: list(files) for job, files in sorted(self.overlaps.items())},
            "problem": self.problem,
        }


def outlook_of(review: Review) -> Outlook:
    """Merge the job's work tree as it is now into its base's tip, in the object store."""
    worktree = Path(review.worktree)
    if review.removed_at is not None or not worktree.is_dir():
        return Outlook(review.job_id, review.base, None, problem="work tree gone")
    try:
        snapshot = take_snapshot(worktree)
        tip = branch_commit(worktree, review.base)
        work = snapshot_commit(worktree, snapshot)
        start = merge_base(worktree, tip, work) or review.base_commit
        touched = frozenset(f.path for f in read_diff(worktree, start, work, patch=False).files)
        merged = merge_tree(worktree, tip, work)
    except GitError as error:
        return Outlook(review.job_id, review.base, None, problem=str(error))
    return Outlook(review.job_id, review.base, merged.clean, merged.conflicts, touched)


def outlooks(reviews: Sequence[Review]) -> dict[str, Outlook]:
    """The outlook of every live review, with the jobs of one repository that touch
    the same files named on each other's outlook."""
    live = [review for review in reviews if review.state in LIVE]
    with ThreadPoolExecutor(max_workers=PARALLEL_JOBS) as pool:
        found = dict(zip([r.job_id for r in live], pool.map(outlook_of, live), strict=True))
    repos = {review.job_id: review.repo for review in live}
    result: dict[str, Outlook] = {}
    for job_id, outlook in found.items():
        overlaps: dict[str, tuple[str, ...]] = {}
        for other_id, other in found.items():
            if other_id == job_id or repos[other_id] != repos[job_id]:
                continue
            shared = outlook.touched & other.touched
            if shared:
                overlaps[other_id] = tuple(sorted(shared))
        result[job_id] = Outlook(
            outlook.job_id,
            outlook.base,
            outlook.clean,
            outlook.conflicts,
            outlook.touched,
            overlaps,
            outlook.problem,
        )
    return result
