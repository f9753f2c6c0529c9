"""Answers by meaning, over the recorded screens of every agent's dialogs (issue 27
item 1): the options and marker read, the keys chosen, and nothing for a dialog
whose options mean nothing known."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents import built_in
from app.agents.base import AgentAdapter
from app.approvals.dialog import Dialog, Option, read_dialog
from app.approvals.meaning import AnswerPlan, Refusal, plan_answer
from registry.vocabulary import Answer

ROOT = Path(__file__).resolve().parents[2]
SCREENS = ROOT / "tests" / "fixtures" / "agents"

YES, ALWAYS, NO = Answer.YES, Answer.ALWAYS, Answer.NO
PERMISSION = ("Yes", "Yes, and always allow access to work/ from this project", "No")
EDITS = ("Yes", "Yes, allow all edits during this session (shift+tab)", "No")
CODEX = (
    "Yes, proceed (y)",
    "Yes, and don't ask again for commands that start with "
    "`touch /home/dev/lab-codex/work/done.txt` (p)",
    "No, and tell Codex what to do differently (esc)",
)
GEMINI = ("Allow once", "Allow for this session", "No, suggest changes (esc)")
REFUSED = "refused"

# (screen, options, marker, {answer: the arrows before Enter, or REFUSED})
DIALOGS: list[tuple[Path, tuple[str, ...], int, dict[Answer, tuple[str, ...] | str]]] = [
    (
        SCREENS / "claude/dialog-folder-trust.txt",
        ("Yes, I trust this folder", "No, exit"),
        0,
        {YES: (), NO: ("Down",), ALWAYS: REFUSED},
    ),
    (
        SCREENS / "claude/dialog-folder-trust-2.1.332.txt",
        ("No, exit", "Yes, I trust this folder"),
        0,
        {YES: ("Down",), NO: (), ALWAYS: REFUSED},
    ),
    (
        SCREENS / "claude/dialog-bash-permission.txt",
        PERMISSION,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "claude/dialog-edit-file.txt",
        EDITS,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "claude/dialog-write-file.txt",
        EDITS,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "claude/dialog-api-key.txt",
        ("Yes", "No (recommended)"),
        1,
        {YES: ("Up",), NO: (), ALWAYS: REFUSED},
    ),
    (
        SCREENS / "claude/recorded/dialog_shell_command.txt",
        PERMISSION,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "codex/approval_dialog.txt",
        CODEX,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "codex/recorded/dialog_shell_command.txt",
        (
            "Yes, proceed (y)",
            "Yes, and don't ask again for commands that start with `touch done.txt` (p)",
            "No, and tell Codex what to do differently (esc)",
        ),
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "codex/recorded-0.171.0/dialog_shell_command.txt",  # the newest at filing
        (
            "Yes, proceed (y)",
            "Yes, and don't ask again for commands that start with `touch done.txt` (p)",
            "No, and tell Codex what to do differently (esc)",
        ),
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "gemini/recorded/dialog_shell_command.txt",
        GEMINI,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "codex/firstrun_1.txt",
        ("Trust and continue", "Back to Agent Command Center"),
        0,
        {YES: (), NO: ("Down",), ALWAYS: REFUSED},
    ),
    (
        SCREENS / "codex/hooks_need_review.txt",
        ("Review hooks", "Trust all and continue", "Continue without trusting (hooks won't run)"),
        0,
        {YES: REFUSED, NO: REFUSED, ALWAYS: REFUSED},
    ),
    (
        SCREENS / "gemini/approval_dialog.txt",
        GEMINI,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "gemini/explore_approval_dialog.txt",
        GEMINI,
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down")},
    ),
    (
        SCREENS / "gemini/approval_dialog_with_permanent_option.txt",
        (
            "Allow once",
            "Allow for this session",
            "Allow this command for all future sessions ~/.gemini/policies/auto-saved.toml",
            "No, suggest changes (esc)",
        ),
        0,
        {YES: (), ALWAYS: ("Down",), NO: ("Down", "Down", "Down")},
    ),
    (
        SCREENS / "gemini/firstrun_01_folder_trust.txt",
        ("Trust folder (work)", "Trust parent folder (gemini)", "Don't trust"),
        0,
        {YES: (), NO: ("Down", "Down"), ALWAYS: REFUSED},
    ),
    (
        SCREENS / "gemini/firstrun_02_auth_choice.txt",
        ("Sign in with Google", "Use Gemini API Key", "Vertex AI"),
        1,
        {YES: REFUSED, NO: REFUSED, ALWAYS: REFUSED},
    ),
]


def _screen(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _adapter(path: Path) -> AgentAdapter:
    recorded = path.parent.name.startswith("recorded")  # recorded/, recorded-<version>/
    folder = path.parent.parent if recorded else path.parent
    adapter = built_in(folder.name)
    assert adapter is not None
    return adapter


@pytest.mark.parametrize(("path", "options", "marker", "plans"), DIALOGS, ids=lambda v: str(v))
def test_every_recorded_dialog_is_read_and_answered_by_meaning(
    path: Path,
    options: tuple[str, ...],
    marker: int,
    plans: dict[Answer, tuple[str, ...] | str],
) -> None:
    dialog = read_dialog(_screen(path))
    assert dialog is not None
    assert tuple(option.text for option in dialog.options) == options
    assert dialog.selected == marker
    assert "?" in dialog.question or dialog.question
    words = _adapter(path).answer_words
    for answer, moves in plans.items():
        plan = plan_answer(dialog, answer, words)
        if moves == REFUSED:
            assert isinstance(plan, Refusal), (answer, plan)
            assert "I don't recognise this dialog: options seen:" in plan.reason
            assert all(repr(text) in plan.reason for text in options)
        else:
            assert isinstance(plan, AnswerPlan), (answer, plan)
            assert plan.moves == moves
            assert plan.confirm == ("Enter",)
            assert meaning_matches(plan.option, answer)


def meaning_matches(option: Option, answer: Answer) -> bool:
    """The chosen option says the answer in so many words (a check on the table)."""
    text = option.text.lower()
    return {
        YES: any(w in text for w in ("yes", "allow", "trust")),
        ALWAYS: any(w in text for w in ("always", "again", "session", "all")),
        NO: any(w in text for w in ("no", "exit", "back", "don't")),
    }[answer]


def test_the_new_trust_dialog_questions_are_read() -> None:
    old = read_dialog(_screen(SCREENS / "claude/dialog-folder-trust.txt"))
    new = read_dialog(_screen(SCREENS / "claude/dialog-folder-trust-2.1.332.txt"))
    assert old is not None and new is not None
    assert "Is this a project you created or one you trust?" in old.question
    assert "Is this a project you created or one you trust?" in new.question
    assert [option.number for option in old.options] == ["1", "2"]
    assert [option.number for option in new.options] == [None, None]


@pytest.mark.parametrize(
    "path",
    [
        SCREENS / "aider/confirm_run_shell_command.txt",
        SCREENS / "aider/recorded/dialog_shell_command.txt",
        SCREENS / "claude/idle-fresh-start.txt",
        SCREENS / "claude/interrupt-esc.txt",
        SCREENS / "claude/dialog-answer-3-no.txt",
        SCREENS / "codex/idle_after_turn.txt",
        SCREENS / "codex/recorded-0.171.0/idle_after_yes.txt",
        SCREENS / "codex/recorded-0.171.0/idle_after_no.txt",
        SCREENS / "codex/send_keys_no_delay_enter.txt",
        SCREENS / "gemini/idle_after_turn.txt",
    ],
    ids=lambda v: str(v),
)
def test_no_list_is_read_where_there_is_none(path: Path) -> None:
    """Prompts, replies and aider's inline (Y)es/(N)o are not selection lists."""
    assert read_dialog(_screen(path)) is None


def test_every_agent_with_selection_lists_is_answered_by_meaning() -> None:
    """Claude, Codex and Gemini draw lists with a marker: answered by meaning. Aider
    asks inline (``(Y)es/(N)o [Yes]:``), a word typed at a prompt, not a list: its
    keys stay (its screen rule reads the question first)."""
    kinds = ("claude", "codex", "gemini", "aider")
    lists = {kind: getattr(built_in(kind), "selection_list", None) for kind in kinds}
    assert lists == {"claude": True, "codex": True, "gemini": True, "aider": False}


GERMAN = [
    "",
    " Diesem Ordner vertrauen?",
    "",
    " \u276f Ja, ich vertraue diesem Ordner",
    "   Nein, beenden",
    "",
    " Eingabe zum Bestätigen",
]


def test_a_dialog_in_a_language_no_adapter_knows_is_refused_naming_its_options() -> None:
    dialog = read_dialog(GERMAN)
    assert dialog == Dialog(
        "Diesem Ordner vertrauen?",
        (Option("Ja, ich vertraue diesem Ordner"), Option("Nein, beenden")),
        0,
    )
    for answer in Answer:
        plan = plan_answer(dialog, answer, _adapter(SCREENS / "claude" / "x").answer_words)
        assert isinstance(plan, Refusal)
        assert plan.reason.startswith(
            "I don't recognise this dialog: options seen: "
            "'Ja, ich vertraue diesem Ordner', 'Nein, beenden'"
        )
