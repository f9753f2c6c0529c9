"""Permission answers on real tmux through `orchestrate answer`: the demo agent's
question answered with its keys, and refusals when nothing asks (moved from
tests/control/test_reconcile_answer.py with the code, to app/approvals/)."""

from __future__ import annotations

import pytest

from app.approvals.answer import answer_question
from app.control import NotWaitingForPermission, Orchestrator
from registry.vocabulary import Answer
from tests.control.conftest import demo_cmd


def test_answer_yes_reaches_the_pane_and_the_agent_completes(
    orch: Orchestrator, cli, wait_for
) -> None:
    job = orch.submit(
        "x", "demo", "alpha", agent_cmd=[*demo_cmd("--ask-permission"), "{prompt_file}"]
    )
    wait_for(
        lambda: orch.registry.get(job.job_id).last_event == "permission_required",
        what="permission_required",
    )
    assert orch.reconcile().sampled[job.job_id] == "waiting"
    result = cli("answer", "--job", job.job_id, "yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"job {job.job_id}: answered yes (keys y Enter)\n"
    wait_for(lambda: orch.registry.get(job.job_id).status == "completed", what="completion")
    assert "permission granted" in (orch.pane_log(job.job_id)).read_text()


def test_answer_is_refused_unless_the_job_waits_for_permission(
    orch: Orchestrator, cli, wait_for
) -> None:
    """Never types into a pane that did not ask: wrong last event, or no prompt on screen."""
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sleep", "30"])
    result = cli("answer", "--job", job.job_id, "yes")
    assert result.returncode == 1
    assert result.stderr == (
        f"orchestrate: job {job.job_id} is not waiting for an answer (running, starting)\n"
    )
    # an event that claims a question, but nothing on screen asks it
    orch.registry.publish(job.job_id, "permission_required", "fake")
    with pytest.raises(NotWaitingForPermission, match="shows no question"):
        answer_question(orch, job.job_id, Answer.YES, grace_sec=0.2)
    missing = cli("answer", "--job", "deadbeef", "no")
    assert (missing.returncode, missing.stderr) == (1, "orchestrate: no job 'deadbeef'\n")
    assert cli("answer", "--job", job.job_id, "maybe").returncode == 2


@pytest.mark.parametrize(
    ("reply", "reason"), [((), "Missing argument"), (("maybe",), "Invalid value")]
)
def test_answer_without_yes_or_no_is_a_one_line_usage_error(
    cli, reply: tuple[str, ...], reason: str
) -> None:
    """click lists a missing Choice one choice a line, with tabs; the CLI keeps one line."""
    result = cli("answer", "--job", "deadbeef", *reply)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "\t" not in result.stderr
    assert result.stderr.startswith(f"orchestrate answer: {reason}")
    assert "yes, no, always, y, n, a" in result.stderr or "'yes', 'no'" in result.stderr
