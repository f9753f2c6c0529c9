"""The policy for agents answered by keys, without an agent: which waits it looks at,
that its answer waits for the very question on screen, and the one claim per
question that keeps two observers from both typing."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.policy.decide import Question
from app.policy.keys import PolicyByKeys, claimed, same_question
from app.settings import Settings
from registry.activity import Observation
from registry.vocabulary import Activity

ASKED = Question("gemini", "Shell", command="touch done.txt")


def seen(tool: str, command: str) -> Observation:
    return Observation(Activity.WAITING, "screen:gemini.approval", tool=tool, command=command)


@pytest.mark.parametrize(
    ("tool", "command", "same"),
    [
        ("Shell", "touch done.txt", True),
        ("run_shell_command", "touch  done.txt", True),  # any shell tool; spaces aside
        ("Shell", "touch done.txt; rm -rf ~", False),  # another command on screen
        ("Shell", "touch done.t", False),  # cut by the pane's width
        ("Shell", "", False),  # the dialog names no command
        ("Edit", "touch done.txt", False),  # another tool
    ],
)
def test_the_answer_waits_for_the_very_question(tool: str, command: str, same: bool) -> None:
    assert same_question(seen(tool, command), ASKED) is same


def test_a_question_is_claimed_once(tmp_path: Path) -> None:
    assert claimed(tmp_path / "logs" / "j1", 1234)
    assert not claimed(tmp_path / "logs" / "j1", 1234)  # another observer: not again
    assert claimed(tmp_path / "logs" / "j1", 1235)  # the next question


def job(agent: str, **data: Any) -> SimpleNamespace:
    return SimpleNamespace(
        job_id="j1",
        agent=agent,
        activity=Activity.WAITING,
        waiting=True,
        activity_at_ms=1000,
        activity_data=data,
    )


@pytest.mark.parametrize(
    ("agent", "data", "asks"),
    [
        ("gemini", {"tool": "Shell", "command": "touch a"}, True),
        ("aider", {"tool": "Shell", "command": "touch a"}, True),
        ("claude", {"tool": "Bash", "command": "touch a"}, False),  # its hook had its say
        ("codex", {"tool": "Shell", "command": "touch a"}, False),  # its app-server did
        ("gemini", {"question": "Do you trust the files in this folder?"}, True),  # trust
        ("claude", {"question": "Is this a project you created or one you trust?"}, True),
        ("claude", {"question": "Do you want to use this API key?"}, False),  # not trust
        ("gemini", {"question": "How would you like to authenticate for this project?"}, False),
        ("gemini", {"tool": "Shell", "command": "x" * 500}, False),  # maybe cut
    ],
)
def test_which_waits_the_policy_looks_at(
    tmp_path: Path, agent: str, data: dict[str, str], asks: bool
) -> None:
    keys = PolicyByKeys(SimpleNamespace(settings=Settings(tmp_path)), env={})  # type: ignore[arg-type]
    question = keys._question(job(agent, **data), tmp_path)  # type: ignore[arg-type]
    assert (question is not None) is asks
    assert keys._question(job(agent, **data), tmp_path) is None  # each question once  # type: ignore[arg-type]
