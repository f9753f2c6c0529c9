"""Claude Code 2.1.332's folder-trust dialog (no numbers, the marker on "No, exit":
Enter exits), answered yes by meaning with the real CLI against the scripted model
server: the marker is moved to "Yes, I trust this folder", checked, then confirmed.
scripts/setup-agents installs 2.1.332 beside the pinned version; missing, it skips locally
and fails under CI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Script
from tests.agents import clis
from tests.agents.sandbox import claude
from tests.agents.test_orchestrated_agents import supervise_until
from tests.ci import missing_part
from tests.plugin.models import ServeModel

pytestmark = pytest.mark.agents

VERSION = "2.1.332"
CLI = clis.AGENT_BIN / f"claude-{VERSION}"
"""Installed beside the pinned Claude by scripts/setup-agents (its NEWER_NPM)."""


def trusted(config: Path, work: Path) -> bool:
    """Claude's own record that it trusts ``work`` (written once the dialog is answered)."""
    try:
        projects = json.loads(config.read_text(encoding="utf-8")).get("projects", {})
    except ValueError:  # caught mid-write
        return False
    return bool(projects.get(str(work.resolve()), {}).get("hasTrustDialogAccepted"))


def test_the_new_trust_dialog_is_answered_yes_by_meaning(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    if not CLI.exists():
        missing_part(f"Claude Code {VERSION} ({CLI}: run scripts/setup-agents)")
    from tests.agents.agent_cases import AGENTS

    work = tmp_path / "new-worktree"
    work.mkdir()
    model = serve_model(AGENTS["claude"].api(), Script.shell_then_reply("touch done.txt", "Done."))
    run = claude(tmp_path / "claude", work, model.base_url)
    config = Path(run.env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    config.write_text(json.dumps({"hasCompletedOnboarding": True}), encoding="utf-8")  # untrusted
    argv = [str(CLI), *run.argv[1:]]
    job = orch.submit(
        "create done.txt", "claude", "trust", agent_cmd=argv, env=run.env, workdir=work
    )

    supervise_until(orch, job.job_id, lambda j: j.waiting, "the trust dialog")
    pane = orch.pane_for_job(job.job_id)
    assert pane is not None
    assert "\u276f No, exit" in "\n".join(orch.driver.capture(pane, 40))

    answered = orch.answer(job.job_id, "yes")
    assert answered.how == "meaning: Down Enter (Yes, I trust this folder)"
    deadline = time.monotonic() + 10
    while not trusted(config, work):  # Claude writes it just after the dialog goes
        assert time.monotonic() < deadline, "Claude never recorded the folder as trusted"
        time.sleep(0.1)
    assert orch.driver.pane_alive(pane)  # yes did not exit Claude, as Enter alone would
    orch.stop_agent(orch.registry.get(job.job_id), grace_sec=2)
