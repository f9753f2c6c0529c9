"""Screen rules against screens captured from the real agent CLIs (shared/agents/fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents import adapter_for
from app.agents.screen import RuleError, ScreenRule, match_screen

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"

# (agent, capture, activity or None, what it is about: a substring of the summary)
CASES = [
    ("claude", "dialog-bash-permission", "waiting", "Bash `touch "),
    ("claude", "dialog-edit-file", "waiting", "make this edit to hello.py"),
    ("claude", "dialog-write-file", "waiting", "create hello.py"),
    ("claude", "dialog-folder-trust", "waiting", "trust"),
    ("claude", "dialog-api-key", "waiting", "API key"),
    ("claude", "working-spinner", "working", ""),
    ("claude", "working-slow", "working", ""),
    ("claude", "idle-after-turn", "idle", ""),
    ("claude", "idle-fresh-start", "idle", ""),
    ("claude", "dialog-answer-esc", "idle", ""),
    ("codex", "approval_dialog", "waiting", "`touch /home/dev/lab-codex/work/done.txt`"),
    ("codex", "firstrun_1", "waiting", "Trust"),
    ("codex", "hooks_need_review", "waiting", "Hooks need review"),
    ("codex", "working", "working", ""),
    ("codex", "error_500_reconnecting", "working", ""),
    ("codex", "idle_after_turn", "idle", ""),
    ("codex", "approval_denied_esc", "idle", ""),
    ("gemini", "approval_dialog", "waiting", "Shell `touch /home/dev/lab-gemini/work/done.txt`"),
    ("gemini", "approval_dialog_with_permanent_option", "waiting", "mkdir -p"),
    ("gemini", "firstrun_01_folder_trust", "waiting", "trust the files"),
    ("gemini", "working_turn1", "working", ""),
    ("gemini", "working_turn2", "working", ""),
    ("gemini", "error_500_still_retrying_13min", "working", ""),
    ("gemini", "idle_after_turn", "idle", ""),
    ("aider", "confirm_run_shell_command", "waiting", "`touch ran_yes.txt`"),
    ("aider", "confirm_create_new_file", "waiting", "Create new file?"),
    ("aider", "confirm_add_file_to_chat", "waiting", "Add file to the chat?"),
    ("aider", "firstrun_01_gitignore_prompt", "waiting", ".gitignore"),
    ("aider", "after_reply_idle", "idle", ""),
    ("aider", "idle_prompt_with_file_in_chat_diff", "idle", ""),
    ("aider", "variant_nofancy_idle", "idle", ""),
    ("aider", "working_05_spinner_waiting", "working", ""),
    ("aider", "working_02_streaming", None, ""),  # streaming text: output decides
]


def screen(agent: str, name: str) -> list[str]:
    path = FIXTURES / agent / f"{name}.txt"
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


@pytest.mark.parametrize(("agent", "name", "activity", "about"), CASES)
def test_rules_read_real_screens(agent: str, name: str, activity: str | None, about: str) -> None:
    adapter = adapter_for(agent)
    seen = match_screen(agent, adapter.screen_rules, screen(agent, name))
    if activity is None:
        assert seen is None
        return
    assert seen is not None, f"no rule matched {agent}/{name}"
    assert seen.activity == activity, seen
    assert seen.source.startswith(f"screen:{agent}.")
    assert about in seen.summary()


def test_a_question_asked_earlier_and_answered_is_not_waiting() -> None:
    """Aider prints its answered questions into the scrollback: only the last lines count."""
    lines = screen("aider", "after_shell_yes_idle_diff")
    assert any("Run shell command?" in line for line in lines)
    seen = match_screen("aider", adapter_for("aider").screen_rules, lines)
    assert seen is not None and seen.activity == "idle"


def test_a_rule_with_a_bad_pattern_or_activity_is_refused_where_it_is_made() -> None:
    with pytest.raises(RuleError, match="bad pattern"):
        ScreenRule("x.bad", "waiting", "(unclosed")
    with pytest.raises(RuleError, match="activity must be one of"):
        ScreenRule("x.bad", "exited", "x")
    with pytest.raises(RuleError, match="lines must be"):
        ScreenRule("x.bad", "idle", "x", lines=0)


def test_named_groups_and_details_fill_the_question() -> None:
    rule = ScreenRule(
        "mine.apply",
        "waiting",
        r"^(?P<question>Apply (?P<command>.+)\?) \[y/n\]$",
        details=(r"^tool: (?P<tool>\w+)$",),
    )
    seen = rule.match("mine", "tool: Patch\nApply fix.diff? [y/n]")
    assert seen is not None
    assert (seen.question, seen.tool, seen.command) == ("Apply fix.diff?", "Patch", "fix.diff")


def test_gemini_dialog_left_above_its_input_box_is_over() -> None:
    """A redraw after the window was resized (a person stepped in from a smaller
    terminal) leaves Gemini's answered dialog in the lines read; its input box under it
    says the dialog is closed: idle, not waiting again."""
    rules = adapter_for("gemini").screen_rules
    dialog = screen("gemini", "approval_dialog")
    idle = [line for line in screen("gemini", "idle_after_turn") if line.strip()][-6:]
    seen = match_screen("gemini", rules, [*dialog, *idle])
    assert seen is not None and seen.activity == "idle", seen
    asking = match_screen("gemini", rules, [*idle, *dialog])  # the box above: still asks
    assert asking is not None and asking.activity == "waiting", asking


def test_gone_if_below_from_the_agents_config() -> None:
    """A user's rule can say what, under its match, shows the question answered."""
    rule = ScreenRule.from_config(
        "mybot",
        {"name": "ask", "activity": "waiting", "pattern": r"^Run (?P<command>.+)\?$",
         "gone_if_below": r"^mybot> ?$"},
    )  # fmt: skip
    assert rule.match("mybot", "mybot>\nRun make?") is not None
    assert rule.match("mybot", "Run make?\nok\nmybot>") is None
    with pytest.raises(RuleError, match="gone_if_below must be a pattern"):
        ScreenRule.from_config(
            "mybot", {"name": "ask", "activity": "waiting", "pattern": "x", "gone_if_below": 3}
        )
