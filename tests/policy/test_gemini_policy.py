"""Real Gemini CLI (pinned) through orchestrate, offline against the scripted Gemini
server, with a policy. Gemini takes no decision from a hook, so the policy's answer
is typed on its own dialog by meaning, once the dialog on screen is the question
the policy decided: an allowed `touch` runs with no person, a denied `rm -rf` runs
nothing, and each answer is on record with its rule."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Reply, RunShell, Script
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import supervise_until
from tests.conftest import run_cli
from tests.plugin.models import ServeModel

pytestmark = [pytest.mark.agents, pytest.mark.slow]  # CI --all and scripts/drift run it

POLICY = """
[[rule]]
name = "touch"
agent = "gemini"
tool = "shell"
command = "touch *"
decision = "allow"

[[rule]]
name = "no-rm"
tool = "shell"
command = "rm *"
decision = "deny"
"""


def inputs(orch: Orchestrator) -> list[dict[str, object]]:
    return [
        m.payload["data"]
        for m in orch.registry.bus.read_after(0)
        if m.type == "job.event" and m.payload["event"] == "input"
    ]


def test_gemini_is_answered_by_the_policy_on_its_dialog(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    require("gemini")
    agent = AGENTS["gemini"]
    state_dir = orch.settings.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "policy.toml").write_text(POLICY)
    workdir = tmp_path / "work-policy"
    (workdir / "keep").mkdir(parents=True)
    script = Script([RunShell("touch done.txt"), RunShell("rm -rf keep"), Reply("Done.")])
    model = serve_model(agent.api(), script)
    run = agent.sandbox(tmp_path / "gemini", workdir, model.base_url)
    job = orch.submit("tidy up", "gemini", "gemini-policy", agent_cmd=run.argv, env=run.env,
                      workdir=workdir)  # fmt: skip

    supervise_until(orch, job.job_id, lambda j: len(inputs(orch)) >= 2, "two policy answers", 90)
    assert (workdir / "done.txt").exists()  # allowed by rule 'touch': it ran, no person
    assert (workdir / "keep").is_dir()  # denied by rule 'no-rm': nothing ran
    answers = [(i["answer"], i["by"], i["rules"]) for i in inputs(orch)]
    assert answers == [("yes", "policy", ["touch"]), ("no", "policy", ["no-rm"])]
    assert all(str(i["how"]).startswith("meaning: ") for i in inputs(orch))
    job_now = supervise_until(orch, job.job_id, lambda j: not j.waiting, "the question to go")
    assert job_now.status == "running"
    why = run_cli("job", "why", "--job", job.job_id, state_dir=state_dir)
    assert f"{job.job_id} decision: answered no by policy rule 'no-rm'" in why.stdout, why
    time.sleep(0.5)
    assert (workdir / "keep").is_dir()
    orch.cancel(job.job_id, grace_sec=2)
