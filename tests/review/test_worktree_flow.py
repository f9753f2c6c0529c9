"""A job per branch and work tree, and the review flow over it, against real git repos."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.git.errors import BaseNotFound, NotARepository, OperationInProgress
from app.review.flow import ReviewFlow
from app.review.worktree import plan_worktree, prepare_worktree
from app.settings import Settings
from registry.jobs import Registry
from registry.review import ReviewStore
from tests.review.git_repos import commit_file, finish_job, git, make_repo, start_job


def test_two_jobs_edit_the_same_file_without_seeing_each_other(
    settings: Settings, repo: Path
) -> None:
    one, tree_one = start_job(settings, repo, "first")
    two, tree_two = start_job(settings, repo, "second")
    (tree_one / "src/app.py").write_text("def main():\n    return 'one'\n")
    (tree_two / "src/app.py").write_text("def main():\n    return 'two'\n")
    assert "'one'" in (tree_one / "src/app.py").read_text()
    assert "'two'" in (tree_two / "src/app.py").read_text()
    assert (repo / "src/app.py").read_text() == "def main():\n    return 1\n"
    assert git(tree_one, "branch", "--show-current") == f"orchestrate/{one}"
    assert git(tree_two, "branch", "--show-current") == f"orchestrate/{two}"
    assert tree_one.parent == settings.state_dir / "worktrees" != tree_two


def test_the_job_records_repo_base_branch_and_worktree(settings: Settings, repo: Path) -> None:
    job_id, tree = start_job(settings, repo)
    review = ReviewStore(Registry.open(settings.state_dir).bus).get(job_id)
    assert (review.repo, review.base, review.branch) == (str(repo), "main", f"orchestrate/{job_id}")
    assert review.worktree == str(tree) and review.state == "ASSIGNED"
    assert review.base_commit == git(repo, "rev-parse", "main")


def test_job_get_shows_where_the_job_works(cli: Any, settings: Settings, repo: Path) -> None:
    job_id, tree = start_job(settings, repo)
    shown = json.loads(cli("job", "get", "--job", job_id).stdout)["worktree"]
    assert shown["repo"] == str(repo) and shown["base"] == "main"
    assert shown["branch"] == f"orchestrate/{job_id}" and shown["worktree"] == str(tree)
    assert shown["state"] == "ASSIGNED"
    plain = Registry.open(settings.state_dir).register("plain", "demo", "s", sign_events=False)
    assert "worktree" not in json.loads(cli("job", "get", "--job", plain.job_id).stdout)


def test_the_agent_starts_in_the_same_subdirectory_of_its_tree(
    settings: Settings, repo: Path
) -> None:
    registry = Registry.open(settings.state_dir)
    plan = plan_worktree(repo / "src")
    job = registry.register("x", "demo", "tests", sign_events=False)
    from app.review.worktree import prepare_worktree

    made = prepare_worktree(settings, registry, job.job_id, plan)
    assert made.workdir == made.path / "src" and (made.workdir / "app.py").is_file()


def test_refusals_come_before_anything_is_stored(
    settings: Settings, repo: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotARepository, match="not inside a git work tree"):
        plan_worktree(plain)
    with pytest.raises(BaseNotFound, match="no local branch 'nope'"):
        plan_worktree(repo, "nope")
    git(repo, "checkout", "-q", "-b", "side")
    commit_file(repo, "README.md", "side\n")
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "README.md", "main\n")
    result = subprocess.run(["git", "merge", "side"], cwd=repo, capture_output=True, check=False)
    assert result.returncode != 0  # the conflict leaves the tree mid-merge
    with pytest.raises(OperationInProgress, match="in the middle of a merge"):
        plan_worktree(repo)
    git(repo, "merge", "--abort")
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(BaseNotFound, match="HEAD is detached"):
        plan_worktree(repo)
    assert plan_worktree(repo, "side").base == "side"


def test_completed_job_comes_up_for_review_with_its_work_summarised(
    settings: Settings, repo: Path
) -> None:
    job_id, tree = start_job(settings, repo)
    commit_file(tree, "src/app.py", "def main():\n    return 2\n", "return 2")
    (tree / "NOTES.md").write_text("uncommitted\nnotes\n")
    finish_job(settings, job_id)
    store = ReviewStore(Registry.open(settings.state_dir).bus)
    review = store.get(job_id)
    assert review.state == "IN_REVIEW"
    assert review.summary is not None
    assert review.summary.describe() == "1 commit, 2 files +3 \u22121 (1 file uncommitted)"
    why = store.why(job_id)
    assert why.startswith("IN_REVIEW since ") and "agent published completed" in why
    assert [c.to_state for c in store.history(job_id)] == ["ASSIGNED", "WORKING", "IN_REVIEW"]


def test_a_failed_or_cancelled_job_takes_its_review_along_and_resume_brings_it_back(
    settings: Settings, repo: Path
) -> None:
    registry = Registry.open(settings.state_dir)
    flow = ReviewFlow(settings, registry=registry)
    failing, _ = start_job(settings, repo)
    cancelled, _ = start_job(settings, repo)
    registry.publish(failing, "error", "compiler crashed")
    registry.cancel(cancelled)
    flow.follow_jobs()
    assert flow.reviews.get(failing).state == "FAILED"
    assert "compiler crashed" in flow.reviews.why(failing)
    assert flow.reviews.get(cancelled).state == "CANCELLED"
    registry.resume(cancelled)
    flow.follow_jobs()
    assert flow.reviews.get(cancelled).state == "WORKING"
    assert "resumed 1\u00d7" in flow.reviews.why(cancelled)


def test_following_twice_moves_once(settings: Settings, repo: Path) -> None:
    job_id, _ = start_job(settings, repo)
    finish_job(settings, job_id)
    flow = ReviewFlow(settings)
    assert flow.follow_jobs() == []
    assert len(flow.reviews.history(job_id)) == 3


def test_on_work_finished_is_a_no_op_for_other_jobs(settings: Settings, repo: Path) -> None:
    registry = Registry.open(settings.state_dir)
    plain = registry.register("no tree", "demo", "tests", sign_events=False)
    flow = ReviewFlow(settings, registry=registry)
    assert flow.on_work_finished(plain.job_id) is None
    waiting = registry.register("not started", "demo", "tests", sign_events=False)
    prepare_worktree(settings, registry, waiting.job_id, plan_worktree(repo))
    assert flow.on_work_finished(waiting.job_id) is None  # its agent has not started
    assert flow.reviews.get(waiting.job_id).state == "ASSIGNED"


def test_a_round_that_ends_before_anyone_followed_its_start_is_caught_up(
    settings: Settings, repo: Path
) -> None:
    """No control room and no review command ran since the job started (the review is
    still ASSIGNED) when the supervisor sees its agent idle after its work: the review
    starts, dated when the job did, and comes up."""
    job_id, _ = start_job(settings, repo)
    flow = ReviewFlow(settings)
    assert flow.reviews.get(job_id).state == "ASSIGNED"
    finished = flow.on_work_finished(job_id, "agent went idle after its task")
    assert finished is not None and finished.state == "IN_REVIEW"
    history = flow.reviews.history(job_id)
    assert [(c.from_state, c.to_state) for c in history] == [
        (None, "ASSIGNED"),
        ("ASSIGNED", "WORKING"),
        ("WORKING", "IN_REVIEW"),
    ]
    assert "agent went idle after its task: no changes" in flow.reviews.why(job_id)


def test_discard_removes_the_tree_and_the_branch(settings: Settings, repo: Path) -> None:
    job_id, tree = start_job(settings, repo)
    (tree / "scratch.txt").write_text("thrown away\n")
    finish_job(settings, job_id)
    flow = ReviewFlow(settings)
    done = flow.discard(job_id)
    assert done.worktree_removed and done.branch_deleted
    assert not tree.exists()
    assert git(repo, "branch", "--list", f"orchestrate/{job_id}") == ""
    assert done.review.state == "CANCELLED" and done.review.discarded
    assert "discarded by user" in flow.reviews.why(job_id)
    assert str(tree) not in git(repo, "worktree", "list")


def test_other_repo_layouts_are_refused_or_handled(tmp_path: Path, settings: Settings) -> None:
    other = make_repo(tmp_path / "other", {"a.txt": "a\n"})
    git(other, "branch", "feature")
    job_id, tree = start_job(settings, other, base="feature")
    review = ReviewStore(Registry.open(settings.state_dir).bus).get(job_id)
    assert review.base == "feature" and (tree / "a.txt").is_file()
