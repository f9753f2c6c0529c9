"""The sessions panel shows the liveness reconcile writes on each job's behalf."""

from __future__ import annotations

from pathlib import Path

from app.control import Orchestrator
from app.settings import Settings
from app.tui.registry_source import RegistrySource
from tests.control.conftest import demo_cmd


def test_a_running_jobs_heartbeat_colours_its_session(state_dir: Path, tmux_socket: str) -> None:
    orch = Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    job = orch.submit("p", "custom", "alpha", agent_cmd=demo_cmd("--steps", "50", "--delay", "1"))
    orch.reconcile()  # beats under the job id, as the TUI's background pass does
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket)
    rows = {row.label: row for row in source.poll(0).sessions}
    assert rows["alpha"].current_job == job.job_id
    assert rows["alpha"].liveness == "ok" and rows["alpha"].tmux_alive
    orch.cancel(job.job_id)  # the job ends: its beat no longer speaks for the session
    rows = {row.label: row for row in source.poll(0).sessions}
    assert rows["alpha"].current_job is None and rows["alpha"].liveness == "idle"


def test_an_interrupted_jobs_session_reads_dead_however_fresh_its_beat(
    state_dir: Path, tmux_socket: str
) -> None:
    """Supervision beats for an agent whose pane is gone too, with state `dead`: the
    session must say DEAD, not `ok` from the beat's age."""
    orch = Orchestrator(Settings(state_dir), tmux_socket=tmux_socket)
    job = orch.submit("p", "custom", "alpha", agent_cmd=["sleep", "60"])
    orch.reconcile()
    orch.driver.server.cmd("kill-server")
    assert orch.reconcile().sampled == {job.job_id: "interrupted"}  # and a fresh beat
    source = RegistrySource(Settings(state_dir), tmux_socket=tmux_socket)
    rows = {row.label: row for row in source.poll(0).sessions}
    assert rows["alpha"].current_job == job.job_id
    assert rows["alpha"].liveness == "DEAD"
    assert rows["alpha"].heartbeat_age_s is not None and rows["alpha"].heartbeat_age_s < 60
