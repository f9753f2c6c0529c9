"""One git repository as orchestrate sees it: where it is, its branches, its worktrees."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.git.errors import BaseNotFound, GitCommandFailed, NotARepository, OperationInProgress
from app.git.runner import run_git

# Files in a work tree's git dir that mean an operation is half done, and its name.
_IN_PROGRESS = (
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
)
FALLBACK_NAME = "orchestrate"
FALLBACK_EMAIL = "orchestrate@localhost"


@dataclass(frozen=True)
class Checkout:
    """One work tree of a repository (`git worktree list`): its path, HEAD and branch."""

    path: Path
    head: str
    branch: str | None  # None: detached or bare


@dataclass(frozen=True)
class Repository:
    """A work tree (``toplevel``) and the git dir its worktrees share (``common_dir``)."""

    toplevel: Path
    git_dir: Path
    common_dir: Path

    @classmethod
    def at(cls, directory: Path | str) -> Repository:
        """The repository whose work tree holds ``directory``; NotARepository otherwise."""
        path = Path(directory)
        if not path.is_dir():
            raise NotARepository(f"{path} is not a directory")
        try:
            result = run_git(
                ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], path
            )
        except GitCommandFailed:
            raise NotARepository(f"{path} is not inside a git work tree") from None
        lines = result.text.splitlines()
        if len(lines) != 3:
            raise NotARepository(f"{path} is not inside a git work tree")
        toplevel, git_dir, common = (Path(line) for line in lines)
        common = common if common.is_absolute() else (path / common)
        return cls(toplevel.resolve(), git_dir.resolve(), common.resolve())

    # -- reading ----------------------------------------------------------------
    def current_branch(self) -> str | None:
        """The branch checked out here; None when HEAD is detached."""
        result = run_git(["symbolic-ref", "--quiet", "--short", "HEAD"], self.toplevel, ok=(0, 1))
        return result.text or None if result.returncode == 0 else None

    def branch_commit(self, branch: str) -> str:
        """The commit a local branch points at; BaseNotFound if there is no such branch."""
        return branch_commit(self.toplevel, branch)

    def has_branch(self, branch: str) -> bool:
        """Whether ``refs/heads/<branch>`` exists."""
        result = run_git(
            ["show-ref", "--verify", "--quiet", f"refs/heads/{branch}"], self.toplevel, ok=(0, 1)
        )
        return result.returncode == 0

    def commits(self, *revisions: str) -> list[str]:
        """Full commit ids of several revisions in one call (GitCommandFailed if one is bad)."""
        result = run_git(["rev-parse", "--verify", "--end-of-options", *revisions], self.toplevel)
        return result.text.splitlines()

    def merge_base(self, one: str, other: str) -> str | None:
        """Their best common ancestor; None for unrelated histories."""
        return merge_base(self.toplevel, one, other)

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether ``older`` is reachable from ``newer``."""
        result = run_git(["merge-base", "--is-ancestor", older, newer], self.toplevel, ok=(0, 1))
        return result.returncode == 0

    def subjects(self, start: str, end: str) -> list[str]:
        """Subject lines of the commits in ``start..end``, oldest first."""
        result = run_git(
            ["log", "-z", "--reverse", "--format=%s", f"{start}..{end}", "--"], self.toplevel
        )
        return result.fields

    def operation_in_progress(self) -> str | None:
        """The merge, rebase, cherry-pick or revert this work tree is in the middle of."""
        for name, operation in _IN_PROGRESS:
            if (self.git_dir / name).exists():
                return operation
        return None

    def refuse_if_busy(self) -> None:
        """OperationInProgress when this work tree is mid-merge, mid-rebase..."""
        operation = self.operation_in_progress()
        if operation is not None:
            raise OperationInProgress(
                f"{self.toplevel} is in the middle of a {operation}: finish or abort it first"
            )

    def checkouts(self) -> list[Checkout]:
        """Every work tree of the repository, the main one first."""
        result = run_git(["worktree", "list", "--porcelain", "-z"], self.toplevel)
        found: list[Checkout] = []
        path, head, branch = "", "", None
        for field in [*result.fields, ""]:
            if not field:  # an empty field ends one work tree's record
                if path:
                    found.append(Checkout(Path(path), head, branch))
                path, head, branch = "", "", None
            elif field.startswith("worktree "):
                path = field.removeprefix("worktree ")
            elif field.startswith("HEAD "):
                head = field.removeprefix("HEAD ")
            elif field.startswith("branch "):
                branch = field.removeprefix("branch ").removeprefix("refs/heads/")
        return found

    def checkout_of(self, branch: str) -> Checkout | None:
        """The work tree that has ``branch`` checked out, if one has."""
        return next((c for c in self.checkouts() if c.branch == branch), None)

    def identity(self) -> dict[str, str]:
        """Environment for commits orchestrate makes: nothing when git knows who the user
        is (config or environment), else a fallback name, so such a commit never fails
        with "please tell me who you are"."""
        result = run_git(["var", "GIT_COMMITTER_IDENT"], self.toplevel, ok=(0, 128))
        if result.returncode == 0:
            return {}
        return {
            "GIT_AUTHOR_NAME": FALLBACK_NAME,
            "GIT_AUTHOR_EMAIL": FALLBACK_EMAIL,
            "GIT_COMMITTER_NAME": FALLBACK_NAME,
            "GIT_COMMITTER_EMAIL": FALLBACK_EMAIL,
        }


def branch_commit(cwd: Path, branch: str) -> str:
    """The commit local ``branch`` points at, read in any work tree of the repository
    at ``cwd``; BaseNotFound if there is no such branch."""
    result = run_git(
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"],
        cwd,
        ok=(0, 1, 128),
    )
    if result.returncode != 0 or not result.text:
        raise BaseNotFound(f"no local branch {branch!r} in {cwd}")
    return result.text


def merge_base(cwd: Path, one: str, other: str) -> str | None:
    """The best common ancestor of two commits; None for unrelated histories."""
    result = run_git(["merge-base", one, other], cwd, ok=(0, 1))
    return result.text or None
