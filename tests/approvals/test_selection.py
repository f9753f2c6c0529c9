"""The driver of an answer by meaning, over a fake selection list: it moves the
marker, checks it, then confirms; it presses nothing it cannot stand behind."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.approvals.errors import UnrecognisedDialog
from app.approvals.selection import answer_by_meaning
from registry.vocabulary import Answer

MARKER = "\u276f"


class FakeList:
    """A selection list drawn like Claude Code 2.1.332's trust dialog."""

    def __init__(self, options: Sequence[str], *, moves: bool = True) -> None:
        self.options = list(options)
        self.selected = 0
        self.moves = moves
        self.sent: list[str] = []
        self.chosen: str | None = None

    def screen(self) -> list[str]:
        if self.chosen is not None:
            return ["", MARKER + " "]
        marked = [
            (f" {MARKER} " if i == self.selected else "   ") + text
            for i, text in enumerate(self.options)
        ]
        return [" Do you trust this folder?", "", *marked, "", " Enter to confirm"]

    def send(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.sent.append(key)
            if key == "Enter":
                self.chosen = self.options[self.selected]
            elif self.moves and key == "Down":
                self.selected = min(self.selected + 1, len(self.options) - 1)
            elif self.moves and key == "Up":
                self.selected = max(self.selected - 1, 0)


def test_yes_moves_the_marker_off_no_exit_then_confirms() -> None:
    dialog = FakeList(["No, exit", "Yes, I trust this folder"])
    how = answer_by_meaning(dialog.screen, dialog.send, Answer.YES)
    assert dialog.sent == ["Down", "Enter"]
    assert dialog.chosen == "Yes, I trust this folder"
    assert how == "meaning: Down Enter (Yes, I trust this folder)"


def test_no_where_the_marker_already_sits_is_just_enter() -> None:
    dialog = FakeList(["No, exit", "Yes, I trust this folder"])
    answer_by_meaning(dialog.screen, dialog.send, Answer.NO)
    assert dialog.sent == ["Enter"]
    assert dialog.chosen == "No, exit"


def test_a_marker_that_does_not_move_is_never_confirmed() -> None:
    dialog = FakeList(["No, exit", "Yes, I trust this folder"], moves=False)
    with pytest.raises(UnrecognisedDialog, match="the marker did not move") as refused:
        answer_by_meaning(dialog.screen, dialog.send, Answer.YES, marker_sec=0.1)
    assert "Enter" not in dialog.sent
    assert dialog.chosen is None
    assert "'No, exit', 'Yes, I trust this folder'" in str(refused.value)


def test_an_unknown_dialog_gets_no_key_at_all() -> None:
    dialog = FakeList(["Ja, ich vertraue diesem Ordner", "Nein, beenden"])
    with pytest.raises(UnrecognisedDialog) as refused:
        answer_by_meaning(dialog.screen, dialog.send, Answer.YES)
    assert dialog.sent == []
    assert str(refused.value).startswith(
        "I don't recognise this dialog: options seen: "
        "'Ja, ich vertraue diesem Ordner', 'Nein, beenden'"
    )


def test_a_screen_with_no_list_gets_no_key() -> None:
    sent: list[str] = []
    with pytest.raises(UnrecognisedDialog, match="options seen: none"):
        answer_by_meaning(lambda: ["", MARKER + " "], sent.extend, Answer.YES)
    assert sent == []
