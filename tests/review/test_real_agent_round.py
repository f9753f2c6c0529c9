"""A review round with a real agent CLI (Claude Code, offline against a scripted fake
model, in real tmux on a private socket, in the job's own git work tree): its first
round comes up for review; `request changes` reaches the agent as its next turn; it
works again (a second command, answered, runs in the work tree) and the job comes back
to review; merging completes it. tests/review/test_agent_rounds.py does this with a
scripted stand-in agent."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.review.flow import ReviewFlow
from app.review.merging import approve
from app.review.worktree import plan_worktree, worktree_root
from app.selftest.models.script import Reply, RunShell, Script
from app.selftest.models.server import FakeModelServer
from app.settings import Settings
from registry.vocabulary import Answer, JobStatus, ReviewState
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.polling import poll_until

# Two turns of a real Claude Code, each with a permission dialog: ~20 s at load ~20.
pytestmark = [pytest.mark.agents, pytest.mark.slow]

CHANGES = "please also create again.txt"


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    """Claude's fake model: a command and a reply per round, two rounds."""
    script = Script(
        [
            RunShell("touch done.txt"),
            Reply("Created done.txt."),
            RunShell("touch again.txt"),
            Reply("Created again.txt too."),
        ]
    )
    with FakeModelServer(AGENTS["claude"].api(), script) as server:
        yield server


def test_request_changes_reaches_a_real_agent_which_works_again_and_returns_to_review(
    repo: Path,
    settings: Settings,
    tmux_socket: str,
    model: FakeModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require("claude")
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "1")
    # the job's work tree is made under this root at submit: trusted for Claude there
    run = AGENTS["claude"].sandbox(tmp_path / "claude", worktree_root(settings), model.base_url)
    orch = Orchestrator(settings, tmux_socket=tmux_socket)
    flow = ReviewFlow(settings, registry=orch.registry, make_orchestrator=lambda: orch)
    job = orch.submit("create done.txt", "claude", "claude-review", agent_cmd=run.argv,
                      env=run.env, worktree=plan_worktree(repo))  # fmt: skip

    def review_state() -> str:
        orch.reconcile()
        flow.follow_jobs()
        return flow.reviews.get(job.job_id).state

    def answer_yes_then(state: Callable[[], bool], what: str) -> None:
        """Answer the round's permission dialog, then wait for ``state``."""

        def waiting() -> bool:
            orch.reconcile()
            return orch.registry.get(job.job_id).waiting

        poll_until(waiting, 60, f"the permission dialog before {what}")
        orch.answer(job.job_id, Answer.YES)
        poll_until(state, 60, what)

    answer_yes_then(lambda: review_state() == ReviewState.IN_REVIEW, "the first round's review")
    worktree = Path(flow.reviews.get(job.job_id).worktree)
    assert (worktree / "done.txt").exists() and not (repo / "done.txt").exists()
    assert orch.registry.get(job.job_id).status == JobStatus.RUNNING  # idle, kept for changes
    turns = len(model.requests_of("turn"))

    flow.request_changes(job.job_id, CHANGES)
    assert flow.reviews.get(job.job_id).state == ReviewState.WORKING
    poll_until(lambda: len(model.requests_of("turn")) > turns, 60, "the agent's next turn")
    asked = json.dumps(model.requests_of("turn")[turns].body)
    assert CHANGES in asked, "the requested changes did not reach the agent's model"
    answer_yes_then(lambda: review_state() == ReviewState.IN_REVIEW, "the second round's review")
    assert (worktree / "again.txt").exists()

    approval = approve(flow, job.job_id, "merge")
    assert approval.review.state == ReviewState.COMPLETED
    assert (repo / "done.txt").exists() and (repo / "again.txt").exists()
    assert orch.registry.get(job.job_id).status == JobStatus.COMPLETED
