"""The background supervisor is the hook receiver: a real `orchestrate supervise`
(started as an agent starts) records a pane's hooks through its socket, and its
socket goes when it does."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.hookrx import client, hook_command
from app.supervision import supervisor
from registry.jobs import Registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
SAMPLES = json.loads((FIXTURES / "claude" / "hook-payload-samples.json").read_text())


@pytest.fixture
def supervised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRATE_SUPERVISOR", "on")
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "0")


def test_the_background_supervisor_records_hooks_through_its_socket(
    supervised: None, orch: Orchestrator, state_dir: Path, wait_for
) -> None:
    job = orch.submit("create done.txt", "custom", "alpha", agent_cmd=["sleep", "30"])
    socket_path = Path(client.socket_path(str(state_dir.resolve())))
    wait_for(lambda: supervisor.running(state_dir), what="a supervisor")
    wait_for(socket_path.is_socket, what="the receiver's socket")
    argv = hook_command()
    argv[0] = "/usr/bin/python3"  # no orchestrate there: its fallback cannot record
    env = {
        **os.environ,
        "ORCHESTRATE_HOME": str(state_dir.resolve()),
        "ORCHESTRATE_JOB": job.job_id,
    }
    result = subprocess.run(
        [*argv, "claude"],
        input=json.dumps(SAMPLES["PermissionRequest"]),
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    registry = Registry.open(state_dir)
    sources = [c.observation.source for c in registry.activity_history(job.job_id)]
    assert "hook:claude:PermissionRequest" in sources  # (its screen may be judged after)
    orch.driver.server.cmd("kill-server")
    wait_for(lambda: not supervisor.running(state_dir), timeout=30, what="the supervisor to exit")
    assert not socket_path.exists()
