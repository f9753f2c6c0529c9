"""Qwen Code as an ACP agent (`qwen --acp`, pinned 0.24.4): the second real ACP agent,
run *through orchestrate* offline against the scripted OpenAI tool-calling model, in a
real tmux with a real registry. Its permission request waits with the exact command
and is answered from the inbox (`orchestrate answer`, no key typed) or by the approval
policy (the decision recorded with its rule); resume loads the session."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Reply, Script
from registry.vocabulary import MessageType
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import supervise_until
from tests.plugin.models import ServeModel

pytestmark = pytest.mark.agents

TASK = "create done.txt"
COMMAND = "touch done.txt"
WAITING_SOURCE = "acp:qwen-acp:request_permission"


def start(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, label: str, script: Script
) -> tuple[str, Path, dict[str, str], object]:
    case = AGENTS["qwen"]
    require("qwen")
    workdir = tmp_path / f"work-{label}"
    workdir.mkdir()
    model = serve_model(case.api(), script)
    run = case.sandbox(tmp_path / label, workdir, model.base_url)
    job = orch.submit(TASK, "qwen-acp", label, agent_cmd=[*run.argv, "--acp"], env=run.env,
                      workdir=workdir)  # fmt: skip
    return job.job_id, workdir, run.env, model


def screen(orch: Orchestrator, job_id: str) -> str:
    pane = orch.pane_for_job(job_id)
    return "\n".join(orch.driver.capture(pane, 60)) if pane else "(no pane)"


def wait_for_file(path: Path, orch: Orchestrator, job_id: str) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, f"the command never ran:\n{screen(orch, job_id)}"
        time.sleep(0.1)


@pytest.mark.slow  # gemini-acp's yes keeps the real ACP path in the default run
def test_qwen_over_acp_waits_with_its_command_and_yes_from_the_cli_runs_it(
    orch: Orchestrator,
    serve_model: ServeModel,
    tmp_path: Path,
    cli,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "1")
    script = Script.shell_then_reply(COMMAND, "All done.")
    job_id, workdir, _env, _model = start(orch, serve_model, tmp_path, "qacp-yes", script)
    job = supervise_until(
        orch, job_id, lambda j: j.waiting, "the ACP permission request", timeout=90
    )
    assert job.activity_source == WAITING_SOURCE, screen(orch, job_id)
    assert (job.activity_data or {}).get("command") == COMMAND
    assert not (workdir / "done.txt").exists()
    answered = cli("answer", "--job", job_id, "yes")
    assert answered.returncode == 0, answered.stderr
    assert "ACP decision" in answered.stdout
    wait_for_file(workdir / "done.txt", orch, job_id)
    done = supervise_until(orch, job_id, lambda j: j.status == "completed", "completion")
    history = orch.registry.activity_history(job_id)
    assert history[-1].activity == "idle" and history[-1].observation.source.startswith("acp:")
    assert done.agent_session_id
    assert "All done." in screen(orch, job_id)
    orch.stop_agent(orch.registry.get(job_id), grace_sec=2)


@pytest.mark.slow  # CI's --all: a real Qwen start costs 14-70 s under load
def test_qwen_over_acp_is_answered_by_the_policy_with_its_rule_on_record(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy rule allows `touch`: the request is answered before anyone is asked (the
    job never shows waiting), the command runs, and the decision names the rule."""
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "1")
    (orch.settings.state_dir / "policy.toml").write_text(
        '[[rule]]\nname = "touching is fine"\ntool = "shell"\ncommand = "touch *"\n'
        'decision = "allow"\n',
        encoding="utf-8",
    )
    script = Script.shell_then_reply(COMMAND, "All done.")
    job_id, workdir, _env, _model = start(orch, serve_model, tmp_path, "qacp-pol", script)
    wait_for_file(workdir / "done.txt", orch, job_id)
    supervise_until(orch, job_id, lambda j: j.status == "completed", "completion", timeout=60)
    activities = [c.activity for c in orch.registry.activity_history(job_id)]
    assert "waiting" not in activities, activities
    inputs = [m.payload for m in orch.registry.bus.read_after(0)
              if m.type == "job.event" and m.payload["event"] == "input"]  # fmt: skip
    assert inputs and inputs[-1]["data"]["rules"] == ["touching is fine"], inputs
    assert inputs[-1]["data"]["command"] == COMMAND
    decisions = [m.payload for m in orch.registry.bus.read_after(0)
                 if m.type == MessageType.JOB_DECISION]  # fmt: skip
    assert decisions == [{"job_id": job_id, "answer": "yes", "by": "policy",
                          "reason": "policy rule 'touching is fine'"}], decisions  # fmt: skip
    orch.stop_agent(orch.registry.get(job_id), grace_sec=2)


@pytest.mark.slow
def test_qwen_over_acp_answered_no_runs_nothing(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    script = Script.shell_then_reply(COMMAND, "Understood, not running it.")
    job_id, workdir, _env, _model = start(orch, serve_model, tmp_path, "qacp-no", script)
    supervise_until(orch, job_id, lambda j: j.waiting, "the ACP permission request", timeout=90)
    answered = orch.answer(job_id, "no")
    assert answered.how == "ACP decision"
    supervise_until(orch, job_id, lambda j: j.activity == "idle", "the end of the turn")
    assert not (workdir / "done.txt").exists()
    orch.cancel(job_id, grace_sec=2)
    assert orch.pane_for_job(job_id) is None


@pytest.mark.slow
def test_qwen_over_acp_resumes_by_session_load(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """tmux killed (a reboot): resuming runs acp-run with --load-session; Qwen advertises
    loadSession and its next request holds the task and the continue prompt."""
    script = Script([Reply("First part done.")])
    job_id, _workdir, env, model = start(orch, serve_model, tmp_path, "qacp-r", script)
    job = supervise_until(orch, job_id, lambda j: j.activity == "idle" and j.agent_session_id
                          and orch.registry.has_worked(j.job_id), "the first turn's end",
                          timeout=90)  # fmt: skip
    turns_before = len(model.requests_of("turn"))  # type: ignore[attr-defined]
    orch.driver.server.cmd("kill-server")
    supervise_until(orch, job_id, lambda j: j.activity == "interrupted", "interrupted")
    assert [j.job_id for j in orch.resume_interrupted(env=env)] == [job_id]
    deadline = time.monotonic() + 90
    while len(model.requests_of("turn")) <= turns_before:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, f"no resumed turn:\n{screen(orch, job_id)}"
        time.sleep(0.2)
    body = json.dumps(model.requests_of("turn")[-1].body)  # type: ignore[attr-defined]
    said = orch.pane_log(job_id).read_text(errors="replace")
    assert f"resumed session {job.agent_session_id}" in said, said[-2000:]
    assert TASK in body and "Continue the task" in body
    supervise_until(orch, job_id, lambda j: j.activity == "idle", "the resumed turn's end")
    orch.cancel(job_id, grace_sec=2)
