"""Merging a job's branch into its base without touching any checkout that has work in it.

The merge is computed in the object store (`git merge-tree --write-tree`, then
`git commit-tree`), so a conflict leaves nothing behind. Only then does the base
move, by compare-and-swap: `git update-ref NEW OLD` when the base is checked out
nowhere, else a fast-forward of the work tree that has it checked out
(`git merge --ff-only`), which carries that tree's local changes along and
refuses, changing nothing, if the merge would overwrite any of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.git.errors import BaseMoved, CheckoutInTheWay, GitCommandFailed
from app.git.repo import Repository
from app.git.runner import first_line, run_git


@dataclass(frozen=True)
class Conflict:
    """One file that does not merge, and what kind of conflict git found there."""

    path: str
    kinds: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"{self.path} ({', '.join(self.kinds)})" if self.kinds else self.path


@dataclass(frozen=True)
class MergeTree:
    """The outcome of merging two commits in the object store: a tree, or conflicts."""

    tree: str
    conflicts: tuple[Conflict, ...] = field(default_factory=tuple)

    @property
    def clean(self) -> bool:
        return not self.conflicts


def merge_tree(cwd: Path, ours: str, theirs: str) -> MergeTree:
    """Merge ``theirs`` into ``ours`` without a work tree or index (git >= 2.38), in
    any work tree of the repository (``cwd``)."""
    result = run_git(
        ["merge-tree", "--write-tree", "--name-only", "-z", ours, theirs], cwd, ok=(0, 1)
    )
    fields = result.fields
    tree = fields[0] if fields else ""
    if result.returncode == 0:
        return MergeTree(tree)
    # conflicted paths up to an empty field, then messages: count, paths, kind, text
    paths: list[str] = []
    index = 1
    while index < len(fields) and fields[index]:
        paths.append(fields[index])
        index += 1
    kinds: dict[str, list[str]] = {path: [] for path in paths}
    index += 1
    while index < len(fields):
        try:
            count = int(fields[index])
        except ValueError:
            break
        touched = fields[index + 1 : index + 1 + count]
        kind = fields[index + 1 + count] if index + 1 + count < len(fields) else ""
        index += count + 3
        if kind.startswith("CONFLICT"):
            name = kind.removeprefix("CONFLICT").strip(" ()")
            for path in touched:
                if path in kinds and name not in kinds[path]:
                    kinds[path].append(name)
    unique = dict.fromkeys(paths)
    return MergeTree(tree, tuple(Conflict(path, tuple(kinds[path])) for path in unique))


def commit_tree(cwd: Path, tree: str, parents: list[str], message: str, env: dict[str, str]) -> str:
    """A commit of ``tree`` on ``parents``; nothing points at it yet."""
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return run_git([*args, "-F", "-"], cwd, env=env, stdin=message.encode()).text


def commit_all(worktree: Path, message: str, env: dict[str, str]) -> str | None:
    """Commit everything uncommitted in a work tree on its branch; the new commit, or
    None when there was nothing to commit."""
    run_git(["add", "--all", "--", "."], worktree)
    staged = run_git(["diff", "--cached", "--quiet"], worktree, ok=(0, 1))
    if staged.returncode == 0:
        return None
    run_git(
        ["commit", "--quiet", "--no-verify", "-F", "-"], worktree, env=env, stdin=message.encode()
    )
    return run_git(["rev-parse", "HEAD"], worktree).text


def rebase(worktree: Path, onto: str) -> tuple[str, tuple[Conflict, ...]]:
    """Rebase the branch checked out in ``worktree`` onto ``onto``: its new head, or,
    on a conflict, the files that conflict (the rebase is aborted, the branch as before)."""
    result = run_git(["rebase", "--quiet", "--no-autostash", onto], worktree, ok=(0, 1, 128))
    if result.returncode == 0:
        return run_git(["rev-parse", "HEAD"], worktree).text, ()
    unmerged = run_git(["diff", "--name-only", "-z", "--diff-filter=U"], worktree).fields
    run_git(["rebase", "--abort"], worktree, ok=(0, 128))
    if not unmerged:
        raise GitCommandFailed(f"rebase onto {onto[:12]} failed: {first_line(result.stderr)}")
    return "", tuple(Conflict(path, ("content",)) for path in unmerged)


def advance_branch(repo: Repository, branch: str, old: str, new: str, why: str) -> str:
    """Move ``branch`` from ``old`` to ``new`` (a descendant of it) without disturbing
    anyone's checkout; returns where that happened ("ref" or the work tree's path).

    BaseMoved if the branch is no longer at ``old``; CheckoutInTheWay if it is
    checked out in a work tree whose local changes the update would overwrite.
    Either way nothing changed.
    """
    checkout = repo.checkout_of(branch)
    if checkout is None:
        result = run_git(
            ["update-ref", "-m", why, f"refs/heads/{branch}", new, old],
            repo.toplevel,
            ok=(0, 1, 128),
        )
        if result.returncode != 0:
            raise BaseMoved(f"{branch} moved while the merge was prepared; approve again")
        return "ref"
    head = run_git(["rev-parse", "HEAD"], checkout.path).text
    if head != old:
        raise BaseMoved(f"{branch} moved while the merge was prepared; approve again")
    busy = Repository.at(checkout.path).operation_in_progress()
    if busy is not None:
        raise CheckoutInTheWay(
            f"{branch} is checked out in {checkout.path}, which is in the middle of a {busy}"
        )
    result = run_git(["merge", "--ff-only", "--quiet", new], checkout.path, ok=(0, 1, 128))
    if result.returncode != 0:
        if "fast-forward" in result.stderr:  # a commit landed there since the check above
            raise BaseMoved(f"{branch} moved while the merge was prepared; approve again")
        files = [line.strip() for line in result.stderr.splitlines() if line.startswith("\t")]
        what = ", ".join(files[:10]) + (" …" if len(files) > 10 else "")
        raise CheckoutInTheWay(
            f"{branch} is checked out in {checkout.path}, where the merge would overwrite "
            f"local changes ({what or first_line(result.stderr)}): commit or stash them "
            "there, then approve again"
        )
    return str(checkout.path)
