"""Real Claude Code (pinned) through orchestrate, offline against the scripted Anthropic
server, with a budget: the server reports a large usage on the first response (of a
turn that asks for two tool calls), and the supervision pass that reads the
transcript pauses the job and interrupts the turn before the second tool call runs
(the first may run: it came in the same response as the usage that crossed the
budget). `job resume
--budget-usd` then refuses a budget below the spend and takes a larger one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from app.agents import adapter_for
from app.agents.screen import match_screen
from app.control import Orchestrator
from app.selftest.models.script import Reply, RunShell, Script, Usage
from app.usage.locate import find_transcript
from app.usage.sync import read_transcript
from registry.activity import Observation
from registry.budget import BudgetStore, check_budget_usd
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import supervise_until
from tests.conftest import run_cli
from tests.plugin.models import ServeModel

pytestmark = [pytest.mark.agents, pytest.mark.slow]  # CI --all and scripts/drift run it

HUGE = Usage(input_tokens=2_000, output_tokens=400_000, cached_input_tokens=0)
"""At any Claude list price (Haiku's $4 per million output tokens and up) over $1."""
POLICY = """
[[rule]]
name = "touch"
agent = "claude"
tool = "shell"
command = "touch *"
decision = "allow"
"""


def test_a_budget_crossed_mid_turn_stops_the_next_tool_call(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    require("claude")
    agent = AGENTS["claude"]
    workdir = tmp_path / "work-budget"
    workdir.mkdir()
    think = threading.Event()  # the model "thinks" about its second call until released
    script = Script(
        [
            RunShell("touch first.txt", usage=HUGE),
            RunShell("touch second.txt", gate=think),
            # the interrupted request may or may not have reached the server (and taken
            # the step above) before the Escape: the resumed turn asks for it again
            RunShell("touch second.txt"),
            Reply("All done."),
        ]
    )
    model = serve_model(agent.api(), script)
    run = agent.sandbox(tmp_path / "claude", workdir, model.base_url)
    state_dir = orch.settings.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "policy.toml").write_text(POLICY)  # touch runs without a dialog
    job = orch.submit("make two files", "claude", "claude-budget", agent_cmd=run.argv,
                      env=run.env, workdir=workdir, approvals="control-room",
                      approval_wait_sec=30)  # fmt: skip
    BudgetStore(orch.registry.bus).set_budget(job.job_id, check_budget_usd(0.5))
    try:
        paused = supervise_until(
            orch, job.job_id, lambda j: j.activity == "paused", "the budget to pause the job", 60
        )
    except AssertionError:
        think.set()  # the server answers (bounded) and the test ends
        raise
    # how soon after the model's response the spend was known and the turn stopped
    changes = orch.registry.activity_history(job.job_id)
    paused_ms = next(c.at_ms for c in changes if c.activity == "paused")
    found = find_transcript("claude", paused.agent_session_id, tmp_path, run.env)
    assert found is not None
    answered_ms = min(u.at_ms or paused_ms for u in read_transcript(found))
    print(f"budget: paused {paused_ms - answered_ms} ms after the model's response")
    data = paused.activity_data or {}
    assert paused.activity_source == "budget:claude"
    assert data["question"].startswith("budget $0.50 reached ($"), data
    assert paused.needs_person

    # the interrupted turn comes back to the prompt (2.1.332 first offers to make auto
    # mode the default, its own dialog after an Escape in manual mode), and never runs
    # the second call even once the model would answer it; the job stays paused
    after: list[Observation] = []

    def stopped(_job: object) -> bool:
        pane = orch.pane_for_job(job.job_id)
        lines = orch.driver.capture(pane, 40) if pane else []
        seen = match_screen("claude", adapter_for("claude").screen_rules, lines)
        after[:] = [seen] if seen is not None else []
        return seen is not None and (
            seen.activity == "idle" or seen.source == "screen:claude.auto_mode_offer"
        )

    supervise_until(orch, job.job_id, stopped, "the interrupted agent's prompt")
    think.set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (workdir / "second.txt").exists():
        orch.reconcile()  # passes go on; the job stays paused
        time.sleep(0.25)
    assert not (workdir / "second.txt").exists(), script.played
    assert orch.registry.get(job.job_id).status == "running"
    assert orch.registry.get(job.job_id).activity == "paused"

    why = run_cli("job", "why", "--job", job.job_id, state_dir=state_dir)
    assert f"{job.job_id} paused: budget $0.50 reached ($" in why.stdout, why

    spent = BudgetStore(orch.registry.bus).get(job.job_id)
    assert spent is not None and spent.spent_micro_usd > 500_000
    low = run_cli("job", "resume", "--job", job.job_id, "--budget-usd", "0.6",
                  state_dir=state_dir)  # fmt: skip
    assert low.returncode != 0 and "does not exceed" in low.stderr, low
    assert len(low.stderr.strip().splitlines()) == 1

    # a budget above the spend: the pause is lifted; at its prompt the agent is told to
    # go on, and a dialog on screen is left for the person (Enter would answer it)
    more = run_cli("job", "resume", "--job", job.job_id, "--budget-usd", "100",
                   state_dir=state_dir)  # fmt: skip
    assert more.returncode == 0, more
    if after[0].activity == "waiting":
        assert "asks a question: answer it" in more.stdout, more
        assert orch.registry.get(job.job_id).activity == "waiting"
        orch.cancel(job.job_id, grace_sec=2)
        return
    assert "told to go on" in more.stdout, more
    supervise_until(orch, job.job_id, lambda j: (workdir / "second.txt").exists(),
                    "the resumed agent to run its next call", 30)  # fmt: skip
    assert orch.registry.get(job.job_id).activity != "paused"
    orch.cancel(job.job_id, grace_sec=2)
