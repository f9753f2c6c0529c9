"""A user's own screen rules file (issue 27, item 4): rules that replace or add to
an agent's built-in ones without a release, rules limited to agent versions, and a
file that cannot be used changing nothing, said in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from app.agents import adapter_for
from app.agents.screen import RuleError, ScreenRule, match_screen
from app.agents.user_rules import RULES_NAME, load_user_rules, with_user_rules
from app.settings import SCREEN_RULES_ENV

NEW_TRUST = ["", " Diesem Ordner vertrauen?", " \u276f Ja", "   Nein"]
RULES = """
[[claude]]
name = "trust_de"
activity = "waiting"
pattern = '(?P<question>Diesem Ordner vertrauen\\?)'
versions = ">=2.1.300"

[[claude]]
name = "claude.idle"
activity = "idle"
pattern = 'auto mode on'
lines = 4
"""


def write(state: Path, text: str) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    path = state / RULES_NAME
    path.write_text(text, encoding="utf-8")
    return path


def test_a_rules_file_adds_and_replaces_an_agents_rules(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write(state, RULES)
    built_in = adapter_for("claude").screen_rules
    rules = adapter_for("claude", state, env={}).screen_rules
    names = [rule.name for rule in rules]
    assert names[0] == "claude.trust_de" and rules[0].versions == ">=2.1.300"  # added, first
    assert names[1:] == [rule.name for rule in built_in]  # each built-in in its place
    assert names.count("claude.idle") == 1
    idle = next(rule for rule in rules if rule.name == "claude.idle")
    assert idle.pattern == "auto mode on"  # replaced where it stood
    assert names.index("claude.idle") == [r.name for r in built_in].index("claude.idle") + 1
    assert adapter_for("codex", state, env={}).screen_rules == adapter_for("codex").screen_rules


def test_a_rule_applies_only_to_the_versions_it_names(tmp_path: Path) -> None:
    write(tmp_path, RULES)
    rules = adapter_for("claude", tmp_path, env={}).screen_rules
    new = match_screen("claude", rules, NEW_TRUST, Version("2.1.332"))
    assert new is not None and new.question == "Diesem Ordner vertrauen?"
    assert match_screen("claude", rules, NEW_TRUST, Version("2.1.197")) is None
    unknown = match_screen("claude", rules, NEW_TRUST, None)  # the version cannot be told
    assert unknown is not None


def test_the_environment_names_another_file(tmp_path: Path) -> None:
    other = write(tmp_path / "elsewhere", RULES)
    loaded = load_user_rules(tmp_path / "state", env={SCREEN_RULES_ENV: str(other)})
    assert loaded.path == other and not loaded.problem
    assert [rule.name for rule in loaded.rules["claude"]] == ["claude.trust_de", "claude.idle"]
    assert loaded.describe() == f"screen rules: {other} adds or replaces claude 2"
    missing = load_user_rules(None, env={SCREEN_RULES_ENV: str(tmp_path / "nope.toml")})
    assert missing.problem == f"{tmp_path / 'nope.toml'}: no such file" and not missing.rules


def test_no_file_is_no_rules_and_no_problem(tmp_path: Path) -> None:
    loaded = load_user_rules(tmp_path, env={})
    assert not loaded.rules and not loaded.problem
    assert "built-in only" in loaded.describe()


BROKEN = {
    "not toml": ("[[claude]\nname = 'x'", "not valid TOML"),
    "bad pattern": (
        "[[claude]]\nname = 'x'\nactivity = 'idle'\npattern = '(unclosed'",
        "screen rule 'claude.x': bad pattern",
    ),
    "bad activity": (
        "[[claude]]\nname = 'x'\nactivity = 'asleep'\npattern = 'z'",
        "activity must be one of",
    ),
    "bad versions": (
        "[[claude]]\nname = 'x'\nactivity = 'idle'\npattern = 'z'\nversions = 'new ones'",
        "is not a version range",
    ),
    "versions not text": (
        "[[claude]]\nname = 'x'\nactivity = 'idle'\npattern = 'z'\nversions = 2",
        "versions must be a range",
    ),
    "not an array": ("codex = 'yes'", "'codex' must be an array of rule tables"),
    "no pattern": ("[[claude]]\nname = 'x'\nactivity = 'idle'", "needs a name and a pattern"),
    "a typo": (
        "[[claude]]\nname = 'x'\nactivity = 'idle'\npattern = 'z'\nversion = '>=2'",
        "screen rule 'x': unknown key 'version' (known: name, activity, pattern, lines, "
        "details, gone_if_below, versions)",
    ),
}


@pytest.mark.parametrize(("text", "said"), BROKEN.values(), ids=list(BROKEN))
def test_a_file_that_cannot_be_used_changes_nothing_and_says_why(
    tmp_path: Path, text: str, said: str
) -> None:
    good = "[[claude]]\nname = 'fine'\nactivity = 'idle'\npattern = 'fine'\n"
    path = write(tmp_path, text + "\n" + good)
    loaded = load_user_rules(tmp_path, env={})
    assert not loaded.rules  # all of it left out, the good rule too
    assert loaded.problem.startswith(f"{path}: ") and said in loaded.problem
    assert "\n" not in loaded.describe()
    assert loaded.describe().endswith("; built-in rules only")
    assert adapter_for("claude", tmp_path, env={}).screen_rules == (
        adapter_for("claude").screen_rules
    )


def test_a_file_that_is_not_utf8_changes_nothing(tmp_path: Path) -> None:
    tmp_path.joinpath(RULES_NAME).write_bytes(b"\xff\xfe[[claude]]")
    loaded = load_user_rules(tmp_path, env={})
    assert loaded.problem.endswith("not UTF-8 text") and not loaded.rules


def test_a_version_range_in_code_is_checked_where_it_is_written() -> None:
    with pytest.raises(RuleError, match="is not a version range"):
        ScreenRule("x.y", "idle", "z", versions="soon")
    rule = ScreenRule("x.y", "idle", "z", versions=">=1.0,<2")
    assert rule.applies_to(Version("1.5")) and not rule.applies_to(Version("2.0"))
    assert rule.applies_to(Version("1.9.0rc1"))  # pre-releases are versions too


def test_new_rules_come_first_and_namesakes_replace_in_place() -> None:
    a, b, c = (ScreenRule(f"k.{n}", "idle", n) for n in "abc")
    b2, d = ScreenRule("k.b", "working", "B"), ScreenRule("k.d", "idle", "d")
    assert with_user_rules((a, b, c), (d, b2)) == (d, a, b2, c)


def test_doctor_shows_a_broken_rules_file_in_one_line(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mine.toml"
    path.write_text("[[claude]\n", encoding="utf-8")
    result = cli("doctor", env={SCREEN_RULES_ENV: str(path)})
    line = f"screen rules: {path}: not valid TOML"
    assert any(row.startswith(line) for row in result.stdout.splitlines()), result.stdout
    assert f"orchestrate: warning: {line}" in result.stderr
