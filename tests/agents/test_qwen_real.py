"""The real Qwen Code through orchestrate, beyond the matrix every agent runs
(test_orchestrated_agents.py): its PermissionRequest hook answered from the control
room (no key typed), and its state with its hook source at each step."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Script
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import COMMAND, TASK, supervise_until
from tests.plugin.models import ServeModel

pytestmark = pytest.mark.agents


def submit(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, approvals: str
) -> tuple[str, Path]:
    agent = AGENTS["qwen"]
    require("qwen")
    workdir = tmp_path / "work-qwen"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path / "qwen", workdir, model.base_url)
    job = orch.submit(TASK, "qwen", "qwen-cr", agent_cmd=run.argv, env=run.env, workdir=workdir,
                      approvals=approvals, approval_wait_sec=60)  # fmt: skip
    return job.job_id, workdir


@pytest.mark.slow
def test_qwen_approvals_from_the_control_room(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """--approvals control-room: the PermissionRequest hook waits for the answer given
    here and returns it as the hook's decision; no key is typed into its pane."""
    job_id, workdir = submit(orch, serve_model, tmp_path, "control-room")
    job = supervise_until(orch, job_id, lambda j: j.waiting, "the hook to wait", timeout=90)
    assert COMMAND in (job.activity_data or {}).get("command", "")
    answered = orch.answer(job_id, "yes")
    assert answered.how == "hook decision"
    deadline = time.monotonic() + 30
    while not (workdir / "done.txt").exists():
        assert time.monotonic() < deadline, "the approved command never ran"
        time.sleep(0.1)
    done = supervise_until(orch, job_id, lambda j: j.status == "completed", "completion")
    sources = [c.observation.source for c in orch.registry.activity_history(job_id)]
    assert "hook:qwen:PermissionRequest" in sources and "hook:qwen:Stop" in sources, sources
    assert done.status == "completed"
    orch.stop_agent(orch.registry.get(job_id), grace_sec=2)
