"""A job's branch and work tree: created from a base commit, inspected, removed."""

from __future__ import annotations

import shutil
from pathlib import Path

from app.git.errors import GitCommandFailed
from app.git.repo import Repository
from app.git.runner import first_line, run_git


def add_worktree(repo: Repository, path: Path, branch: str, start: str) -> None:
    """Create ``branch`` at commit ``start`` and check it out in a new work tree at ``path``.

    GitCommandFailed (nothing left behind) if the branch or the path already exists.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    result = run_git(
        ["worktree", "add", "--quiet", "-b", branch, str(path), start], repo.toplevel, ok=(0, 128)
    )
    if result.returncode != 0:
        raise GitCommandFailed(
            f"cannot create work tree {path} on branch {branch}: {first_line(result.stderr)}"
        )


def has_local_changes(path: Path) -> bool:
    """Whether a work tree holds anything `git add -A` would add: changed tracked
    files, or untracked ones that are not ignored."""
    result = run_git(["status", "--porcelain", "-z", "--untracked-files=normal"], path)
    return bool(result.stdout)


def remove_worktree(repo: Repository, path: Path) -> None:
    """Remove the work tree at ``path`` (whatever it holds) and git's record of it.

    A directory already gone leaves a stale record: pruned instead.
    """
    if path.exists():
        result = run_git(
            ["worktree", "remove", "--force", "--force", str(path)], repo.toplevel, ok=(0, 128)
        )
        if result.returncode != 0 and path.exists():
            # not a registered work tree any more (pruned by hand): a plain directory
            shutil.rmtree(path)
    run_git(["worktree", "prune"], repo.toplevel)


def delete_branch(repo: Repository, branch: str) -> bool:
    """Delete a local branch, merged or not; False if it did not exist."""
    if not repo.has_branch(branch):
        return False
    run_git(["branch", "--quiet", "-D", "--end-of-options", branch], repo.toplevel)
    return True
