"""Real Claude Code through orchestrate, offline against a scripted model, with a
policy: an allowed `touch` runs without the job ever waiting, a denied `rm -rf` runs
nothing, a compound command waits for a person, and `job why` names the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Reply, RunShell, Script
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import supervise_until
from tests.conftest import run_cli
from tests.plugin.models import ServeModel

pytestmark = pytest.mark.agents

POLICY = """
[[rule]]
name = "touch"
agent = "claude"
tool = "shell"
command = "touch *"
decision = "allow"

[[rule]]
name = "no-rm"
tool = "shell"
command = "rm *"
decision = "deny"
"""


def test_claude_is_answered_by_the_policy(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    require("claude")
    agent = AGENTS["claude"]
    state_dir = orch.settings.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "policy.toml").write_text(POLICY)
    workdir = tmp_path / "work-policy"
    (workdir / "keep").mkdir(parents=True)
    script = Script(
        [
            RunShell("touch done.txt"),
            RunShell("rm -rf keep"),
            RunShell("touch second.txt && curl -sS http://127.0.0.1:9/x"),
            Reply("All done."),
        ]
    )
    model = serve_model(agent.api(), script)
    run = agent.sandbox(tmp_path / "claude", workdir, model.base_url)
    # control-room approvals: the permission hook may take 35 s, not 5 (a loaded test
    # machine's hook process alone took over 2 s); the policy answers first either way
    job = orch.submit("tidy up", "claude", "claude-policy", agent_cmd=run.argv, env=run.env,
                      workdir=workdir, approvals="control-room", approval_wait_sec=30)  # fmt: skip

    asked = supervise_until(orch, job.job_id, lambda j: j.waiting, "the compound command to ask")
    assert "curl" in (asked.activity_data or {}).get("command", "")
    assert (workdir / "done.txt").exists()  # allowed by rule 'touch': it ran
    assert (workdir / "keep").is_dir()  # denied by rule 'no-rm': nothing ran
    assert not (workdir / "second.txt").exists()  # the compound waits for a person
    waits = [
        c.observation.command
        for c in orch.registry.activity_history(job.job_id)
        if c.activity == "waiting"
    ]
    assert len(waits) == 1, waits  # neither the touch nor the rm ever showed waiting

    inputs = [
        m.payload["data"]
        for m in orch.registry.bus.read_after(0)
        if m.type == "job.event" and m.payload["event"] == "input"
    ]
    assert [(i["answer"], i["rules"]) for i in inputs] == [("yes", ["touch"]), ("no", ["no-rm"])]
    why = run_cli("job", "why", "--job", job.job_id, state_dir=state_dir)
    assert f"{job.job_id} decision: answered no by policy rule 'no-rm'" in why.stdout, why

    orch.cancel(job.job_id, grace_sec=2)
