"""What an ACP agent's messages mean to orchestrate: activity from ``session/update``
kinds and the end of a turn, the wait a ``session/request_permission`` is, and which of
the request's options an answer chooses.

Pure functions over the `agent-client-protocol` package's models (``acp.schema``), so
they are tested without a process (tests/acp/). The runtime that calls them is
app/agents/acp_session.py.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from acp.schema import PermissionOption, ToolCallUpdate

from app.agents.base import tool_command
from registry.activity import Observation
from registry.vocabulary import Activity, Answer

SOURCE = "acp"
"""Every activity an ACP session reports has a source ``acp:<agent kind>:<what>``."""
PERMISSION = "request_permission"
END_OF_TURN = "end_turn"

WORKING_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
"""Updates that only come while the agent works on a turn. The others (available
commands, mode, config, session info, usage, and the user's own message, which
``session/load`` replays) say nothing about whether it works."""

OPTION_KINDS: Mapping[Answer, tuple[str, ...]] = {
    Answer.YES: ("allow_once",),
    Answer.ALWAYS: ("allow_always",),
    Answer.NO: ("reject_once", "reject_always"),
}
"""An answer's option kinds, best first. "yes" never takes an ``allow_always``: an answer
may only ever allow less than was asked, never more; "no" takes a permanent reject only
when the agent offers no single one."""

NEVER_CHOSEN = frozenset({"proceed_always_user"})
"""Option ids orchestrate never chooses, whatever their kind: Qwen Code's "Always Allow
for user" writes a rule into the user's own settings (its "in project" one is `always`)."""

TOOL_OF_KIND: Mapping[str, str] = {"execute": "Shell", "edit": "Edit", "delete": "Delete",
                                   "move": "Move", "fetch": "Fetch"}  # fmt: skip
"""A tool call's kind as the inbox names the tool (as the hook adapters do)."""


def source(agent: str, what: str) -> str:
    """``acp:<agent>:<what>``: the source `job why` shows."""
    return f"{SOURCE}:{agent}:{what}"


def update_kind(update: Any) -> str:
    """The ``sessionUpdate`` discriminator of an update model ('' if it has none)."""
    kind = getattr(update, "session_update", "")
    return kind if isinstance(kind, str) else ""


def activity_of_update(agent: str, update: Any) -> Observation | None:
    """The activity a ``session/update`` shows: working for the agent's messages,
    thoughts, tool calls and plan; nothing for the rest."""
    kind = update_kind(update)
    if kind not in WORKING_UPDATES:
        return None
    tool, command = "", ""
    if kind in ("tool_call", "tool_call_update"):
        tool, command = tool_and_command(update)
    return Observation(Activity.WORKING, source(agent, kind), tool=tool, command=command)


def end_of_turn(agent: str, stop_reason: str) -> Observation:
    """The agent answered ``session/prompt``: its turn is over, it waits for the next
    prompt (idle), whatever the reason it stopped (said in the source)."""
    return Observation(Activity.IDLE, source(agent, stop_reason or END_OF_TURN))


def tool_and_command(tool_call: ToolCallUpdate | Any) -> tuple[str, str]:
    """The tool a call uses and what it runs or touches: its raw input's command or
    path where it gives one, else its title (Gemini's title is the command itself)."""
    kind = getattr(tool_call, "kind", None) or ""
    tool = TOOL_OF_KIND.get(kind, kind)
    command = tool_command(getattr(tool_call, "raw_input", None))
    if not command:
        locations = getattr(tool_call, "locations", None) or []
        paths = [location.path for location in locations if getattr(location, "path", "")]
        command = shlex.join(paths) if kind in ("edit", "delete", "move") and paths else ""
    title = getattr(tool_call, "title", None) or ""
    return tool, command or title


PATH_KINDS = frozenset({"edit", "delete", "move", "read"})
"""Tool kinds about files: a policy judges their path, not a command."""


def policy_subject(tool_call: ToolCallUpdate | Any) -> tuple[str, str, str]:
    """(tool, shell command, file path) of a permission request, for the approval
    policy: the whole command (raw input, else Gemini's and Qwen's title) for a shell
    tool, the first path for a file tool; '' where there is none."""
    kind = getattr(tool_call, "kind", None) or ""
    tool = TOOL_OF_KIND.get(kind, kind)
    raw = getattr(tool_call, "raw_input", None)
    if kind in PATH_KINDS:
        path = ""
        if isinstance(raw, Mapping):
            path = next((v for k in ("file_path", "path") if isinstance(v := raw.get(k), str)), "")
        locations = getattr(tool_call, "locations", None) or []
        if not path and locations:
            path = getattr(locations[0], "path", "") or ""
        return tool, "", path
    command = raw.get("command") if isinstance(raw, Mapping) else None
    if not isinstance(command, str) or not command:
        command = getattr(tool_call, "title", None) or "" if kind == "execute" else ""
    return tool, command, ""


def permission_wait(agent: str, tool_call: ToolCallUpdate) -> Observation:
    """The wait a permission request is: its question, tool and command for the inbox."""
    tool, command = tool_and_command(tool_call)
    title = tool_call.title or command
    question = f"Allow {tool}: {title}?" if tool else f"Allow {title}?"
    return Observation(
        Activity.WAITING, source(agent, PERMISSION), question=question, tool=tool, command=command
    )


def option_for(answer: Answer, options: Sequence[PermissionOption]) -> str | None:
    """The id of the option that means ``answer`` (by its kind), None when the agent
    offers none that does."""
    for kind in OPTION_KINDS[answer]:
        for option in options:
            if option.kind == kind and option.option_id not in NEVER_CHOSEN:
                return option.option_id
    return None


def answers_offered(options: Sequence[PermissionOption]) -> tuple[Answer, ...]:
    """The answers the request's options can carry, in the vocabulary's order."""
    return tuple(answer for answer in Answer if option_for(answer, options) is not None)


def answer_of(word: str) -> Answer:
    """y/yes, n/no, a/always typed in the pane as an answer (ValueError otherwise)."""
    text = word.strip().lower()
    for answer in Answer:
        if text in (answer, answer[0]):
            return answer
    raise ValueError(f"answer y (yes), n (no) or a (always), not {text[:20]!r}")
