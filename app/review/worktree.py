"""The seam `submit` uses: check a work-tree request, then make the job's branch and tree.

Checking (`plan_worktree`) happens before the job is stored, so a refused
submit leaves nothing behind; making it (`prepare_worktree`) needs the job id,
which names the branch (`orchestrate/<job_id>`) and the directory
(`<state>/worktrees/<job_id>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.git.errors import BaseNotFound, GitCommandFailed, GitError, NotARepository
from app.git.repo import Repository
from app.git.worktrees import add_worktree
from app.settings import Settings
from registry.jobstore import JobStore
from registry.review import BRANCH_PREFIX, ReviewStore
from registry.vocabulary import JobStatus

WORKTREES_DIR = "worktrees"


@dataclass(frozen=True)
class WorktreePlan:
    """A checked request: the repository, the base branch and its commit now, and
    where below the top of the tree the agent should start."""

    repo: Repository
    base: str
    base_commit: str
    subdir: Path


@dataclass(frozen=True)
class Worktree:
    """A job's work tree as made: its path, where its agent starts, its branch."""

    path: Path
    workdir: Path
    branch: str
    base: str


def worktree_root(settings: Settings) -> Path:
    """`<state>/worktrees/`, holding one work tree per job."""
    return settings.state_dir / WORKTREES_DIR


def in_git_repository(directory: Path) -> bool:
    """Whether ``directory`` is inside a git work tree (for the worktree=auto setting)."""
    try:
        Repository.at(directory)
    except GitError:
        return False
    return True


def default_worktree(settings: Settings, directory: Path) -> WorktreePlan | None:
    """The work tree a submit gets when it does not say (no --worktree/--no-worktree,
    the control room's new job): one from the current branch when the worktree
    setting is `auto` and ``directory`` is inside a git repository, else none."""
    if settings.worktree != "auto" or not in_git_repository(directory):
        return None
    return plan_worktree(directory)


def plan_worktree(workdir: Path, base: str | None = None) -> WorktreePlan:
    """Check that a job can get its own branch and work tree from ``workdir``'s repository.

    Refuses (one line each) a directory outside a git work tree, a base that is
    not a local branch (or a detached HEAD with no --base), and a tree in the
    middle of a merge, rebase, cherry-pick or revert.
    """
    directory = workdir.resolve()
    repo = Repository.at(directory)
    repo.refuse_if_busy()
    branch = base or repo.current_branch()
    if branch is None:
        raise BaseNotFound(f"HEAD is detached in {repo.toplevel}: name the base with --base BRANCH")
    commit = repo.branch_commit(branch)
    try:
        subdir = directory.relative_to(repo.toplevel)
    except ValueError:
        raise NotARepository(f"{directory} is not below {repo.toplevel}") from None
    return WorktreePlan(repo=repo, base=branch, base_commit=commit, subdir=subdir)


def prepare_worktree(
    settings: Settings, jobs: JobStore, job_id: str, plan: WorktreePlan
) -> Worktree:
    """Make branch `orchestrate/<job_id>` at the base's commit, check it out in
    `<state>/worktrees/<job_id>`, and record the job's review (ASSIGNED).

    If git refuses, the job is moved to error with the reason, and the error raised.
    """
    root = worktree_root(settings)
    path = root / job_id
    branch = f"{BRANCH_PREFIX}{job_id}"
    try:
        try:
            root.mkdir(parents=True, exist_ok=True)
            # A state dir inside the repository must not show the work trees as untracked.
            ignore = root / ".gitignore"
            if not ignore.exists():
                ignore.write_text("*\n", encoding="utf-8")
        except OSError as error:
            raise GitCommandFailed(f"cannot create {root}: {error.strerror}") from error
        add_worktree(plan.repo, path, branch, plan.base_commit)
    except GitError as error:
        jobs.set_status(job_id, JobStatus.ERROR, f"could not create its work tree: {error}")
        raise
    workdir = path / plan.subdir
    ReviewStore(jobs.bus).create(
        job_id,
        repo=str(plan.repo.toplevel),
        base=plan.base,
        base_commit=plan.base_commit,
        branch=branch,
        worktree=str(path),
        workdir=str(workdir),
    )
    return Worktree(path=path, workdir=workdir, branch=branch, base=plan.base)
