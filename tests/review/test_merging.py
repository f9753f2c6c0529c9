"""Approve and merge: the change lands on the base, or nothing does."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.git.errors import CheckoutInTheWay
from app.review.diffs import read_review_diff
from app.review.flow import ReviewFlow
from app.review.merging import approve
from app.settings import Settings
from registry.errors import IllegalTransition
from tests.review.git_repos import commit_file, finish_job, git, start_job


def reviewed(settings: Settings, repo: Path, text: str, prompt: str = "change app") -> str:
    """A job that committed ``text`` as src/app.py and is now IN_REVIEW."""
    job_id, tree = start_job(settings, repo, prompt, base="main")
    commit_file(tree, "src/app.py", text, f"job edit {text[:10]}")
    finish_job(settings, job_id)
    return job_id


def test_approve_and_merge_puts_the_change_on_the_base(settings: Settings, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "elsewhere")  # main is checked out nowhere
    job_id = reviewed(settings, repo, "def main():\n    return 2\n")
    flow = ReviewFlow(settings)
    done = approve(flow, job_id)
    assert done.merged and done.review.state == "COMPLETED" and done.moved_in == "ref"
    assert git(repo, "show", "main:src/app.py") == "def main():\n    return 2"
    parents = git(repo, "log", "-1", "--format=%P", "main").split()
    assert len(parents) == 2 and parents[1] == git(repo, "rev-parse", f"orchestrate/{job_id}")
    assert git(repo, "log", "-1", "--format=%s", "main").startswith(
        f"Merge orchestrate job {job_id}: change app"
    )
    why = flow.reviews.why(job_id)
    assert why.startswith("COMPLETED at ") and "merged into main (merge," in why


def test_merge_updates_the_users_checkout_and_keeps_their_local_changes(
    settings: Settings, repo: Path
) -> None:
    job_id = reviewed(settings, repo, "def main():\n    return 2\n")
    (repo / "README.md").write_text("my local edit\n")  # the user's work in progress
    (repo / "untracked.txt").write_text("mine\n")
    done = approve(ReviewFlow(settings), job_id)
    assert done.moved_in == str(repo)
    assert (repo / "src/app.py").read_text() == "def main():\n    return 2\n"
    assert (repo / "README.md").read_text() == "my local edit\n"
    assert (repo / "untracked.txt").read_text() == "mine\n"
    status = {line.strip() for line in git(repo, "status", "--porcelain").splitlines()}
    assert status == {"M README.md", "?? untracked.txt"}


def test_local_changes_in_the_way_leave_everything_as_it_was(
    settings: Settings, repo: Path
) -> None:
    job_id = reviewed(settings, repo, "def main():\n    return 2\n")
    before = git(repo, "rev-parse", "main")
    (repo / "src/app.py").write_text("# my own unsaved work\n")
    flow = ReviewFlow(settings)
    with pytest.raises(CheckoutInTheWay, match=r"would overwrite local changes \(src/app.py\)"):
        approve(flow, job_id)
    assert git(repo, "rev-parse", "main") == before
    assert (repo / "src/app.py").read_text() == "# my own unsaved work\n"
    assert flow.reviews.get(job_id).state == "APPROVED"
    (repo / "src/app.py").write_text("def main():\n    return 1\n")  # the user undoes it
    assert approve(flow, job_id).merged  # approving again merges


def test_a_conflict_leaves_the_base_untouched(settings: Settings, repo: Path) -> None:
    job_id = reviewed(settings, repo, "def main():\n    return 'job'\n")
    commit_file(repo, "src/app.py", "def main():\n    return 'base'\n", "base moved")
    commit_file(repo, "other.txt", "fine\n", "unrelated")
    before = git(repo, "rev-parse", "main")
    status_before = git(repo, "status", "--porcelain")
    flow = ReviewFlow(settings)
    done = approve(flow, job_id)
    assert not done.merged
    assert [c.path for c in done.conflicts] == ["src/app.py"]
    assert done.conflicts[0].kinds == ("contents",)
    assert git(repo, "rev-parse", "main") == before
    assert git(repo, "status", "--porcelain") == status_before
    assert (repo / "src/app.py").read_text() == "def main():\n    return 'base'\n"
    review = flow.reviews.get(job_id)
    assert review.state == "APPROVED" and review.conflicts == ("src/app.py (contents)",)


def test_uncommitted_work_is_committed_on_the_job_branch_before_the_merge(
    settings: Settings, repo: Path
) -> None:
    job_id, tree = start_job(settings, repo, "add docs")
    (tree / "docs.md").write_text("never committed by the agent\n")
    finish_job(settings, job_id)
    done = approve(ReviewFlow(settings), job_id)
    assert done.committed_uncommitted is not None
    subject = git(tree, "log", "-1", "--format=%s", f"orchestrate/{job_id}")
    assert subject == f"orchestrate job {job_id}: uncommitted work at approval"
    assert git(repo, "show", "main:docs.md") == "never committed by the agent"
    assert git(tree, "status", "--porcelain") == ""


def test_squash_makes_one_commit_on_the_base(settings: Settings, repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    job_id, tree = start_job(settings, repo, "two steps", base="main")
    commit_file(tree, "a.txt", "a\n", "step one")
    commit_file(tree, "b.txt", "b\n", "step two")
    finish_job(settings, job_id)
    done = approve(ReviewFlow(settings), job_id, "squash")
    assert done.merged
    assert len(git(repo, "log", "-1", "--format=%P", "main").split()) == 1
    body = git(repo, "log", "-1", "--format=%B", "main")
    assert body.startswith("two steps\n") and "* step one\n* step two" in body


def test_rebase_replays_the_commits_onto_the_base(settings: Settings, repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    job_id, tree = start_job(settings, repo, "rebase me", base="main")
    commit_file(tree, "a.txt", "a\n", "job commit")
    commit_file(repo, "b.txt", "b\n", "base commit")  # detached: main is not moved by this
    git(repo, "update-ref", "refs/heads/main", "HEAD")
    finish_job(settings, job_id)
    done = approve(ReviewFlow(settings), job_id, "rebase")
    assert done.merged
    log = git(repo, "log", "--format=%s", "main").splitlines()
    assert log[:3] == ["job commit", "base commit", "initial"]


def test_approve_only_from_review(settings: Settings, repo: Path) -> None:
    job_id, _ = start_job(settings, repo)
    flow = ReviewFlow(settings)
    flow.follow_jobs()
    with pytest.raises(IllegalTransition, match="cannot approve from WORKING"):
        approve(flow, job_id)


@pytest.mark.parametrize("mode", ["merge", "squash", "rebase"])
def test_a_merged_job_still_shows_what_it_brought_into_the_base(
    settings: Settings, repo: Path, mode: str
) -> None:
    """After the merge its work tree is still there (gc removes it later), but the base
    now holds the branch: the diff shown is the merged change, not an empty one."""
    job_id, tree = start_job(settings, repo, "two steps", base="main")
    commit_file(tree, "a.txt", "a\n", "step one")
    commit_file(tree, "b.txt", "b\n", "step two")
    commit_file(repo, "c.txt", "c\n", "someone else's work on main")
    finish_job(settings, job_id)
    flow = ReviewFlow(settings)
    approve(flow, job_id, mode)
    shown = read_review_diff(flow.reviews.get(job_id))
    assert [f.path for f in shown.diff.files] == ["a.txt", "b.txt"]
    assert shown.diff.added == 2
    subjects = sorted(c.subject for c in shown.commits)
    expected = {
        "merge": [f"Merge orchestrate job {job_id}: two steps", "step one", "step two"],
        "squash": ["two steps"],
        "rebase": ["step one", "step two"],
    }
    assert subjects == expected[mode]
