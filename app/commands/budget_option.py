"""``--budget-usd`` for `submit` and `job resume`: a job's budget in US dollars, checked
where it is typed (registry/budget.py says what is sane), so a typo is one line and
nothing is stored."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from app.terminal.output import shown
from registry.budget import MAX_BUDGET_USD, check_budget_usd
from registry.errors import InvalidJobInput


class BudgetUsd(click.ParamType[int]):
    """Dollars, as micro-dollars: positive, finite, at most MAX_BUDGET_USD."""

    name = "USD"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and param is None:
            return value  # already converted (a default)
        try:
            return check_budget_usd(value)
        except InvalidJobInput as error:
            self.fail(str(error).removeprefix("--budget-usd "), param, ctx)


BUDGET_USD = BudgetUsd()
BUDGET_HELP = (
    "Stop the job's turn once its agent has spent this many US dollars (read from its "
    f"transcript while it runs; at most {MAX_BUDGET_USD:,.0f}). It is paused until "
    "`orchestrate job resume --job ID --budget-usd MORE`."
)


def warn_if_day_budgets_broken(state_dir: Path) -> None:
    """One line on stderr when the policy file's [budget] table cannot be used: the
    person who wrote a day budget must not believe it stops anything."""
    from app.usage.budget import BudgetFileError, load_day_budgets

    try:
        load_day_budgets(state_dir, os.environ)
    except BudgetFileError as error:
        click.echo(shown(f"orchestrate: day budgets not applied: {error}"), err=True)
