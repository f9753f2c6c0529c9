"""Real git repositories in tmp dirs, and jobs with their own work tree in them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from app.review.flow import ReviewFlow
from app.review.worktree import plan_worktree, prepare_worktree
from app.settings import Settings
from registry.jobs import Registry


def git(cwd: Path, *args: str) -> str:
    """Run git as a user would (tests only), returning stdout."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository on branch main with one commit holding ``files``."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "hello\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def commit_file(cwd: Path, name: str, text: str, message: str = "") -> str:
    """Write, add and commit one file; the new commit id."""
    target = cwd / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    git(cwd, "add", "--", name)
    git(cwd, "commit", "-q", "-m", message or f"edit {name}")
    return git(cwd, "rev-parse", "HEAD")


def start_job(
    settings: Settings, repo: Path, prompt: str = "improve the code", base: str | None = None
) -> tuple[str, Path]:
    """Register a job, give it its work tree (as `submit --worktree` does), and mark it
    running as its agent start would; (job id, work tree)."""
    registry = Registry.open(settings.state_dir)
    plan = plan_worktree(repo, base)
    job = registry.register(prompt, "demo", "tests", sign_events=False)
    tree = prepare_worktree(settings, registry, job.job_id, plan)
    registry.set_status(job.job_id, "running", "picked by tests")
    return job.job_id, tree.path


def finish_job(settings: Settings, job_id: str) -> None:
    """The agent's completed event, then the flow catching up (as the control room does)."""
    registry = Registry.open(settings.state_dir)
    registry.publish(job_id, "completed", "done")
    ReviewFlow(settings, registry=registry).follow_jobs()
