"""Liveness passes, permission answers, cancel/resume of a job, and the demo, on real tmux."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.control import NotWaitingForPermission, Orchestrator
from app.orchestration import answering
from bus import heartbeats
from registry.errors import JobNotFound
from tests.control.conftest import demo_cmd


def test_a_pane_killed_under_a_running_job_leaves_it_interrupted_until_resumed(
    orch: Orchestrator,
) -> None:
    """A vanished pane (tmux killed, a reboot) is not the agent failing: the job stays
    running, interrupted, with the reason, until it is resumed in a new pane."""
    job = orch.submit("wait", "custom", "alpha", agent_cmd=["sleep", "30"])
    first = orch.reconcile()
    assert first.sampled == {job.job_id: "working"} and not first.errored
    pane = orch.pane_for_job(job.job_id)
    assert pane is not None
    orch.driver.kill_pane(pane)
    report = orch.reconcile()
    assert report.sampled == {job.job_id: "interrupted"} and not report.errored
    record = orch.registry.get(job.job_id)
    assert (record.status, record.activity) == ("running", "interrupted")
    assert "interrupted since" in orch.registry.why(job.job_id)
    assert "agent pane is gone" in orch.registry.why(job.job_id)
    beat = {b.agent_id: b for b in heartbeats.read_all(orch.registry.db.conn)}[job.job_id]
    assert (beat.status, beat.current_task) == ("dead", job.job_id)
    assert not orch.reconcile().changed  # once
    resumed = orch.resume_job(job.job_id)
    assert (resumed.status, resumed.activity) == ("running", "starting")
    assert orch.driver.pane_alive(str(orch.pane_for_job(job.job_id)))
    assert orch.registry.history(job.job_id)[-2].transition == "restart"


def test_agent_exit_status_becomes_the_error_reason(orch: Orchestrator, wait_for) -> None:
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sh", "-c", "exit 3"])
    pane = orch.pane_for_job(job.job_id)
    wait_for(lambda: not orch.driver.pane_alive(str(pane)), what="agent exit")
    report = orch.reconcile()
    assert report.errored == {job.job_id: "agent pane exited with status 3"}
    assert "exited with status 3" in report.summary()
    changes = orch.registry.activity_history(job.job_id)
    assert changes[-1].observation.exit_status == 3


def test_an_agent_that_exits_0_completes_its_job(orch: Orchestrator, wait_for) -> None:
    """--done-when exit (the default of a custom agent): exit 0 is done."""
    job = orch.submit("x", "custom", "alpha", agent_cmd=["true"])
    assert job.done_when is None or orch.registry.get(job.job_id).done_when == "exit"
    pane = orch.pane_for_job(job.job_id)
    wait_for(lambda: not orch.driver.pane_alive(str(pane)), what="agent exit")
    report = orch.reconcile()
    assert report.completed == {job.job_id: "agent exited with status 0"}
    assert orch.registry.get(job.job_id).status == "completed"


def test_idle_job_is_flagged_once_and_left_running(orch: Orchestrator, wait_for) -> None:
    """No output and no events past the idle timeout: stalled, and a job.flag message,
    not a kill."""
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sleep", "30"], idle_timeout_sec=1)
    report = wait_for(lambda: orch.reconcile().flagged or None, what="an idle flag")
    assert job.job_id in report  # type: ignore[operator]
    assert orch.reconcile().sampled == {job.job_id: "stalled"}
    assert "no progress" in orch.registry.why(job.job_id)
    assert not orch.reconcile().flagged  # the same quiet spell is flagged once
    flags = [m for m in orch.registry.bus.read_after(0) if m.type == "job.flag"]
    assert len(flags) == 1 and flags[0].correlation_id == job.job_id
    assert orch.registry.get(job.job_id).status == "running"
    assert orch.driver.pane_alive(str(orch.pane_for_job(job.job_id)))


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
        answering.answer(orch, job.job_id, "yes", grace_sec=0.2)
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


def test_cancel_interrupts_the_agent_and_resume_job_starts_it_again(
    orch: Orchestrator, wait_for
) -> None:
    job = orch.submit("x", "custom", "alpha", agent_cmd=["sleep", "30"])
    old_pane = orch.pane_for_job(job.job_id)
    assert orch.cancel(job.job_id).status == "cancelled"
    wait_for(lambda: not orch.driver.pane_alive(str(old_pane)), what="C-c to stop the agent")
    assert not orch.reconcile().errored
    resumed = orch.resume_job(job.job_id)
    assert resumed.status == "running"
    new_pane = orch.pane_for_job(job.job_id)
    assert new_pane not in (None, old_pane) and orch.driver.pane_alive(str(new_pane))
    assert not orch.driver.pane_status(str(old_pane)).exists  # one pane per job
    # the real attempt number (retry_count counts only lease expiries: it said 1)
    assert orch.registry.history(job.job_id)[-1].reason.startswith("resumed (attempt 2)")
    assert orch.cancel(job.job_id).status == "cancelled"
    orch.resume_job(job.job_id)
    assert orch.registry.history(job.job_id)[-1].reason.startswith("resumed (attempt 3)")
    with pytest.raises(JobNotFound):
        orch.cancel("deadbeef")


def test_demo_runs_three_varied_agents_end_to_end(
    orch: Orchestrator, cli, state_dir: Path, tmux_socket: str, wait_for
) -> None:
    """`orchestrate demo`: one completes, one waits for permission (answered), one fails."""
    result = cli("demo", "--agents", "3", "--delay", "0.05", "--steps", "2")
    assert result.returncode == 0, result.stderr
    ids = [line.split()[0] for line in result.stdout.splitlines()]
    assert [line.split()[1] for line in result.stdout.splitlines()] == [
        "demo-1",
        "demo-2",
        "demo-3",
    ]
    assert f"tmux -L {tmux_socket} attach" in result.stderr
    assert {info.label for info in orch.driver.list_sessions()} >= {"demo-1", "demo-2", "demo-3"}
    status = orch.registry.get
    wait_for(lambda: status(ids[0]).status == "completed", what="demo-1 to complete")
    wait_for(lambda: status(ids[2]).status == "error", what="demo-3 to fail")
    wait_for(lambda: status(ids[1]).last_event == "permission_required", what="demo-2 to ask")
    assert cli("answer", "--job", ids[1], "y").returncode == 0
    wait_for(lambda: status(ids[1]).status == "completed", what="demo-2 to complete")
    summary = cli("reconcile")
    assert summary.returncode == 0 and summary.stdout.startswith("0 agent panes")


def test_a_job_whose_pane_is_still_starting_is_not_failed(
    orch: Orchestrator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TUI reconciling while `orchestrate submit` (another process) starts a pane
    must not fail the job in the moment between its claim and its pane's tag."""
    from app.supervision import observer

    job = orch.registry.register(prompt="p", agent="custom", agent_session="alpha")
    orch.registry.set_status(job.job_id, "running", "claimed by a submit in another process")
    orch.pane_log(job.job_id).parent.mkdir(parents=True, exist_ok=True)
    orch.pane_log(job.job_id).touch()  # the submit has got this far, the pane not yet
    report = orch.reconcile()
    assert report.sampled == {job.job_id: "starting"} and not report.errored
    assert orch.registry.get(job.job_id).status == "running"
    monkeypatch.setattr(observer, "START_GRACE_SEC", 0.0)  # the grace has run out
    assert orch.reconcile().changed == {job.job_id: "interrupted"}
    assert "its tmux server is gone" in orch.registry.why(job.job_id)  # none ever ran here
