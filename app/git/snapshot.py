"""A work tree as it would be committed now, without touching its index or files.

The tree is written through a copy of the work tree's index (`GIT_INDEX_FILE`),
so `git add -A` only hashes files whose stat data changed, and neither the
agent's index nor its staging is ever modified. The objects land in the shared
object store; unreferenced, git's own gc prunes them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.git.runner import run_git

# A snapshot commit has fixed metadata, so the same tree on the same HEAD is the
# same object: looking again and again (the control room does) writes nothing new.
_SNAPSHOT_ENV = {
    "GIT_AUTHOR_NAME": "orchestrate",
    "GIT_AUTHOR_EMAIL": "orchestrate@localhost",
    "GIT_AUTHOR_DATE": "@0 +0000",
    "GIT_COMMITTER_NAME": "orchestrate",
    "GIT_COMMITTER_EMAIL": "orchestrate@localhost",
    "GIT_COMMITTER_DATE": "@0 +0000",
}


@dataclass(frozen=True)
class Snapshot:
    """A work tree's committed head and the tree of everything in it now."""

    head: str
    tree: str
    head_tree: str

    @property
    def dirty(self) -> bool:
        """Whether the work tree holds changes not committed on its branch."""
        return self.tree != self.head_tree


def take_snapshot(worktree: Path) -> Snapshot:
    """The work tree's HEAD and the tree `git add -A && git commit` would record."""
    head, head_tree, index = run_git(
        ["rev-parse", "HEAD", "HEAD^{tree}", "--git-path", "index"], worktree
    ).text.splitlines()
    index_path = Path(index) if os.path.isabs(index) else worktree / index
    with tempfile.TemporaryDirectory(prefix="orchestrate-index-") as scratch:
        temporary = Path(scratch) / "index"
        if index_path.exists():
            shutil.copyfile(index_path, temporary)
            env = {"GIT_INDEX_FILE": str(temporary)}
        else:
            env = {"GIT_INDEX_FILE": str(temporary)}
            run_git(["read-tree", "HEAD"], worktree, env=env)
        run_git(["add", "--all", "--", "."], worktree, env=env)
        tree = run_git(["write-tree"], worktree, env=env).text
    return Snapshot(head=head, tree=tree, head_tree=head_tree)


@contextmanager
def index_with_untracked(worktree: Path, paths: Sequence[str]) -> Iterator[dict[str, str]]:
    """An environment whose index is a copy of the work tree's with ``paths`` (its
    untracked files) added as intent-to-add, so `git diff` shows them as new files;
    the work tree's own index is only read."""
    index = run_git(["rev-parse", "--git-path", "index"], worktree).text
    index_path = Path(index) if os.path.isabs(index) else worktree / index
    with tempfile.TemporaryDirectory(prefix="orchestrate-index-") as scratch:
        temporary = Path(scratch) / "index"
        env = {"GIT_INDEX_FILE": str(temporary)}
        if index_path.exists():
            shutil.copyfile(index_path, temporary)
        else:
            run_git(["read-tree", "HEAD"], worktree, env=env)
        if paths:  # literal: a file named like a glob ("[x].txt") means itself
            names = b"\0".join(path.encode("utf-8", "surrogateescape") for path in paths)
            run_git(
                ["add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul"],
                worktree,
                env={**env, "GIT_LITERAL_PATHSPECS": "1"},
                stdin=names,
            )
        yield env


def snapshot_commit(worktree: Path, snapshot: Snapshot) -> str:
    """A commit of the snapshot's tree on its HEAD (HEAD itself when nothing is
    uncommitted), for the commands that take commits (`merge-tree`)."""
    if not snapshot.dirty:
        return snapshot.head
    result = run_git(
        ["commit-tree", snapshot.tree, "-p", snapshot.head, "-m", "orchestrate: work in progress"],
        worktree,
        env=_SNAPSHOT_ENV,
    )
    return result.text
