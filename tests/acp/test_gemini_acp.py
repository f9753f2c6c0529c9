"""Gemini CLI as an ACP agent (`gemini --acp`, pinned 0.61.0) run *through orchestrate*,
offline against the scripted Gemini model server, in a real tmux with a real registry:
the pane runs `orchestrate acp-run`, the job works, waits with the exact command, is
answered from `orchestrate answer` with no key typed, the command runs (or not), and
the turn's end is idle; resume loads the session (Gemini advertises loadSession)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Reply, Script
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import supervise_until
from tests.plugin.models import ServeModel

pytestmark = pytest.mark.agents

TASK = "create done.txt"
COMMAND = "touch done.txt"
WAITING_SOURCE = "acp:gemini-acp:request_permission"


def start(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, label: str, script: Script
) -> tuple[str, Path, dict[str, str], object]:
    case = AGENTS["gemini"]
    require("gemini")
    workdir = tmp_path / f"work-{label}"
    workdir.mkdir()
    model = serve_model(case.api(), script)
    run = case.sandbox(tmp_path / label, workdir, model.base_url)
    job = orch.submit(TASK, "gemini-acp", label, agent_cmd=[*run.argv, "--acp"], env=run.env,
                      workdir=workdir)  # fmt: skip
    return job.job_id, workdir, run.env, model


def screen(orch: Orchestrator, job_id: str) -> str:
    pane = orch.pane_for_job(job_id)
    return "\n".join(orch.driver.capture(pane, 60)) if pane else "(no pane)"


def test_gemini_over_acp_waits_with_its_command_and_yes_from_the_cli_runs_it(
    orch: Orchestrator,
    serve_model: ServeModel,
    tmp_path: Path,
    cli,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "1")
    script = Script.shell_then_reply(COMMAND, "All done.")
    job_id, workdir, _env, _model = start(orch, serve_model, tmp_path, "gacp-yes", script)
    job = supervise_until(
        orch, job_id, lambda j: j.waiting, "the ACP permission request", timeout=60
    )
    assert job.activity_source == WAITING_SOURCE, screen(orch, job_id)
    assert (job.activity_data or {}).get("command") == COMMAND
    assert "Gemini CLI (ACP) ACP request_permission" in orch.registry.why(job_id)
    assert not (workdir / "done.txt").exists()
    activities = [c.activity for c in orch.registry.activity_history(job_id)]
    assert "working" in activities[: activities.index("waiting")]

    answered = cli("answer", "--job", job_id, "yes")
    assert answered.returncode == 0, answered.stderr
    assert "ACP decision" in answered.stdout
    deadline = time.monotonic() + 30
    while not (workdir / "done.txt").exists():
        assert time.monotonic() < deadline, f"the command never ran:\n{screen(orch, job_id)}"
        time.sleep(0.1)
    done = supervise_until(orch, job_id, lambda j: j.status == "completed", "completion")
    history = orch.registry.activity_history(job_id)
    assert history[-1].activity == "idle" and history[-1].observation.source.startswith("acp:")
    assert done.agent_session_id  # its ACP session, for resume
    shown = screen(orch, job_id)
    assert "All done." in shown and "── your turn" in shown
    orch.stop_agent(orch.registry.get(job_id), grace_sec=2)


@pytest.mark.slow
def test_gemini_over_acp_answered_no_runs_nothing(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    script = Script.shell_then_reply(COMMAND, "Understood, not running it.")
    job_id, workdir, _env, _model = start(orch, serve_model, tmp_path, "gacp-no", script)
    supervise_until(orch, job_id, lambda j: j.waiting, "the ACP permission request", timeout=60)
    answered = orch.answer(job_id, "no")
    assert answered.how == "ACP decision"
    supervise_until(orch, job_id, lambda j: j.activity == "idle", "the end of the turn")
    assert not (workdir / "done.txt").exists()
    orch.cancel(job_id, grace_sec=2)
    assert orch.pane_for_job(job_id) is None


@pytest.mark.slow
def test_gemini_over_acp_resumes_by_session_load_or_says_it_could_not(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """tmux killed (a reboot): resuming runs acp-run with --load-session. Gemini CLI
    0.61.0 advertises loadSession, and its session/load either replays the session (the
    next request holds the task and the continue prompt) or, in about half the runs
    here, answers "No previous sessions found for this project" (it records the session
    anew while reading it): then the pane says so and the job starts afresh with the
    original prompt. Either way the job goes on."""
    script = Script([Reply("First part done.")])
    job_id, _workdir, env, model = start(orch, serve_model, tmp_path, "gacp-r", script)
    job = supervise_until(orch, job_id, lambda j: j.activity == "idle" and j.agent_session_id
                          and orch.registry.has_worked(j.job_id), "the first turn's end",
                          timeout=60)  # fmt: skip
    turns_before = len(model.requests_of("turn"))  # type: ignore[attr-defined]
    orch.driver.server.cmd("kill-server")
    supervise_until(orch, job_id, lambda j: j.activity == "interrupted", "interrupted")
    assert [j.job_id for j in orch.resume_interrupted(env=env)] == [job_id]

    def asked_again() -> str | None:
        later = model.requests_of("turn")[turns_before:]  # type: ignore[attr-defined]
        bodies = [json.dumps(request.body) for request in later]
        return next((body for body in bodies if TASK in body), None)

    deadline = time.monotonic() + 60
    while (body := asked_again()) is None:
        assert time.monotonic() < deadline, f"no resumed turn:\n{screen(orch, job_id)}"
        time.sleep(0.2)
    said = orch.pane_log(job_id).read_text(errors="replace")  # the pane's output, piped
    if f"resumed session {job.agent_session_id}" in said:
        assert "Continue the task" in body
    else:
        assert "session/load failed" in said and "starting afresh" in said, said[-2000:]
        assert "Continue the task" not in body
    supervise_until(orch, job_id, lambda j: j.activity == "idle", "the resumed turn's end")
    orch.cancel(job_id, grace_sec=2)


@pytest.mark.slow
def test_a_follow_up_sent_to_the_pane_is_the_next_prompt(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`orchestrate send` (a paste and Enter, as a person typing) after the job completed:
    the transcript sends it as the next session/prompt and the job runs again."""
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "1")
    script = Script([Reply("First part done."), Reply("Second part done.")])
    job_id, _workdir, _env, model = start(orch, serve_model, tmp_path, "gacp-f", script)
    supervise_until(orch, job_id, lambda j: j.status == "completed", "completion", timeout=60)
    orch.send_input(job_id, "now the second part")
    deadline = time.monotonic() + 60
    while "Second part done." not in screen(orch, job_id):
        assert time.monotonic() < deadline, f"no second turn:\n{screen(orch, job_id)}"
        time.sleep(0.2)
    latest = json.dumps(model.requests_of("turn")[-1].body)  # type: ignore[attr-defined]
    assert "now the second part" in latest and TASK in latest  # the same session
    supervise_until(orch, job_id, lambda j: j.status == "completed", "completed again")
    changes = [(c.activity, c.observation.source) for c in orch.registry.activity_history(job_id)]
    assert changes[-1] == ("idle", "acp:gemini-acp:end_turn")
    assert changes.count(("idle", "acp:gemini-acp:end_turn")) == 2, changes
    orch.stop_agent(orch.registry.get(job_id), grace_sec=2)
