"""The real agent CLIs, offline against scripted fake models in real tmux panes: each asks
to run a shell command, shows its dialog, runs it on yes and not on no, and goes idle."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.selftest.models.script import Script
from tests.agents.agent_cases import AGENTS, AgentCase
from tests.agents.clis import require
from tests.plugin.models import ServeModel
from tests.polling import poll_until

pytestmark = [pytest.mark.agents, pytest.mark.slow]

TASK = "create done.txt"
COMMAND = "touch done.txt"


@pytest.fixture(params=sorted(AGENTS))
def agent(request: pytest.FixtureRequest) -> AgentCase:
    case = AGENTS[request.param]
    require(case.name)
    return case


def test_yes_runs_the_command_and_the_agent_goes_idle(
    agent: AgentCase, serve_model: ServeModel, tmp_path: Path
) -> None:
    """The dialog names the command; nothing runs before the answer; yes runs it, the
    tool's result goes back to the model, and the agent is idle at its prompt again."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path, workdir, model.base_url)
    with agent.start(run, workdir, TASK, raw_log=None) as pane:
        dialog = pane.wait_for(agent.dialog)
        assert COMMAND in dialog
        assert not (workdir / "done.txt").exists()

        agent.answer(pane, agent.yes)

        poll_until((workdir / "done.txt").exists, 30, "done.txt on disk")
        screen = agent.wait_until_idle(pane, 30, f"{agent.name} idle after yes")
        if agent.name == "aider":  # no shell tool: the command's (empty) output is not sent
            assert len(model.requests_of("turn")) == 1
        else:
            poll_until(model.tool_results, 5, "the tool result sent back to the model")
            pane.wait_for("All done.")
        assert pane.dead_status() is None, screen


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_no_runs_nothing_and_the_agent_goes_idle(
    name: str, serve_model: ServeModel, tmp_path: Path
) -> None:
    """No (the agent's own key for it) leaves the command unrun and the agent at its prompt."""
    agent = AGENTS[name]
    require(agent.name)
    workdir = tmp_path / "work"
    workdir.mkdir()
    model = serve_model(agent.api(), Script.shell_then_reply(COMMAND, "All done."))
    run = agent.sandbox(tmp_path, workdir, model.base_url)
    with agent.start(run, workdir, TASK, raw_log=None) as pane:
        pane.wait_for(agent.dialog)

        agent.answer(pane, agent.no)

        agent.wait_until_idle(pane, 30, f"{agent.name} idle after no")
        assert not (workdir / "done.txt").exists()
        assert pane.dead_status() is None
