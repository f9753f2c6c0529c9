"""`orchestrate doctor --self-test` against the real agent CLIs: each pinned agent passes
every signal it has, a screen rule broken on purpose is named, and nothing of the
user's own home or tmux is touched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.agents.user_rules import RULES_NAME
from app.commands.doctor import doctor
from app.selftest.result import Signal
from app.selftest.run import throwaway_state
from app.settings import SCREEN_RULES_ENV, Settings
from tests.agents.clis import AGENT_BIN, PINNED, require
from tests.plugin.tmux import tmux_socket_path

# One worker runs them all (`--dist loadgroup`): each checks that its own private tmux
# servers are gone, which another self-test running meanwhile would make look untrue.
pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("selftest")]

# What each agent's run must show (its best signals; the rest are "-" for it).
STRUCTURED = {
    "claude": {Signal.HOOK: "PermissionRequest"},
    "codex": {Signal.STATUS_SEQUENCE: "blocked"},  # its notify repeats what OSC said: dropped
    "gemini": {Signal.HOOK: "Notification:ToolPermission"},
    "aider": {},
    "qwen": {Signal.HOOK: "PermissionRequest"},
}


def selftest_sockets() -> set[str]:
    directory = tmux_socket_path("x").parent
    if not directory.is_dir():
        return set()
    return {p.name for p in directory.iterdir() if p.name.startswith("orchestrate-selftest-")}


def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME (and XDG dirs) of the test's own, to prove the self-test writes nothing there."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


BROKEN_DIALOG_RULE = """
[[claude]]
name = "dialog"          # claude.dialog, replaced: a pattern that never matches
activity = "waiting"
pattern = '(?!)'
"""


@pytest.mark.slow
def test_a_rule_broken_in_the_users_rules_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's own screen rules file (<state dir>/screen-rules.toml) is in force in
    the self-test's throwaway state dir: here it breaks Claude's dialog rule on purpose.
    The hooks still say waiting, but the screen rules read nothing there, and so
    `answer` types no key (a key is not an answer); `doctor` exits 1 naming both, says
    whose rules were tested, and leaves nothing behind."""
    require("claude")
    monkeypatch.delenv(SCREEN_RULES_ENV, raising=False)
    state = tmp_path / "user-state"
    state.mkdir()
    (state / RULES_NAME).write_text(BROKEN_DIALOG_RULE, encoding="utf-8")
    home = isolated_home(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", f"{AGENT_BIN}{os.pathsep}{os.environ['PATH']}")
    before = selftest_sockets()

    result = CliRunner().invoke(
        doctor, ["--self-test", "--json", "claude"], obj=Settings(state_dir=state)
    )

    assert result.exit_code == 1, (result.output, result.stderr)
    assert result.stderr.strip().splitlines()[-1] == (
        "orchestrate doctor: self-test broke: claude (screen rules, answer yes)"
    )
    record = json.loads(result.stdout)
    signals = record["signals"]
    assert signals["screen rules"]["ok"] is False
    assert "where the screen shows waiting" in signals["screen rules"]["detail"]
    assert f"with your rules file {state / RULES_NAME}" in signals["screen rules"]["detail"]
    assert signals["answer yes"]["ok"] is False
    assert "shows no question; not typing into it" in signals["answer yes"]["detail"]
    assert signals["hook"]["ok"] is True, signals  # the hook did say waiting
    assert "PermissionRequest" in signals["hook"]["detail"]
    assert signals["answer no"] == {"ok": None, "detail": "not reached"}
    assert list(home.iterdir()) == []  # a throwaway home, config and state dir
    assert selftest_sockets() == before  # its private tmux server is gone
    assert (state / RULES_NAME).read_text(encoding="utf-8") == BROKEN_DIALOG_RULE
    assert sorted(p.name for p in state.iterdir()) == [RULES_NAME]  # only read


def test_the_throwaway_state_holds_a_copy_of_the_users_rules(tmp_path: Path) -> None:
    rules = tmp_path / "mine.toml"
    rules.write_text(BROKEN_DIALOG_RULE, encoding="utf-8")
    assert throwaway_state(tmp_path / "a", rules) == rules
    assert (tmp_path / "a" / RULES_NAME).read_text(encoding="utf-8") == BROKEN_DIALOG_RULE
    assert throwaway_state(tmp_path / "b", tmp_path / "missing.toml") is None
    assert throwaway_state(tmp_path / "c", None) is None
    assert list((tmp_path / "c").iterdir()) == []


@pytest.mark.slow  # the pinned matrix through the command: 2-4 min at load
def test_every_pinned_agent_passes_its_self_test(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for agent in PINNED:
        require(agent)
    home = tmp_path / "home"
    home.mkdir()
    path = f"{AGENT_BIN}{os.pathsep}{os.environ['PATH']}"
    result = cli("doctor", "--self-test", "--json", env={"PATH": path, "HOME": str(home)},
                 timeout=600)  # fmt: skip
    records = {r["agent"]: r for r in map(json.loads, result.stdout.splitlines())}
    broken = {
        agent: {
            name: check["detail"] for name, check in r["signals"].items() if check["ok"] is False
        }
        for agent, r in records.items()
        if not r["ok"]
    }
    assert result.returncode == 0 and not broken, (broken, result.stderr)
    assert set(records) == set(PINNED)
    for agent, record in records.items():
        signals = record["signals"]
        assert record["ok"] is True, record
        assert record["executable"] == str(AGENT_BIN / agent)
        for name in ("activity", "screen rules", "answer yes", "answer no"):
            assert signals[name]["ok"] is True, record
        for signal, seen in STRUCTURED[agent].items():
            assert signals[signal]["ok"] is True and seen in signals[signal]["detail"], record
    assert list(home.iterdir()) == []


@pytest.mark.slow
def test_the_table_says_each_signal_in_a_line(cli) -> None:  # type: ignore[no-untyped-def]
    require("codex")
    path = f"{AGENT_BIN}{os.pathsep}{os.environ['PATH']}"
    result = cli("doctor", "--self-test", "codex", env={"PATH": path, "COLUMNS": "200"},
                 timeout=300)  # fmt: skip
    assert result.returncode == 0, (result.stdout, result.stderr)
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines()
            if line.count("│") == 4}  # fmt: skip
    assert set(rows) == {str(s) for s in Signal}
    assert "│ ok " in rows["status sequence"] and "blocked" in rows["status sequence"]
    assert "meaning: Enter (Yes" in rows["answer yes"]  # Codex is answered by meaning
