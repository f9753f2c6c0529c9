"""The newest Claude Code (2.1.332 when written) run through orchestrate, offline against
the scripted model server, in real tmux: auto mode's block recorded with its source and
shown by `job why`; yes and no on the Bash dialog when the user's own settings ask for
dialogs (``defaultMode: default``); resume after tmux is killed.

The pinned run drives the 2.1.332 that scripts/setup-agents installs beside the pinned
version; the drift report (``ORCHESTRATE_AGENT_SET=latest``, scripts/drift) drives
whatever newest version it resolved. Missing, it skips locally and fails under CI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Reply, RunShell, Script
from registry.records import Job
from registry.vocabulary import Activity, Answer, JobStatus
from tests.agents import clis
from tests.agents.agent_cases import AGENTS
from tests.agents.sandbox import CLAUDE_ASK_ME, AgentRun, claude
from tests.agents.test_orchestrated_agents import json_text, supervise_until
from tests.ci import missing_part
from tests.plugin.models import ServeModel

pytestmark = [pytest.mark.agents, pytest.mark.slow]  # CI --all and scripts/drift run these

VERSION = "2.1.332"
CLI = clis.AGENT_BIN / ("claude" if clis.AGENT_SET == "latest" else f"claude-{VERSION}")
"""The newest Claude: the latest set's, else 2.1.332 installed beside the pinned one."""
OFFER = "Make auto mode your default permission mode?"
AUTO_MODE: dict[str, object] = {}
"""A user's settings that leave 2.1.332's default, auto mode (the sandbox asks for dialogs)."""


def newest_claude(root: Path, work: Path, base_url: str, user_settings: object = None) -> AgentRun:
    """Claude's offline sandbox with the newest CLI; ``user_settings`` written as the
    (throwaway) user's own settings.json in its config dir (the sandbox's asks for
    dialogs: ``defaultMode: default``)."""
    if not CLI.exists():
        missing_part(f"Claude Code {VERSION} or newer ({CLI}: run scripts/setup-agents)")
    run = claude(root, work, base_url)
    if user_settings is not None:
        path = Path(run.env["CLAUDE_CONFIG_DIR"]) / "settings.json"
        path.write_text(json.dumps(user_settings), encoding="utf-8")
    return AgentRun(run.agent, [str(CLI), *run.argv[1:]], run.env, run.config_dir)


def wait_for(holds: object, what: str, timeout: float = 30) -> None:
    """Poll a condition (a file appears) until a deadline."""
    deadline = time.monotonic() + timeout
    while not holds():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_an_auto_mode_block_is_recorded_and_the_stopped_agent_needs_you(
    orch: Orchestrator,
    serve_model: ServeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server's safety check flags the command: Claude does not run it, its
    PermissionDenied hook records the block, and once it stops the job is `blocked` (it
    needs a person, and does not complete at idle); `job why` says what was blocked."""
    monkeypatch.setenv("ORCHESTRATE_IDLE_GRACE_SEC", "1")
    work, outside = tmp_path / "job-tree", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    command = f"rm -rf {outside}"
    script = Script([RunShell(command, flagged=True), Reply("I was blocked, so I stop here.")])
    model = serve_model(AGENTS["claude"].api(), script)
    run = newest_claude(tmp_path / "claude", work, model.base_url, AUTO_MODE)
    job = orch.submit("clean up", "claude", "auto", agent_cmd=run.argv, env=run.env, workdir=work)

    def stopped_blocked(j: Job) -> bool:
        return j.activity == Activity.BLOCKED

    blocked = supervise_until(orch, job.job_id, stopped_blocked, "the block, then the stop")
    assert outside.exists()  # blocked: nothing ran
    assert blocked.needs_person and not blocked.waiting
    history = orch.registry.activity_history(job.job_id)
    denied = [c.observation for c in history if c.observation.source.endswith("PermissionDenied")]
    assert denied and denied[0].command == command and denied[0].blocked_by == "auto mode"
    assert "Deletes files outside the work tree" in denied[0].question  # the server's reason
    why = orch.registry.why(job.job_id)
    assert f"auto mode blocked `{command}`" in why and "blocked since" in why, why
    # a supervision pass later (grace over): still blocked, not completed at idle
    time.sleep(1.5)
    orch.reconcile()
    assert orch.registry.get(job.job_id).status == JobStatus.RUNNING
    assert orch.registry.get(job.job_id).activity == Activity.BLOCKED
    orch.cancel(job.job_id, grace_sec=2)


@pytest.mark.parametrize("answer", [Answer.YES, Answer.NO])
def test_the_bash_dialog_is_answered_when_the_user_asks_for_dialogs(
    answer: Answer, orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """``defaultMode: default`` in the user's settings: 2.1.332 asks (four options now:
    Yes / always for the folder / switch to auto mode / No); yes runs the command and
    the agent goes idle, no runs nothing and the question goes."""
    work = tmp_path / "job-tree"
    work.mkdir()
    model = serve_model(AGENTS["claude"].api(), Script.shell_then_reply("touch done.txt"))
    run = newest_claude(tmp_path / "claude", work, model.base_url, CLAUDE_ASK_ME)
    job = orch.submit("create done.txt", "claude", f"ask-{answer}", agent_cmd=run.argv,
                      env=run.env, workdir=work)  # fmt: skip

    def asks(j: Job) -> bool:
        return j.waiting and "touch done.txt" in (j.activity_data or {}).get("command", "")

    supervise_until(orch, job.job_id, asks, "the Bash dialog, naming its command")
    assert "hook:claude:PermissionRequest" in [
        c.observation.source for c in orch.registry.activity_history(job.job_id)
    ]
    orch.answer(job.job_id, answer)
    if answer == Answer.YES:
        wait_for(lambda: (work / "done.txt").exists(), "the approved command never ran")
        done = supervise_until(orch, job.job_id, lambda j: j.activity == Activity.IDLE, "idle")
        assert not done.needs_person
        # after a turn in manual mode 2.1.332 may offer to make auto mode the default: the
        # job then waits on that question, and a no to it leaves the agent idle
        pane = orch.pane_for_job(job.job_id)
        assert pane is not None

        def offer_read_or_none(j: Job) -> bool:
            shown = OFFER in "\n".join(orch.driver.capture(pane, 40))
            asked = (j.activity_data or {}).get("question") == OFFER
            return asked if shown else time.monotonic() > quiet_until

        quiet_until = time.monotonic() + 5
        offered = supervise_until(orch, job.job_id, offer_read_or_none, "the offer read")
        if offered.waiting:
            assert orch.answer(job.job_id, Answer.NO).how.endswith("(No, keep manual mode)")
            supervise_until(orch, job.job_id, lambda j: j.activity == Activity.IDLE, "idle again")
    else:
        # 2.1.332 may follow a "no" with an offer to make auto mode the default: a
        # question no hook reports, which takes the answered one's place (the hook's
        # wait no longer outranks it), declined by meaning ("No, keep manual mode")
        gone = supervise_until(orch, job.job_id, lambda j: not asks(j), "the question to go")
        if gone.waiting:
            assert (gone.activity_data or {}).get("question") == OFFER, gone.activity_data
            assert (gone.activity_source or "").startswith("control-room:claude:after the")
            assert orch.answer(job.job_id, Answer.NO).how.endswith("(No, keep manual mode)")
            gone = supervise_until(orch, job.job_id, lambda j: not j.waiting, "the offer to go")
        assert gone.status == JobStatus.RUNNING and not (work / "done.txt").exists()
    orch.cancel(job.job_id, grace_sec=2)


@pytest.mark.slow
def test_after_tmux_is_killed_the_newest_claude_resumes_its_conversation(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """Resume by the session id orchestrate chose: the next request carries the task it
    was first given and the follow-up."""
    work = tmp_path / "job-tree"
    work.mkdir()
    model = serve_model(AGENTS["claude"].api(), Script([Reply("First part done.")]))
    run = newest_claude(tmp_path / "claude", work, model.base_url)
    job = orch.submit("remember the word PELICAN", "claude", "resume", agent_cmd=run.argv,
                      env=run.env, workdir=work)  # fmt: skip

    def first_turn_over(j: Job) -> bool:
        worked = orch.registry.has_worked(j.job_id)
        return j.activity == Activity.IDLE and bool(j.agent_session_id) and worked

    supervise_until(orch, job.job_id, first_turn_over, "its first turn to end")
    turns_before = len(model.requests_of("turn"))
    orch.driver.server.cmd("kill-server")
    supervise_until(orch, job.job_id, lambda j: j.activity == Activity.INTERRUPTED, "interrupted")
    resumed = orch.resume_interrupted(env=run.env)
    assert [j.job_id for j in resumed] == [job.job_id]
    wait_for(lambda: len(model.requests_of("turn")) > turns_before, "no request after resume", 40)
    latest = json_text(model.requests_of("turn")[-1].body)
    assert "PELICAN" in latest and "Continue the task" in latest
    orch.cancel(job.job_id, grace_sec=2)
