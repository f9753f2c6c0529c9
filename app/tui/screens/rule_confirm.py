"""`A`'s confirm dialog: the rule made from a waiting job's question, as the TOML text
that goes into the policy file, and where it goes. Cancel is focused: enter alone
adds nothing."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from app.tui.safe_text import as_text
from app.tui.screens.confirm import ConfirmScreen


class RuleConfirmScreen(ConfirmScreen):
    """ConfirmScreen with the rule's text set apart; not destructive, so not red."""

    DEFAULT_CSS = """
    RuleConfirmScreen > Vertical { width: 84; border: thick $accent 80%; }
    """

    def __init__(self, job_id: str, rule_text: str, policy_file: Path) -> None:
        question = Text()
        question.append_text(as_text(f"Add this rule to {policy_file}?", "bold"))
        question.append("\n")
        question.append_text(as_text(f"Made from job {job_id}'s question; it applies to the "))
        question.append_text(as_text("next questions (this one still waits for y or n)."))
        question.append("\n\n")
        question.append_text(as_text(rule_text.rstrip("\n"), "bold", one_line=False))
        super().__init__(question, "Add rule")
