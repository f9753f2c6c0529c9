"""`submit --worktree` and `orchestrate review ...` end to end: real git, real tmux on a
private socket, a real agent process in its pane, real `orchestrate` processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.settings import Settings
from registry.jobs import Registry
from registry.review import ReviewStore
from tests.polling import poll_until
from tests.review.git_repos import commit_file, git, start_job


def reviews(cli: Any) -> dict[str, dict[str, Any]]:
    result = cli("review", "list", "--json", "--all")
    assert result.returncode == 0, result.stderr
    return {item["job_id"]: item for item in json.loads(result.stdout)}


def submit(cli: Any, repo: Path, agent_cmd: str, prompt: str, *extra: str) -> str:
    """A work-tree job of the fake agent (``agent_cmd``), or of an agents.toml agent
    when ``agent_cmd`` is a bare name."""
    agent = ["--agent", agent_cmd] if " " not in agent_cmd else [
        "--agent", "custom", "--agent-cmd", agent_cmd
    ]  # fmt: skip
    result = cli(
        "submit", "--worktree", "--no-wait", "--workdir", str(repo), "--prompt", prompt,
        *agent, "--agent-session", "reviewers", *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def in_review(cli: Any, job_id: str) -> dict[str, Any]:
    found = poll_until(
        lambda: (item := reviews(cli).get(job_id)) and item["state"] == "IN_REVIEW" and item,
        what=f"job {job_id} in review",
    )
    assert isinstance(found, dict)
    return found


def test_submit_review_request_changes_then_merge(
    cli: Any, repo: Path, state_dir: Path, tmux_socket: str, rounds_agent: str
) -> None:
    """The issue's story: the agent works on its own branch, the diff is read, the job
    is sent back with a comment (pasted into its pane, verbatim), its agent's next
    round comes up for review by itself, then it is merged."""
    prompt = "write src/feature.py VALUE = 42\ncommit add the feature\nwrite NOTES.md draft"
    job_id = submit(cli, repo, rounds_agent, prompt)
    record = in_review(cli, job_id)
    tree = Path(record["worktree"])
    assert tree.parent == state_dir / "worktrees" and record["branch"] == f"orchestrate/{job_id}"
    assert record["summary"]["commits"] == 1 and record["summary"]["uncommitted_files"] == 1
    assert not (repo / "src/feature.py").exists()  # the user's checkout never saw it

    stat = cli("review", "show", job_id, "--stat")
    assert stat.returncode == 0, stat.stderr
    assert [line.split() for line in stat.stdout.splitlines()] == [
        ["A", "+1", "\u22120", "NOTES.md"],
        ["A", "+1", "\u22120", "src/feature.py"],
    ]
    assert "IN_REVIEW" in stat.stderr and "uncommitted work included" in stat.stderr
    patch = cli("review", "show", job_id)
    assert "+VALUE = 42\n" in patch.stdout and patch.stdout.startswith("diff --git ")

    message = "write src/feature.py ANSWER = 42 ;"  # tmux would eat an argument's last ;
    sent = cli("review", "request-changes", job_id, "--message", message)
    assert sent.returncode == 0, sent.stderr
    inbox = tree / ".agent-inbox"
    poll_until(lambda: inbox.exists() and inbox.read_text() == message + "\n", what="the paste")
    why = cli("job", "why", "--job", job_id).stdout
    assert "sent back from review 1\u00d7" in why  # its next round may be up already
    reasons = [
        change.reason for change in ReviewStore(Registry.open(state_dir).bus).history(job_id)
    ]
    assert "changes requested: write src/feature.py ANSWER = 42 ;" in reasons

    # its agent goes idle after the changes: the next round comes up by itself
    poll_until(
        lambda: reviews(cli)[job_id]["state"] == "IN_REVIEW", what="the second round in review"
    )
    assert "+ANSWER = 42 ;" in cli("review", "show", job_id).stdout
    merged = cli("review", "approve", job_id)
    assert merged.returncode == 0, merged.stderr
    assert "committed the uncommitted work" in merged.stdout
    assert f"job {job_id} merged into main (merge, " in merged.stdout
    assert git(repo, "show", "main:src/feature.py") == "ANSWER = 42 ;"
    assert git(repo, "show", "main:NOTES.md") == "draft"
    assert (repo / "src/feature.py").read_text() == "ANSWER = 42 ;\n"  # main is checked out here
    assert reviews(cli)[job_id]["state"] == "COMPLETED"
    assert Registry.open(state_dir).get(job_id).status == "completed"


def test_a_conflicted_approval_goes_back_to_its_agent_to_resolve(
    cli: Any, repo: Path, tmux_socket: str, rounds_agent: str
) -> None:
    """The merge conflicts (the job stays APPROVED); sent back with a comment, its agent
    merges the base into its branch, its next round comes up, and it merges."""
    job_id = submit(cli, repo, rounds_agent, "write src/app.py the job's version\ncommit job")
    in_review(cli, job_id)
    commit_file(repo, "src/app.py", "main's version\n", "meanwhile on main")
    refused = cli("review", "approve", job_id)
    assert refused.returncode == 1 and reviews(cli)[job_id]["state"] == "APPROVED"
    assert reviews(cli)[job_id]["conflicts"] == ["src/app.py (contents)"]
    sent = cli("review", "request-changes", job_id, "-m", "merge main")
    assert sent.returncode == 0, sent.stderr
    assert reviews(cli)[job_id]["conflicts"] == []
    poll_until(
        lambda: (
            reviews(cli)[job_id]["state"] == "IN_REVIEW"
            and reviews(cli)[job_id]["outlook"]["clean"]
        ),
        what="the resolved round in review",
    )
    merged = cli("review", "approve", job_id)
    assert merged.returncode == 0, merged.stderr
    assert git(repo, "show", "main:src/app.py") == "the job's version"


def test_request_changes_reach_a_completed_job_whose_agent_is_still_in_its_pane(
    cli: Any, repo: Path, state_dir: Path, tmux_socket: str, agent_cmd: str
) -> None:
    """A `--done-when exit` job its agent reported completed, the agent still in its
    pane: the changes are delivered (they were refused: "has ended (completed)"), the
    job runs again, and the agent's next `completed` brings the round up for review."""
    job_id = submit(cli, repo, agent_cmd, "write src/app.py changed")
    tree = Path(in_review(cli, job_id)["worktree"])
    assert Registry.open(state_dir).get(job_id).status == "completed"
    sent = cli("review", "request-changes", job_id, "--message", "write src/app.py again")
    assert sent.returncode == 0, sent.stderr
    assert f"job {job_id}: changes sent to its agent; WORKING" in sent.stdout
    inbox = tree / ".agent-inbox"
    poll_until(
        lambda: inbox.exists() and inbox.read_text() == "write src/app.py again\n",
        what="the paste",
    )
    why = cli("job", "why", "--job", job_id).stdout
    assert "followed up 1\u00d7" in why and "sent back from review 1\u00d7" in why
    poll_until(
        lambda: reviews(cli)[job_id]["state"] == "IN_REVIEW", what="the next round in review"
    )
    assert Registry.open(state_dir).get(job_id).status == "completed"
    assert "+again" in cli("review", "show", job_id).stdout


def test_request_changes_to_an_agent_that_has_exited_are_refused_in_one_line(
    cli: Any, repo: Path, settings: Settings, tmux_socket: str, agent_cmd: str
) -> None:
    """With its agent gone from its pane nothing would read the changes: none are sent,
    and the job and its review stay where they were."""
    from app.control import Orchestrator

    job_id = submit(cli, repo, agent_cmd, "write src/app.py changed")
    in_review(cli, job_id)
    orchestrator = Orchestrator(settings, tmux_socket=tmux_socket)
    pane = orchestrator.pane_for_job(job_id)
    assert pane is not None
    orchestrator.driver.server.cmd("send-keys", "-t", pane, "C-d")  # end of its input
    poll_until(lambda: not orchestrator.driver.pane_alive(pane), what="the agent's exit")
    sent = cli("review", "request-changes", job_id, "--message", "more")
    assert sent.returncode == 1
    assert sent.stderr.count("\n") == 1 and "no live agent pane" in sent.stderr
    assert reviews(cli)[job_id]["state"] == "IN_REVIEW"
    assert orchestrator.registry.get(job_id).status == "completed"


def test_a_conflict_is_reported_file_by_file_and_merges_nothing(
    cli: Any, repo: Path, tmux_socket: str, agent_cmd: str
) -> None:
    job_id = submit(cli, repo, agent_cmd, "write src/app.py job\ncommit job edit")
    in_review(cli, job_id)
    commit_file(repo, "src/app.py", "base edit\n")
    before = git(repo, "rev-parse", "main")
    listed = cli("review", "list")
    assert "conflicts with main in src/app.py" in listed.stdout
    result = cli("review", "approve", job_id, "--squash")
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["conflict  src/app.py (contents)"]
    assert result.stderr.count("\n") == 1 and "main is untouched" in result.stderr
    assert git(repo, "rev-parse", "main") == before
    assert reviews(cli)[job_id]["state"] == "APPROVED"


def test_two_jobs_heading_for_a_conflict_are_visible_before_either_finishes(
    cli: Any, repo: Path, settings: Settings
) -> None:
    """Both agents still at work, nothing committed: `review list` already says that
    each still merges into main alone, but not with the other, and where."""
    one, one_tree = start_job(settings, repo, "one")
    two, two_tree = start_job(settings, repo, "two")
    three, three_tree = start_job(settings, repo, "three")
    (one_tree / "src/app.py").write_text("def main():\n    return 'one'\n")
    (two_tree / "src/app.py").write_text("def main():\n    return 'two'\n")
    (two_tree / "README.md").write_text("two's notes\n")
    (three_tree / "README.md").write_text("hello\nthree's line\n")
    (three_tree / "other.txt").write_text("x\n")
    found = reviews(cli)
    assert {found[job]["state"] for job in (one, two, three)} == {"WORKING"}
    assert found[one]["outlook"]["clean"] is True  # each alone still merges
    assert found[one]["outlook"]["overlaps"] == {two: ["src/app.py"]}
    assert found[one]["outlook"]["conflicts_with"] == {two: ["src/app.py"]}
    assert found[two]["outlook"]["conflicts_with"] == {one: ["src/app.py"], three: ["README.md"]}
    assert found[three]["outlook"]["overlaps"] == {two: ["README.md"]}
    listed = cli("review", "list").stdout
    assert f"conflicts with job {two} in src/app.py" in listed

    # two's change moves away from one's: the same file, but they merge
    (two_tree / "src/app.py").write_text("# two\ndef main():\n    return 1\n")
    (three_tree / "README.md").write_text("hello\n")  # three gives up its README change
    found = reviews(cli)
    assert found[one]["outlook"]["overlaps"] == {two: ["src/app.py"]}
    assert found[one]["outlook"]["conflicts_with"] == {}
    assert found[three]["outlook"]["overlaps"] == {}
    assert f"also touched by {two} (src/app.py)" in cli("review", "list").stdout


def test_a_job_merged_first_shows_the_other_its_conflict(
    cli: Any, repo: Path, tmux_socket: str, agent_cmd: str
) -> None:
    one = submit(cli, repo, agent_cmd, "write src/app.py one")
    two = submit(cli, repo, agent_cmd, "write src/app.py two\nwrite other.txt x")
    in_review(cli, one)
    in_review(cli, two)
    assert cli("review", "approve", one).returncode == 0
    after = reviews(cli)[two]["outlook"]
    assert after["clean"] is False and after["conflicts"][0]["path"] == "src/app.py"


def test_refusals_are_one_line_and_store_nothing(
    cli: Any, repo: Path, tmp_path: Path, state_dir: Path, tmux_socket: str, agent_cmd: str
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for workdir, extra, reason in (
        (plain, (), "is not inside a git work tree"),
        (repo, ("--base", "nope"), "no local branch 'nope'"),
    ):
        result = cli(
            "submit", "--worktree", "--no-wait", "--workdir", str(workdir), "--prompt", "x",
            "--agent", "custom", "--agent-session", "s", "--agent-cmd", agent_cmd, *extra,
        )  # fmt: skip
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert reason in result.stderr
    assert Registry.open(state_dir).list() == []
    missing = cli("review", "show", "deadbeef")
    assert missing.returncode == 1 and "did not run in a work tree" in missing.stderr


def test_worktree_auto_setting_makes_it_the_default_in_a_repository(
    cli: Any, repo: Path, tmux_socket: str, agent_cmd: str
) -> None:
    result = cli(
        "submit", "--no-wait", "--workdir", str(repo), "--prompt", "write a.txt a",
        "--agent", "custom", "--agent-session", "s", "--agent-cmd", agent_cmd,
        env={"ORCHESTRATE_WORKTREE": "auto"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in reviews(cli)
    bad = cli("review", "list", env={"ORCHESTRATE_WORKTREE": "always"})
    assert bad.returncode == 1 and "ORCHESTRATE_WORKTREE must be off or auto" in bad.stderr


def test_discard_then_gc_keeps_a_tree_with_uncommitted_work(
    cli: Any, repo: Path, tmux_socket: str, agent_cmd: str
) -> None:
    thrown = submit(cli, repo, agent_cmd, "write junk.txt junk")
    merged = submit(cli, repo, agent_cmd, "write keep.txt keep\ncommit keep")
    in_review(cli, thrown)
    in_review(cli, merged)
    gone = cli("review", "discard", thrown)
    assert gone.returncode == 0, gone.stderr
    assert f"branch orchestrate/{thrown} deleted" in gone.stdout
    assert git(repo, "branch", "--list", f"orchestrate/{thrown}") == ""
    assert cli("review", "approve", merged).returncode == 0
    tree = Path(reviews(cli)[merged]["worktree"])
    (tree / "late.txt").write_text("written after the merge\n")
    assert "nothing merged or discarded more than 7 day" in cli("gc").stdout
    kept = cli("gc", "--days", "0")
    assert f"kept     {merged}  {tree}: uncommitted changes" in kept.stdout
    assert tree.is_dir() and (tree / "late.txt").exists()
    (tree / "late.txt").unlink()
    removed = cli("gc", "--days", "0")
    assert f"removed  {merged}  {tree}, branch orchestrate/{merged} deleted" in removed.stdout
    assert not tree.exists()
    assert git(repo, "show", "main:keep.txt") == "keep"
