"""The policy file: read whole or not at all, and the order rules decide in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.policy.decide import Question, decide
from app.policy.reviewer import run_reviewer
from app.policy.rules import broken_policy_line, load_policy, parse_policy
from registry.vocabulary import DecisionSource, PolicyDecision


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "policy.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[[rule]]\nname = "a"\ndecision = "yes"\n', "decision must be allow, deny or ask"),
        ('[[rule]]\ndecision = "allow"\n', "rule 1 has no name"),
        ('[[rule]]\nname = "a"\ndecison = "allow"\n', "unknown key 'decison'"),
        ('[[rule]]\nname = "a"\ncommand = 3\ndecision = "allow"\n', "command must be"),
        ('[[rule]]\nname = ""\ndecision = "allow"\n', "name must be non-empty"),
        ('[[rule]]\nname = "a"\ndecision = "allow"\n' * 2, "two rules are named 'a'"),
        (
            '[[rule]]\nname = "a"\ntool = "Edit"\ncommand = "x"\ndecision = "allow"\n',
            "command is for shell rules",
        ),
        (
            '[[rule]]\nname = "a"\ntool = "shell"\npath = "x"\ndecision = "allow"\n',
            "path is for file tools",
        ),
        ('rule = "x"\n', "rule must be [[rule]] tables"),
        ("rules = []\n", "unknown key 'rules'"),
        ('reviewer = "judge \'unclosed"\n', "reviewer cannot be split"),
        ("reviewer = 3\n", "reviewer must be a command"),
        ('reviewer = ""\n', "reviewer must name a command"),
        ("[[rule]\n", "it is not TOML"),
        (b"name = '\xff'\n", "not UTF-8"),
    ],
)
def test_a_policy_that_does_not_check_is_broken(tmp_path: Path, text: str, said: str) -> None:
    loaded = load_policy(write(tmp_path, text))
    assert loaded.policy is None and loaded.problem is not None
    assert said in loaded.problem
    assert "\n" not in loaded.problem


def test_no_file_is_no_policy_but_a_named_missing_file_is_broken(tmp_path: Path) -> None:
    assert load_policy(tmp_path / "none.toml").problem is None
    assert "does not exist" in (load_policy(tmp_path / "none.toml", named=True).problem or "")
    assert broken_policy_line(tmp_path, {}) is None
    write(tmp_path, "[[rule]\n")
    line = broken_policy_line(tmp_path, {})
    assert line is not None and line.startswith("policy not applied, every question asks: ")


def test_the_first_match_decides_but_a_deny_beats_an_allow() -> None:
    policy = parse_policy(
        {
            "rule": [
                {"name": "git", "tool": "shell", "command": "git *", "decision": "allow"},
                {"name": "push", "tool": "shell", "command": "git push*", "decision": "deny"},
                {"name": "ask-log", "tool": "shell", "command": "git log*", "decision": "ask"},
                {"name": "codex", "agent": "codex", "decision": "deny"},
            ]
        }
    )

    def verdict(command: str, agent: str = "claude") -> tuple[str, tuple[str, ...]]:
        found = decide(policy, Question(agent, "Bash", command))
        return found.decision, found.rules

    assert verdict("git status") == ("allow", ("git",))
    assert verdict("git push origin main") == ("deny", ("push",))
    assert verdict("git log -1") == ("allow", ("git",))  # first match: allow stands above ask
    assert verdict("git status", agent="codex") == ("deny", ("codex",))
    assert verdict("git status; git push") == ("deny", ("push",))


def test_an_explicit_ask_is_not_sent_to_the_reviewer(tmp_path: Path) -> None:
    script = tmp_path / "yes.py"
    script.write_text("print('allow')\n")
    policy = parse_policy(
        {
            "reviewer": [sys.executable, str(script)],
            "rule": [{"name": "push", "tool": "shell", "command": "git push*", "decision": "ask"}],
        }
    )

    def review(question: Question) -> tuple[PolicyDecision, str]:
        return run_reviewer(policy.reviewer, question)

    asked = decide(policy, Question("claude", "Bash", "git push"), review)
    assert (asked.decision, asked.source, asked.rules) == ("ask", DecisionSource.POLICY, ("push",))
    reviewed = decide(policy, Question("claude", "Bash", "make"), review)
    assert (reviewed.decision, reviewed.source) == ("allow", DecisionSource.REVIEWER)
    unread = decide(policy, Question("claude", "Bash", "make $(x)"), review)
    assert (unread.decision, unread.source) == ("ask", None)  # never reviewed: it asks
