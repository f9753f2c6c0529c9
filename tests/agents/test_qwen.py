"""Qwen Code's adapter against what the real CLI (0.24.4) showed and sent: its screens,
its dialog answered by meaning, its hook payloads, and the per-job config layer that
leaves the user's own ~/.qwen untouched. (The real CLI itself runs through orchestrate
in test_orchestrated_agents.py and test_cli_harness.py, as the other agents do.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agents import adapter_for, built_in
from app.agents.base import PROMPT_WORD, LaunchContext
from app.agents.qwen import HOME_ENV, Qwen
from app.agents.screen import match_screen
from app.approvals.dialog import read_dialog
from app.approvals.meaning import AnswerPlan, Refusal, plan_answer
from registry.vocabulary import Activity, Answer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "qwen"


def screen(name: str) -> list[str]:
    return (FIXTURES / f"{name}.txt").read_text(encoding="utf-8").splitlines()


def payload(name: str) -> dict[str, object]:
    loaded = json.loads((FIXTURES / "hook_payloads" / f"{name}.json").read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


@pytest.mark.parametrize(
    ("name", "activity"),
    [("approval_dialog", "waiting"), ("working", "working"), ("idle", "idle"),
     ("idle_after_no", "idle"), ("idle_suggestion", "idle")],
)  # fmt: skip
def test_screen_rules_read_real_qwen_screens(name: str, activity: str) -> None:
    """Its input box is drawn while it works too: "esc to cancel" decides first."""
    seen = match_screen("qwen", Qwen.screen_rules, screen(name))
    assert seen is not None and seen.activity == activity, seen
    assert seen.source.startswith("screen:qwen.")


def test_the_dialog_names_its_question_tool_and_command() -> None:
    seen = match_screen("qwen", Qwen.screen_rules, screen("approval_dialog"))
    assert seen is not None
    assert seen.question == "Allow execution of: 'touch'?"
    assert seen.command == "touch done.txt"


def test_answers_by_meaning_never_the_user_wide_rule() -> None:
    """1 allows once, 2 writes a project rule (always), 3 a rule into the user's own
    settings (never chosen), 4 is no: each answer moves the marker to its one option."""
    dialog = read_dialog(screen("approval_dialog"))
    assert dialog is not None and len(dialog.options) == 4 and dialog.selected == 0
    words = Qwen.answer_words
    chosen = {answer: plan_answer(dialog, answer, words) for answer in Answer}
    assert all(isinstance(plan, AnswerPlan) for plan in chosen.values()), chosen
    targets = {a: p.target for a, p in chosen.items() if isinstance(p, AnswerPlan)}
    assert targets == {Answer.YES: 0, Answer.ALWAYS: 1, Answer.NO: 3}
    assert not isinstance(chosen[Answer.ALWAYS], Refusal)
    assert "for this user" not in chosen[Answer.ALWAYS].option.text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "activity", "command"),
    [
        ("UserPromptSubmit", Activity.WORKING, ""),
        ("PermissionRequest", Activity.WAITING, "touch done.txt"),
        ("PreToolUse", Activity.WORKING, "touch done.txt"),
        ("PostToolUse", Activity.WORKING, "touch done.txt"),
        ("Stop", Activity.IDLE, ""),
        ("Notification_idle_prompt", Activity.IDLE, ""),
        ("SessionEnd", Activity.EXITED, ""),
    ],
)
def test_hooks_read_from_real_payloads(name: str, activity: str, command: str) -> None:
    body = payload(name)
    reading = Qwen().read_hook(str(body["hook_event_name"]), body)
    assert reading.observation is not None
    assert reading.observation.activity == activity
    assert reading.observation.command == command
    assert reading.agent_session_id == body["session_id"]
    assert reading.wants_decision == (name == "PermissionRequest")
    if name == "PermissionRequest":
        assert reading.observation.tool == "Shell"
        assert reading.observation.question == "Allow Shell?"


def test_the_late_permission_notification_and_unknown_events_say_nothing() -> None:
    """permission_prompt repeats PermissionRequest; an event it may add later is not guessed at."""
    body = payload("Notification_permission_prompt")
    assert Qwen().read_hook("Notification", body).observation is None
    assert Qwen().read_hook("SessionStart", payload("SessionStart")).observation is None
    hostile = {"session_id": 7, "tool_name": ["x"], "tool_input": "rm -rf /"}
    reading = Qwen().read_hook("PermissionRequest", hostile)
    assert reading.observation is not None and reading.agent_session_id is None
    assert (reading.observation.tool, reading.observation.command) == ("", "")


def test_decisions_are_claude_shaped() -> None:
    out = Qwen().decision_output("PermissionRequest", False, "no thanks")
    assert out is not None
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "no thanks"}
    assert Qwen().decision_output("PreToolUse", True, "") is None


def context(tmp_path: Path, user_home: Path, session: str | None = None) -> LaunchContext:
    job_dir = tmp_path / "job"
    job_dir.mkdir(exist_ok=True)
    return LaunchContext("j1", job_dir, tmp_path, "'/bin/orchestrate' hook",
                         agent_session_id=session, env={HOME_ENV: str(user_home)})  # fmt: skip


def test_a_per_job_layer_keeps_the_users_config_and_writes_none_of_it(tmp_path: Path) -> None:
    user = tmp_path / "user-qwen"
    (user / "projects").mkdir(parents=True)
    own = {"model": {"name": "mine"}, "hooks": {"Stop": [{"hooks": [{"command": "say"}]}]}}
    (user / "settings.json").write_text(json.dumps(own), encoding="utf-8")
    before = sorted(p.name for p in user.iterdir())

    plan = Qwen().start(context(tmp_path, user))

    layer = Path(plan.env[HOME_ENV])
    assert layer.parent == tmp_path / "job"
    settings = json.loads((layer / "settings.json").read_text("utf-8"))
    assert settings["model"] == {"name": "mine"}
    assert settings["hooks"]["Stop"][0] == own["hooks"]["Stop"][0]  # theirs first, kept
    ours = settings["hooks"]["PermissionRequest"][0]
    assert ours["matcher"] == "*" and ours["hooks"][0]["command"].endswith(" qwen")
    assert (layer / "projects").resolve() == (user / "projects").resolve()
    assert sorted(p.name for p in user.iterdir()) == before
    assert json.loads((user / "settings.json").read_text("utf-8")) == own


def test_start_and_resume_by_its_own_session_id(tmp_path: Path) -> None:
    adapter = built_in("qwen-code")
    assert adapter is not None and adapter.kind == "qwen"
    start = adapter.start(context(tmp_path, tmp_path / "none"))
    assert start.argv[:2] == ["qwen", "--session-id"] and start.argv[-2:] == ["-i", PROMPT_WORD]
    assert start.agent_session_id == start.argv[2]
    assert adapter.resume(context(tmp_path, tmp_path / "none")) is None
    resumed = adapter.resume(context(tmp_path, tmp_path / "none", session="abc"))
    assert resumed is not None and resumed.prompt
    assert resumed.argv[1:3] == ["--resume", "abc"]
    assert adapter_for("qwen").display_name == "Qwen Code"


def test_auto_modes_dialog_never_switches_the_mode() -> None:
    """In auto mode (0.24.4's default) a call its classifier cannot judge gets a dialog
    whose second yes also switches the session to default mode: yes is "allow once", no
    is Esc's option, and there is no `always` to give."""
    lines = screen("approval_dialog_auto_mode")
    seen = match_screen("qwen", Qwen.screen_rules, lines)
    assert seen is not None and seen.activity == "waiting" and seen.command == "touch done.txt"
    dialog = read_dialog(lines)
    assert dialog is not None and len(dialog.options) == 3
    yes = plan_answer(dialog, Answer.YES, Qwen.answer_words)
    no = plan_answer(dialog, Answer.NO, Qwen.answer_words)
    assert isinstance(yes, AnswerPlan) and yes.target == 0
    assert isinstance(no, AnswerPlan) and no.target == 2
    assert isinstance(plan_answer(dialog, Answer.ALWAYS, Qwen.answer_words), Refusal)
