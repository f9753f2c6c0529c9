"""The background supervisor: started with an agent, one per state dir, it observes
when nobody else does (a `submit --no-wait`) and exits once nothing runs."""

from __future__ import annotations

import pytest

from app.control import Orchestrator
from app.supervision import supervisor
from registry.jobs import Registry


@pytest.fixture
def supervised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRATE_SUPERVISOR", "on")
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "0")


def test_a_no_wait_submit_is_observed_and_ended_without_a_watcher(
    supervised: None, cli, state_dir, tmux_socket: str, wait_for
) -> None:
    """Nobody watches or waits: the supervisor still sees the agent exit and ends the job."""
    result = cli(
        "submit", "--prompt", "x", "--agent", "custom", "--agent-session", "alpha",
        "--agent-cmd", "sh -c 'sleep 1; exit 0'", "--no-wait",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    wait_for(lambda: supervisor.running(state_dir), what="a supervisor")
    registry = Registry.open(state_dir)
    wait_for(lambda: registry.get(job_id).status == "completed", timeout=20, what="completion")
    assert registry.why(job_id).endswith("(agent exited with status 0)")


def test_only_one_supervisor_runs_per_state_dir(
    supervised: None, orch: Orchestrator, state_dir, wait_for
) -> None:
    orch.submit("a", "custom", "alpha", agent_cmd=["sleep", "30"])
    wait_for(lambda: supervisor.running(state_dir), what="a supervisor")
    assert supervisor.ensure_started(state_dir, orch.driver.socket_name) is False
    assert supervisor.supervise(orch, idle_exit_sec=0) == 3  # the lock is held


def test_the_supervisor_exits_once_its_tmux_server_is_gone(
    supervised: None, orch: Orchestrator, state_dir, wait_for
) -> None:
    job = orch.submit("a", "custom", "alpha", agent_cmd=["sleep", "30"])
    wait_for(lambda: supervisor.running(state_dir), what="a supervisor")
    wait_for(lambda: orch.pane_log(job.job_id).stat().st_size > 0, what="the pane")
    orch.driver.server.cmd("kill-server")
    wait_for(lambda: Registry.open(state_dir).get(job.job_id).activity == "interrupted")
    wait_for(lambda: not supervisor.running(state_dir), timeout=20, what="the supervisor to exit")


def test_switched_off_it_never_starts(orch: Orchestrator, state_dir) -> None:
    orch.submit("a", "custom", "alpha", agent_cmd=["sleep", "30"])
    assert not supervisor.running(state_dir)
    assert not (state_dir / "logs" / "supervisor.log").exists()
