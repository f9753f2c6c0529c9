"""Qwen Code's own ACP messages (captured from `qwen --acp` 0.24.4): the wait its
permission request is, which option each answer takes (never "Always Allow for user",
which writes into the user's own settings), and what the policy judges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp.schema import PermissionOption, ToolCallUpdate

from app.agents import acp_protocol as protocol
from registry.vocabulary import Activity, Answer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "qwen" / "acp"


def load(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def test_qwen_permission_request_is_a_wait_with_its_command() -> None:
    call = ToolCallUpdate.model_validate(load("request_permission_tool_call"))
    wait = protocol.permission_wait("qwen-acp", call)
    assert wait.activity == Activity.WAITING
    assert (wait.tool, wait.command) == ("Shell", "touch done.txt")
    assert wait.source == "acp:qwen-acp:request_permission"
    assert protocol.policy_subject(call) == ("Shell", "touch done.txt", "")


def test_each_answer_takes_its_option_and_never_the_user_wide_rule() -> None:
    options = [PermissionOption.model_validate(o) for o in load("request_permission_options")]
    assert [o.option_id for o in options][:2] == ["proceed_always_project", "proceed_always_user"]
    assert protocol.option_for(Answer.YES, options) == "proceed_once"
    assert protocol.option_for(Answer.ALWAYS, options) == "proceed_always_project"
    assert protocol.option_for(Answer.NO, options) == "cancel"
    only_user = [o for o in options if o.option_id != "proceed_always_project"]
    assert protocol.option_for(Answer.ALWAYS, only_user) is None
    assert Answer.ALWAYS not in protocol.answers_offered(only_user)


def test_qwen_advertises_session_load() -> None:
    init = load("initialize_response")
    assert init["agentCapabilities"]["loadSession"] is True
    assert init["agentInfo"] == {"name": "qwen-code", "title": "Qwen Code", "version": "0.24.4"}
