"""Conflicts seen early: would each live job's work merge into its base now, and
which other jobs touch the same files.

Each job's work tree is snapshotted (uncommitted work included, nothing
touched) and merged with the base's current tip in the object store (`git
merge-tree --write-tree`): no checkout, no index, nothing for anyone to clean up.
"""

from __future__ import annotations

import dataclasses
import itertools
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
    work: str = ""  # the commit of its work as it is now (snapshot of its tree)
    clashes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # job -> files
    """Other jobs whose work and this job's do not merge with each other, and where:
    whichever is merged second will conflict."""

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
        """'conflicts with job 1a2b3c4d in a.py; also touched by 5e6f7a8b (b.py, c.py)';
        '' when no other job touches its files."""
        clashing = [
            f"job {job_id} in {_few(files)}" for job_id, files in sorted(self.clashes.items())
        ]
        touching = [
            f"{job_id} ({_few(files)})"
            for job_id, files in sorted(self.overlaps.items())
            if job_id not in self.clashes
        ]
        parts = []
        if clashing:
            parts.append("conflicts with " + ", ".join(clashing))
        if touching:
            parts.append("also touched by " + ", ".join(touching))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {
            "clean": self.clean,
            "conflicts": [{"path": c.path, "kinds": list(c.kinds)} for c in self.conflicts],
            "touched": sorted(self.touched),
            "overlaps": {job: list(files) for job, files in sorted(self.overlaps.items())},
            "conflicts_with": {job: list(files) for job, files in sorted(self.clashes.items())},
            "problem": self.problem,
        }


def _few(files: Sequence[str], shown: int = 3) -> str:
    return ", ".join(files[:shown]) + (" \u2026" if len(files) > shown else "")


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
    return Outlook(review.job_id, review.base, merged.clean, merged.conflicts, touched, work=work)


def outlooks(reviews: Sequence[Review]) -> dict[str, Outlook]:
    """The outlook of every live review, with the jobs of one repository that touch
    the same files named on each other's outlook, and whether their work merges
    with each other (`git merge-tree` of the two, once per such pair)."""
    live = [review for review in reviews if review.state in LIVE]
    with ThreadPoolExecutor(max_workers=PARALLEL_JOBS) as pool:
        found = dict(zip([r.job_id for r in live], pool.map(outlook_of, live), strict=True))
    by_id = {review.job_id: review for review in live}
    pairs = [
        (one, other, shared)
        for one, other in itertools.combinations(sorted(found), 2)
        if by_id[one].repo == by_id[other].repo
        and (shared := tuple(sorted(found[one].touched & found[other].touched)))
    ]
    with ThreadPoolExecutor(max_workers=PARALLEL_JOBS) as pool:
        clashes = list(pool.map(lambda pair: _clash(by_id[pair[0]], found, pair), pairs))
    overlaps: dict[str, dict[str, tuple[str, ...]]] = {job_id: {} for job_id in found}
    clashing: dict[str, dict[str, tuple[str, ...]]] = {job_id: {} for job_id in found}
    for (one, other, shared), conflicted in zip(pairs, clashes, strict=True):
        overlaps[one][other] = overlaps[other][one] = shared
        if conflicted:
            clashing[one][other] = clashing[other][one] = conflicted
    return {
        job_id: dataclasses.replace(outlook, overlaps=overlaps[job_id], clashes=clashing[job_id])
        for job_id, outlook in found.items()
    }


def _clash(
    review: Review, found: dict[str, Outlook], pair: tuple[str, str, tuple[str, ...]]
) -> tuple[str, ...]:
    """The files where two jobs' work does not merge with each other (none when it
    does, or when either's work could not be read)."""
    one, other = found[pair[0]], found[pair[1]]
    if not one.work or not other.work:
        return ()
    try:
        merged = merge_tree(Path(review.worktree), one.work, other.work)
    except GitError:
        return ()
    return tuple(conflict.path for conflict in merged.conflicts)
