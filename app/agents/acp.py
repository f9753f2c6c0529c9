"""Any agent that speaks the Agent Client Protocol (ACP), run as a structured job.

``submit --agent acp --agent-cmd "gemini --acp"`` (or a preset: ``--agent
gemini-acp``). The job's pane runs orchestrate's own ACP client and transcript view,
`orchestrate acp-run` (app/agents/acp_session.py), which spawns the agent over stdio.
State comes from the protocol (source ``acp:<kind>:…``), permission requests are
answered by decision (no keys), and resume uses ``session/load`` where the agent
advertises it, else starts afresh with the original prompt.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from app.agents.acp_view import YOUR_TURN
from app.agents.base import AgentAdapter, Keys, LaunchContext, LaunchPlan
from app.agents.env import orchestrate_command
from app.agents.screen import ScreenRule
from app.agents.versions import TestedVersions
from registry.activity import AGENT_NAMES
from registry.vocabulary import Activity

ACP_PRESETS: Mapping[str, tuple[str, ...]] = {
    "gemini-acp": ("gemini", "--acp"),
    "qwen-acp": ("qwen", "--acp"),
}
"""Named ACP agents: kind -> the command that starts it in ACP mode. A new ACP agent
joins here (and in app/agents/__init__.py's table) with a subclass below."""
PROMPT_FILE = "prompt.txt"
"""Where app/control/launch.py writes the job's prompt (in its job dir)."""
AGENT_LOG = "acp-agent.log"
"""The agent's stderr (its own logging), beside the pane log."""

PANE_KEYS = Keys(yes=("y", "Enter"), no=("n", "Enter"), always=("a", "Enter"),
                 interrupt=(), exit=("C-c",))  # fmt: skip
"""What the transcript view takes typed: y/n/a and Enter answer a held request (as a
decision, the same way the inbox does); C-c ends the view and the agent with it. The
inbox never types these: an ACP question is answered by decision
(app/approvals/question.py)."""


def runner_argv(
    ctx: LaunchContext, agent_argv: Sequence[str], *, load_session: str | None = None
) -> list[str]:
    """The pane's command: `orchestrate acp-run` for this job, then the agent's argv
    after ``--`` (one argv list: no shell ever sees it)."""
    words = [*orchestrate_command(), "acp-run", "--job", ctx.job_id,
             "--workdir", str(ctx.workdir), "--prompt-file", str(ctx.job_dir / PROMPT_FILE),
             "--agent-log", str(ctx.job_dir / AGENT_LOG)]  # fmt: skip
    if load_session:
        words += ["--load-session", load_session]
    return [*words, "--", *agent_argv]


class Acp(AgentAdapter):
    """Any ACP agent; its command comes from --agent-cmd."""

    kind = "acp"
    display_name = AGENT_NAMES["acp"]
    executable = ""
    deliver = "argv"
    done_when = "idle"
    has_hooks = True  # the protocol reports from inside the agent: structured
    resumable = True
    keys = PANE_KEYS
    tested_versions: TestedVersions | None = None
    screen_rules = (
        # The view's own end-of-turn line (a cross-check; agent text cannot draw it),
        # which also keeps a quiet transcript from being read as idle by its output.
        ScreenRule("acp.idle", Activity.IDLE, f"^{YOUR_TURN}", lines=1),
    )
    default_argv: tuple[str, ...] = ()

    def agent_argv(self, argv: Sequence[str] | None) -> list[str]:
        """The ACP agent's command: the user's, else the preset's."""
        return list(argv) if argv else list(self.default_argv)

    def refuse_command(self, argv: Sequence[str] | None, env: Mapping[str, str]) -> str | None:
        """Why this job cannot start (None when it can): no command, or one not found."""
        words = self.agent_argv(argv)
        if not words:
            return (
                f"agent {self.kind!r} needs the ACP agent's command: "
                "--agent-cmd 'gemini --acp' (or a preset: " + ", ".join(ACP_PRESETS) + ")"
            )
        program = words[0]
        found = (
            Path(program).is_file() and os.access(program, os.X_OK)
            if os.sep in program
            else shutil.which(program, path=env.get("PATH", os.defpath)) is not None
        )
        if not found:
            return f"ACP agent command {program!r} is not an executable here (nothing on PATH)"
        return None

    def start(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan:
        """`orchestrate acp-run … -- AGENT ARGV`: the prompt is read from the job's file."""
        return LaunchPlan(runner_argv(ctx, self.agent_argv(argv)), deliver="argv")

    def resume(self, ctx: LaunchContext, argv: Sequence[str] | None = None) -> LaunchPlan | None:
        """``session/load`` of the job's session where the agent can (acp-run checks
        the agent's ``loadSession`` and says so when it cannot)."""
        if not ctx.agent_session_id:
            return None
        return LaunchPlan(
            runner_argv(ctx, self.agent_argv(argv), load_session=ctx.agent_session_id),
            deliver="argv",
            agent_session_id=ctx.agent_session_id,
        )


class GeminiAcp(Acp):
    """Gemini CLI in ACP mode (``gemini --acp``; ``--experimental-acp`` before 0.61)."""

    kind = "gemini-acp"
    display_name = AGENT_NAMES["gemini-acp"]
    executable = "gemini"
    default_argv = ACP_PRESETS["gemini-acp"]
    tested_versions = TestedVersions("0.61.0", "0.61.0")


class QwenAcp(Acp):
    """Qwen Code in ACP mode (``qwen --acp``): its config as the user has it (QWEN_HOME
    or ~/.qwen); no hooks are written, the protocol says it all."""

    kind = "qwen-acp"
    display_name = AGENT_NAMES["qwen-acp"]
    executable = "qwen"
    default_argv = ACP_PRESETS["qwen-acp"]
    tested_versions = TestedVersions("0.24.4", "0.24.4")
