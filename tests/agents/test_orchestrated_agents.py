"""The real agent CLIs run *through orchestrate*, offline against scripted fake
models, in real tmux: the job is working, then waiting with the exact command the
agent wants to run, `answer` gives its own keys, the command's effect is on disk (or
not, for no), the agent goes idle and the job completes; state comes from each agent's
best signal (Claude's, Gemini's and Qwen's hooks, Codex's OSC 7501, Aider's screen)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Reply, Script
from registry.records import Job
from tests.agents.agent_cases import AGENTS, AgentCase
from tests.agents.clis import require
from tests.plugin.models import ServeModel

pytestmark = pytest.mark.agents

TASK = "create done.txt"
COMMAND = "touch done.txt"
# Where each agent's waiting state comes from first (its best signal).
WAITING_SOURCE = {
    "claude": "hook:claude:PermissionRequest",
    "codex": "osc:codex:blocked",
    "gemini": "hook:gemini:Notification:ToolPermission",
    "aider": "screen:aider.run_shell",
    "qwen": "hook:qwen:PermissionRequest",
}
START_SEC = 90
"""A deadline, not a wait, for the first question: Qwen Code takes 3.7 s of CPU to start,
so at a load of 30 on 2 cores its dialog came after more than 40 s."""


# Qwen Code starts in 5 s quiet but 14-70 s under load: its round runs in CI's --all
# (and scripts/drift), which keeps the default run under 5 minutes.
@pytest.fixture(
    params=[pytest.param(n, marks=pytest.mark.slow) if n == "qwen" else n for n in sorted(AGENTS)]
)
def agent(request: pytest.FixtureRequest) -> AgentCase:
    case = AGENTS[request.param]
    require(case.name)
    return case


def supervise_until(orch: Orchestrator, job_id: str, holds, what: str, timeout: float = 40):  # type: ignore[no-untyped-def]
    """Run supervision passes (as `watch` or `orchestrate supervise` would) until the
    job's record satisfies ``holds``; hooks record in between on their own."""
    deadline = time.monotonic() + timeout
    while True:
        orch.reconcile()
        job = orch.registry.get(job_id)
        if holds(job):
            return job
        if time.monotonic() > deadline:
            history = [
                (c.activity, c.observation.source) for c in orch.registry.activity_history(job_id)
            ]
            raise AssertionError(f"timed out waiting for {what}: {job.status} {history}")
        time.sleep(0.2)


def start(
    agent: AgentCase, orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, label: str
) -> tuple[str, Path]:
    workdir = tmp_path / f"work-{label}"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path / label, workdir, model.base_url)
    if agent.needs_git_repo:
        import subprocess

        subprocess.run(["git", "init", "-q", str(workdir)], env=run.env, check=True)
    job = orch.submit(TASK, agent.name, label, agent_cmd=run.argv, env=run.env, workdir=workdir)
    return job.job_id, workdir


def test_a_real_agent_waits_is_answered_yes_and_its_job_completes(
    agent: AgentCase,
    orch: Orchestrator,
    serve_model: ServeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "1")
    job_id, workdir = start(agent, orch, serve_model, tmp_path, f"{agent.name}-yes")
    job = supervise_until(
        orch,
        job_id,
        lambda j: j.waiting and COMMAND in (j.activity_data or {}).get("command", ""),
        "the agent to wait, naming its command",
        timeout=START_SEC,
    )
    assert job.activity_data is not None
    sources = [c.observation.source for c in orch.registry.activity_history(job_id)]
    assert WAITING_SOURCE[agent.name] in sources, sources
    assert "waiting since" in orch.registry.why(job_id)
    assert not (workdir / "done.txt").exists()

    answered = orch.answer(job_id, "yes")
    assert answered.answer == "yes"
    # selection lists (Claude, Codex, Gemini) by meaning; Aider's inline question by keys
    assert answered.how.startswith("meaning: ") == (agent.name != "aider"), answered.how

    deadline = time.monotonic() + 30
    while not (workdir / "done.txt").exists():
        assert time.monotonic() < deadline, "the command never ran"
        time.sleep(0.1)
    done = supervise_until(orch, job_id, lambda j: j.status == "completed", "completion")
    assert done.status == "completed"
    changes = [c.activity for c in orch.registry.activity_history(job_id)]
    assert changes.index("waiting") < len(changes) - 1 and "idle" in changes
    assert "stayed idle" in orch.registry.why(job_id)
    pane = orch.pane_for_job(job_id)
    assert pane is not None and orch.driver.pane_alive(pane)  # kept for review
    orch.stop_agent(orch.registry.get(job_id), grace_sec=2)


@pytest.mark.slow  # the full agent matrix (CI runs it): yes above stays in the default run
def test_a_real_agent_answered_no_runs_nothing(
    agent: AgentCase, orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    job_id, workdir = start(agent, orch, serve_model, tmp_path, f"{agent.name}-no")
    supervise_until(orch, job_id, lambda j: j.waiting, "the agent to wait", timeout=START_SEC)
    orch.answer(job_id, "no")

    def asks_it(j: Job) -> bool:
        return j.waiting and COMMAND in (j.activity_data or {}).get("command", "")

    job = supervise_until(orch, job_id, lambda j: not asks_it(j), "the question to go")
    if job.waiting:  # a question of its own in its place: Claude Code 2.1.332's offer
        assert (job.activity_data or {}).get("question") == agent.offer, job.activity_data
        orch.answer(job_id, "no")
        job = supervise_until(orch, job_id, lambda j: not j.waiting, "the offer to go")
    assert job.status == "running"
    assert not (workdir / "done.txt").exists()
    orch.cancel(job_id, grace_sec=2)
    assert orch.pane_for_job(job_id) is None


def test_claude_approvals_from_the_control_room(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """--approvals control-room: Claude's permission hook waits for the answer given here
    and returns it as the hook's decision; no key is typed into its pane."""
    agent = AGENTS["claude"]
    require("claude")
    workdir = tmp_path / "work-approvals"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path / "claude", workdir, model.base_url)
    job = orch.submit(TASK, "claude", "claude-cr", agent_cmd=run.argv, env=run.env,
                      workdir=workdir, approvals="control-room", approval_wait_sec=30)  # fmt: skip
    supervise_until(orch, job.job_id, lambda j: j.waiting, "the hook to wait")
    answered = orch.answer(job.job_id, "yes")
    assert answered.how == "hook decision"
    deadline = time.monotonic() + 30
    while not (workdir / "done.txt").exists():
        assert time.monotonic() < deadline, "the approved command never ran"
        time.sleep(0.1)
    inputs = [m.payload for m in orch.registry.bus.read_after(0) if m.type == "job.event"
              and m.payload["event"] == "input"]  # fmt: skip
    assert inputs[-1]["data"]["how"] == "hook decision"
    orch.cancel(job.job_id, grace_sec=2)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["claude", "gemini", "codex", "qwen"])
def test_after_tmux_is_killed_the_agent_resumes_its_own_conversation(
    name: str, orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """A reboot, simulated by killing the tmux server: the job is interrupted; resuming
    starts the agent with its own session id, and its next request carries the earlier
    conversation (the task it was given) plus the follow-up."""
    agent = AGENTS[name]
    require(name)
    workdir = tmp_path / "work-resume"
    workdir.mkdir()
    model = serve_model(agent.api(), Script([Reply("First part done.")]))
    run = agent.sandbox(tmp_path / name, workdir, model.base_url)
    job = orch.submit("remember the word PELICAN", name, f"{name}-r", agent_cmd=run.argv,
                      env=run.env, workdir=workdir)  # fmt: skip
    # the agent's own id, recorded (Codex tells it with its notify, after the turn)
    supervise_until(orch, job.job_id, lambda j: j.activity == "idle" and j.agent_session_id
                    and orch.registry.has_worked(j.job_id),
                    "its first turn to end, and its session id", timeout=START_SEC)  # fmt: skip
    turns_before = len(model.requests_of("turn"))
    orch.driver.server.cmd("kill-server")
    supervise_until(orch, job.job_id, lambda j: j.activity == "interrupted", "interrupted")
    resumed = orch.resume_interrupted(env=run.env)  # as the user's shell would give it
    assert [j.job_id for j in resumed] == [job.job_id]
    deadline = time.monotonic() + START_SEC
    while len(model.requests_of("turn")) <= turns_before:
        pane = orch.pane_for_job(job.job_id)
        screen = "\n".join(orch.driver.capture(pane, 40)) if pane else "(no pane)"
        assert time.monotonic() < deadline, f"the resumed agent never asked its model:\n{screen}"
        time.sleep(0.2)
    latest = json_text(model.requests_of("turn")[-1].body)
    assert "PELICAN" in latest and "Continue the task" in latest
    orch.cancel(job.job_id, grace_sec=2)


def json_text(body: object) -> str:
    import json

    return json.dumps(body)


def app_servers_of(job_dir: Path) -> list[int]:
    """Pids of processes whose command line names the job's app-server socket."""
    socket = str(job_dir / "codex-app-server.sock")
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(socket in word.decode("utf-8", "replace") for word in words):
            found.append(int(proc.name))
    return found


def start_codex_control_room(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path, label: str
) -> tuple[str, Path]:
    agent = AGENTS["codex"]
    require("codex")
    workdir = tmp_path / f"work-{label}"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path / label, workdir, model.base_url)
    job = orch.submit(TASK, "codex", label, agent_cmd=run.argv, env=run.env, workdir=workdir,
                      approvals="control-room")  # fmt: skip
    return job.job_id, workdir


def test_codex_approvals_through_its_app_server(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """--approvals control-room: Codex runs on an app-server of the job's own; its
    requestApproval is the job's wait (with the command) and `answer yes` goes back as
    `accept`, no key typed; the agent moves on; cancelling ends the app-server too."""
    job_id, workdir = start_codex_control_room(orch, serve_model, tmp_path, "codex-cr")
    job = supervise_until(
        orch,
        job_id,
        lambda j: j.waiting and j.activity_source == "appserver:codex:requestApproval",
        "the app-server's approval request",
    )
    assert (job.activity_data or {})["command"] == COMMAND
    assert "Codex app-server requestApproval: Shell `touch done.txt`" in orch.registry.why(job_id)
    assert app_servers_of(orch.job_dir(job_id))
    answered = orch.answer(job_id, "yes")
    assert answered.how == "app-server decision"
    deadline = time.monotonic() + 30
    while not (workdir / "done.txt").exists():
        assert time.monotonic() < deadline, "the accepted command never ran"
        time.sleep(0.1)
    job = supervise_until(orch, job_id, lambda j: j.activity == "idle", "idle after the turn")
    assert job.agent_session_id  # the thread id, for `codex resume`
    orch.cancel(job_id, grace_sec=2)
    assert orch.pane_for_job(job_id) is None
    assert app_servers_of(orch.job_dir(job_id)) == []


@pytest.mark.slow
@pytest.mark.parametrize(("reply", "runs"), [("no", False), ("always", True)])
def test_codex_app_server_decisions(
    reply: str, runs: bool, orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """no → decline (the command is not run, the turn goes on to its end); always →
    acceptForSession (it runs)."""
    job_id, workdir = start_codex_control_room(orch, serve_model, tmp_path, f"codex-{reply}")
    supervise_until(orch, job_id, lambda j: j.waiting and j.activity_source ==
                    "appserver:codex:requestApproval", "the request")  # fmt: skip
    assert orch.answer(job_id, reply).how == "app-server decision"  # type: ignore[arg-type]
    supervise_until(orch, job_id, lambda j: j.activity == "idle", "the turn's end")
    assert (workdir / "done.txt").exists() is runs
    orch.cancel(job_id, grace_sec=2)
    assert app_servers_of(orch.job_dir(job_id)) == []


@pytest.mark.slow
def test_codex_app_server_goes_with_tmux(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """tmux killed under a waiting Codex: its app-server goes too (no process left)."""
    job_id, _workdir = start_codex_control_room(orch, serve_model, tmp_path, "codex-kill")
    supervise_until(orch, job_id, lambda j: j.waiting, "the request")
    assert app_servers_of(orch.job_dir(job_id))
    orch.driver.server.cmd("kill-server")
    deadline = time.monotonic() + 15
    while app_servers_of(orch.job_dir(job_id)):
        assert time.monotonic() < deadline, "the app-server outlived tmux"
        time.sleep(0.2)


@pytest.mark.slow
def test_codex_on_its_app_server_resumes_its_thread_after_tmux_is_killed(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """Control-room approvals survive a reboot: the resumed TUI (`codex resume --remote`)
    joins a new app-server of the job's own and continues the same thread."""
    agent = AGENTS["codex"]
    require("codex")
    workdir = tmp_path / "work-cr-resume"
    workdir.mkdir()
    model = serve_model(agent.api(), Script([Reply("First part done.")]))
    run = agent.sandbox(tmp_path / "codex", workdir, model.base_url)
    job = orch.submit("remember the word PELICAN", "codex", "codex-crr", agent_cmd=run.argv,
                      env=run.env, workdir=workdir, approvals="control-room")  # fmt: skip
    first = supervise_until(orch, job.job_id, lambda j: j.activity == "idle" and
                            j.agent_session_id, "its first turn, and its thread id")  # fmt: skip
    turns_before = len(model.requests_of("turn"))
    orch.driver.server.cmd("kill-server")
    supervise_until(orch, job.job_id, lambda j: j.activity == "interrupted", "interrupted")
    assert orch.resume_interrupted(env=run.env)
    deadline = time.monotonic() + 40
    while len(model.requests_of("turn")) <= turns_before:
        pane = orch.pane_for_job(job.job_id)
        screen = "\n".join(orch.driver.capture(pane, 40)) if pane else "(no pane)"
        assert time.monotonic() < deadline, f"the resumed agent never asked its model:\n{screen}"
        time.sleep(0.2)
    latest = json_text(model.requests_of("turn")[-1].body)
    assert "PELICAN" in latest and "Continue the task" in latest
    assert orch.registry.get(job.job_id).agent_session_id == first.agent_session_id
    assert app_servers_of(orch.job_dir(job.job_id))
    orch.cancel(job.job_id, grace_sec=2)
    assert app_servers_of(orch.job_dir(job.job_id)) == []


@pytest.mark.slow
def test_codex_without_its_app_server_is_answered_on_its_screen(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """The fallback: an app-server that will not start leaves Codex on its own (the pane
    says why), and `answer` answers on its screen as without --approvals control-room:
    by meaning, the list read and the marker checked on "Yes" before Enter."""
    agent = AGENTS["codex"]
    real = require("codex")
    wrapper = tmp_path / "codex"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = app-server ] && exit 3\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    workdir = tmp_path / "work-fallback"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path / "codex-fb", workdir, model.base_url)
    argv = [str(wrapper), *run.argv[1:]]
    job = orch.submit(TASK, "codex", "codex-fb", agent_cmd=argv, env=run.env, workdir=workdir,
                      approvals="control-room")  # fmt: skip
    supervise_until(orch, job.job_id, lambda j: j.waiting and (j.activity_data or {})
                    .get("command") == COMMAND, "its dialog")  # fmt: skip
    assert "app-server exited with status 3" in orch.pane_log(job.job_id).read_text()
    how = orch.answer(job.job_id, "yes").how
    assert how.startswith("meaning: ") and "(Yes" in how, how
    deadline = time.monotonic() + 30
    while not (workdir / "done.txt").exists():
        assert time.monotonic() < deadline, "the command never ran"
        time.sleep(0.1)
    orch.cancel(job.job_id, grace_sec=2)
