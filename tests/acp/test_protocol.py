"""What ACP messages mean to orchestrate (app/agents/acp_protocol.py) and how the
transcript shows them (app/agents/acp_view.py): no process, the package's own models."""

from __future__ import annotations

import io

import pytest
from acp import (
    plan_entry,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import AvailableCommandsUpdate, PermissionOption, ToolCallLocation, ToolCallUpdate
from hypothesis import given
from hypothesis import strategies as st

from app.agents import acp_protocol as protocol
from app.agents.acp import Acp
from app.agents.acp_view import YOUR_TURN, Transcript
from app.agents.screen import match_screen
from bus.text import find_hidden
from registry.vocabulary import Activity, Answer


def option(option_id: str, kind: str) -> PermissionOption:
    return PermissionOption(option_id=option_id, name=option_id.title(), kind=kind)  # type: ignore[arg-type]


GEMINI_OPTIONS = [option("proceed_always", "allow_always"), option("proceed_once", "allow_once"),
                  option("cancel", "reject_once")]  # fmt: skip
"""As Gemini CLI 0.61.0 offers them for a shell command (measured)."""


@pytest.mark.parametrize(
    "update",
    [
        update_agent_message_text("hello"),
        update_agent_thought_text("hmm"),
        update_plan([plan_entry("step")]),
        start_tool_call("t1", "ls -l", kind="execute", status="pending"),
        update_tool_call("t1", status="completed"),
    ],
)
def test_updates_of_a_turn_mean_working(update: object) -> None:
    seen = protocol.activity_of_update("gemini-acp", update)
    assert seen is not None and seen.activity == Activity.WORKING
    assert seen.source == f"acp:gemini-acp:{protocol.update_kind(update)}"


@pytest.mark.parametrize(
    "update",
    [
        update_user_message_text("replayed by session/load"),
        AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[]),
    ],
)
def test_updates_outside_a_turn_say_nothing(update: object) -> None:
    assert protocol.activity_of_update("acp", update) is None


def test_a_tool_call_names_its_tool_and_command() -> None:
    seen = protocol.activity_of_update(
        "acp", start_tool_call("t1", "Run tests", kind="execute", raw_input={"command": "npm test"})
    )
    assert seen is not None and (seen.tool, seen.command) == ("Shell", "npm test")
    edit = start_tool_call("t2", "Edit", kind="edit", locations=[ToolCallLocation(path="a.py")])
    assert protocol.tool_and_command(edit) == ("Edit", "a.py")


def test_the_end_of_a_turn_is_idle_with_its_reason() -> None:
    seen = protocol.end_of_turn("acp", "max_tokens")
    assert (seen.activity, seen.source) == (Activity.IDLE, "acp:acp:max_tokens")


def test_a_permission_request_is_a_wait_with_its_command() -> None:
    call = ToolCallUpdate(tool_call_id="x", title="touch done.txt", kind="execute")
    wait = protocol.permission_wait("gemini-acp", call)
    assert wait.activity == Activity.WAITING
    assert wait.source == "acp:gemini-acp:request_permission"
    assert (wait.tool, wait.command) == ("Shell", "touch done.txt")
    assert "touch done.txt" in wait.question


def test_answers_choose_options_by_their_kind() -> None:
    assert protocol.option_for(Answer.YES, GEMINI_OPTIONS) == "proceed_once"
    assert protocol.option_for(Answer.ALWAYS, GEMINI_OPTIONS) == "proceed_always"
    assert protocol.option_for(Answer.NO, GEMINI_OPTIONS) == "cancel"
    assert protocol.answers_offered(GEMINI_OPTIONS) == tuple(Answer)


def test_yes_never_takes_more_than_was_asked_and_no_falls_back_to_a_permanent_reject() -> None:
    only_always = [option("a", "allow_always"), option("r", "reject_always")]
    assert protocol.option_for(Answer.YES, only_always) is None
    assert protocol.option_for(Answer.NO, only_always) == "r"
    assert protocol.answers_offered(only_always) == (Answer.NO, Answer.ALWAYS)


@pytest.mark.parametrize(("word", "answer"), [("y", Answer.YES), ("No", Answer.NO),
                                              (" always ", Answer.ALWAYS)])  # fmt: skip
def test_typed_answers(word: str, answer: Answer) -> None:
    assert protocol.answer_of(word) == answer


@pytest.mark.parametrize("word", ["", "yep", "\x1b[2J"])
def test_typed_nonsense_is_no_answer(word: str) -> None:
    with pytest.raises(ValueError, match="answer y"):
        protocol.answer_of(word)


def transcript_of(*chunks: str) -> str:
    out = io.StringIO()
    view = Transcript(out)
    for chunk in chunks:
        view.stream("│ ", chunk)
    view.tool("⚙", "Shell", chunks[0] if chunks else "", "pending")
    view.diff("x\x1b[31m.py", "old\n", "".join(chunks) + "\n")
    view.plan([plan_entry("".join(chunks))])
    return out.getvalue()


@given(st.lists(st.text(), min_size=1, max_size=4))
def test_agent_text_never_reaches_the_pane_as_control_sequences(chunks: list[str]) -> None:
    shown = transcript_of(*chunks)
    assert find_hidden(shown, keep="\t\n") is None  # tabs stay, as the sink keeps them


@given(st.lists(st.text(alphabet=st.sampled_from("─ yourtn\n\x1b│"), max_size=40), min_size=1))
def test_agent_text_cannot_draw_the_end_of_turn_line(chunks: list[str]) -> None:
    lines = transcript_of(*chunks).splitlines()
    assert not any(line.startswith(YOUR_TURN) for line in lines)
    assert match_screen("acp", Acp.screen_rules, lines[-1:]) is None


def test_streamed_chunks_make_whole_prefixed_lines() -> None:
    out = io.StringIO()
    view = Transcript(out)
    view.stream("│ ", "one ")
    view.stream("│ ", "line\ntwo")
    view.note("note")
    assert out.getvalue() == "│ one line\n│ two\nnote\n"


def test_the_end_of_turn_line_is_what_the_screen_rule_reads() -> None:
    out = io.StringIO()
    Transcript(out).your_turn("end_turn")
    seen = match_screen("acp", Acp.screen_rules, out.getvalue().splitlines())
    assert seen is not None and seen.activity == Activity.IDLE
