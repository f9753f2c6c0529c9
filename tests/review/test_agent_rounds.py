"""A work-tree job with an interactive agent (done when idle): each time its agent goes
idle after its task the review comes up and the job stays running, idle, so changes can
be requested; merging it completes the job. Real tmux, real git, the mybot agent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.review.flow import ReviewFlow
from app.review.merging import approve
from app.review.worktree import plan_worktree
from app.settings import Settings
from registry.activity import Observation
from tests.polling import poll_until

MYBOT = Path(__file__).resolve().parents[1] / "agents" / "mybot.py"
CONFIG = f"""
[agents.mybot]
command = [{str(sys.executable)!r}, {str(MYBOT)!r}]
deliver = "paste"
done_when = "idle"
[[agents.mybot.rules]]
name = "ask"
activity = "waiting"
pattern = '^(?P<question>Run (?P<command>.+)\\?) \\[y/n\\] ?$'
lines = 1
[[agents.mybot.rules]]
name = "ready"
activity = "idle"
pattern = '^mybot> ?$'
lines = 1
"""


def test_each_idle_round_comes_up_for_review_and_merge_completes_the_job(
    repo: Path, settings: Settings, tmux_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "0.3")
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    (settings.state_dir / "agents.toml").write_text(CONFIG, encoding="utf-8")
    orch = Orchestrator(settings, tmux_socket=tmux_socket)
    flow = ReviewFlow(settings, registry=orch.registry, make_orchestrator=lambda: orch)
    job = orch.submit("create done please", "mybot", "bot", worktree=plan_worktree(repo))

    def review_state() -> str:
        orch.reconcile()
        flow.follow_jobs()
        return flow.reviews.get(job.job_id).state

    poll_until(lambda: orch.reconcile() and orch.registry.get(job.job_id).waiting, 20, "a question")
    orch.answer(job.job_id, "yes")
    poll_until(lambda: review_state() == "IN_REVIEW", 20, "the first round up for review")
    worktree = Path(flow.reviews.get(job.job_id).worktree)
    assert (worktree / "done.txt").exists() and not (repo / "done.txt").exists()
    assert orch.registry.get(job.job_id).status == "running"  # idle, kept for changes

    flow.request_changes(job.job_id, "now create done again please")
    assert flow.reviews.get(job.job_id).state == "WORKING"
    # the agent is on the changes from the moment they are sent: its idle from
    # before them is not the end of this round, whatever the next pass sees
    record = orch.registry.get(job.job_id)
    assert (record.activity, record.activity_source) == ("working", "review")
    assert "working since" in orch.registry.why(job.job_id)
    assert "review: changes requested" in orch.registry.why(job.job_id)
    orch.reconcile()
    assert flow.reviews.get(job.job_id).state == "WORKING"
    poll_until(
        lambda: orch.reconcile() and orch.registry.get(job.job_id).waiting, 20, "asked again"
    )
    orch.answer(job.job_id, "yes")
    poll_until(lambda: review_state() == "IN_REVIEW", 20, "the second round up for review")

    approval = approve(flow, job.job_id, "merge")
    assert approval.review.state == "COMPLETED"
    assert (repo / "done.txt").exists()  # the base, checked out here, moved forward
    assert orch.registry.get(job.job_id).status == "completed"
    assert "merged into" in orch.registry.why(job.job_id)


FAKEBOT = Path(__file__).resolve().parent / "fake_agent.py"
FAKEBOT_CONFIG = f"""
[agents.fakebot]
command = [{str(sys.executable)!r}, {str(FAKEBOT)!r}, '{{prompt_file}}', '--rounds']
done_when = "idle"
[[agents.fakebot.rules]]
name = "ready"
activity = "idle"
pattern = '^fake> ?$'
"""


def test_an_agent_that_starts_working_during_a_pass_is_not_taken_for_done(
    repo: Path, settings: Settings, tmux_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass looks at a job idle past its grace; before it acts, the agent starts
    working (a hook records it from its own process). The pass's look is stale: the
    round does not end, nor the job, on it."""
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "0.3")
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    (settings.state_dir / "agents.toml").write_text(FAKEBOT_CONFIG, encoding="utf-8")
    orch = Orchestrator(settings, tmux_socket=tmux_socket)
    flow = ReviewFlow(settings, registry=orch.registry, make_orchestrator=lambda: orch)
    job = orch.submit("write a.txt first", "fakebot", "bot", worktree=plan_worktree(repo))

    def review_state() -> str:
        orch.reconcile()
        return flow.reviews.get(job.job_id).state

    poll_until(lambda: review_state() == "IN_REVIEW", 20, "the first round up for review")
    flow.reviews.move(job.job_id, "reject", "sent back, its agent not told yet")
    reconciler = orch.reconciler

    def hook_fires_meanwhile(job_id: str) -> bool:
        orch.registry.observe(job_id, Observation("working", "hook:test:meanwhile"))
        return True

    monkeypatch.setattr(reconciler, "_worked", hook_fires_meanwhile)
    orch.reconcile()
    assert flow.reviews.get(job.job_id).state == "WORKING"
    assert orch.registry.get(job.job_id).status == "running"
