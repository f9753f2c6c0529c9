"""Real Codex through orchestrate on its own app-server (--approvals control-room),
offline against a scripted model, with a policy: the bridge answers an allowed
command's approval request itself and the command runs. (Codex's own TUI draws the
dialog and sends OSC 7501 `blocked` before the bridge's answer reaches it, so a wait
from those weaker sources may flash; the app-server's request is never recorded as one.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from tests.agents.test_orchestrated_agents import start_codex_control_room, supervise_until
from tests.plugin.models import ServeModel

pytestmark = pytest.mark.agents


def test_codex_is_answered_by_the_policy_on_its_app_server(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    state_dir = orch.settings.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "policy.toml").write_text(
        '[[rule]]\nname = "touch"\ntool = "shell"\ncommand = "touch *"\ndecision = "allow"\n'
    )
    job_id, workdir = start_codex_control_room(orch, serve_model, tmp_path, "codex-policy")
    deadline = time.monotonic() + 90
    while not (workdir / "done.txt").exists():
        assert time.monotonic() < deadline, "the allowed command never ran"
        orch.reconcile()
        time.sleep(0.2)
    job = supervise_until(orch, job_id, lambda j: j.activity == "idle", "idle after the turn")
    sources = [c.observation.source for c in orch.registry.activity_history(job.job_id)]
    assert "appserver:codex:requestApproval" not in sources, sources
    inputs = [
        m.payload["data"]
        for m in orch.registry.bus.read_after(0)
        if m.type == "job.event" and m.payload["event"] == "input"
    ]
    assert [(i["answer"], i["rules"]) for i in inputs] == [("yes", ["touch"])]
    orch.cancel(job_id, grace_sec=2)
