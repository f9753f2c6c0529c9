"""Real Claude Code (pinned, offline against the scripted model) with its hooks answered
by the resident receiver: its activity is recorded through the socket, and its
permission hook gets the control room's decision back through it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.hookrx.slot import serving
from app.selftest.models.script import Script
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import COMMAND, TASK, supervise_until
from tests.plugin.models import ServeModel

pytestmark = [pytest.mark.agents, pytest.mark.slow]


def test_claude_hooks_and_its_decision_go_through_the_receiver(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, state_dir: Path
) -> None:
    agent = AGENTS["claude"]
    require("claude")
    workdir = tmp_path / "work-rx"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path / "claude", workdir, model.base_url)
    with serving(state_dir) as receiver:
        assert receiver is not None
        job = orch.submit(
            TASK,
            "claude",
            "claude-rx",
            agent_cmd=run.argv,
            env=run.env,
            workdir=workdir,
            approvals="control-room",
            approval_wait_sec=30,
        )
        waiting = supervise_until(orch, job.job_id, lambda j: j.waiting, "the hook to wait")
        assert waiting.activity_source == "hook:claude:PermissionRequest"
        assert sum(receiver.recorder.batches) >= 2  # its hooks came through the socket
        answered = orch.answer(job.job_id, "yes")
        assert answered.how == "hook decision"
        deadline = time.monotonic() + 30
        while not (workdir / "done.txt").exists():
            assert time.monotonic() < deadline, "the approved command never ran"
            time.sleep(0.1)
        supervise_until(orch, job.job_id, lambda j: j.activity == "idle", "the turn to end")
        log = state_dir / "logs" / job.job_id / "hook-errors.log"
        assert not log.exists(), log.read_text() if log.exists() else ""
        orch.cancel(job.job_id, grace_sec=2)
