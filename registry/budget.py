"""Budgets that stop work: a job's budget in US dollars (``submit --budget-usd``), what
its agent has spent so far, and the arithmetic that says when it crossed.

Money is kept in whole micro-dollars (integers): a sum of many small costs must not
drift, and a comparison at the budget's edge must be exact. The spend is read by the
app from the agent's own transcript while it runs (``app/usage/budget.py``) and
recorded here, so `job why`, the control room and the next pass all see the same
figure. The table ``job_budgets`` is versioned apart from the registry's own tables
(like placements): an older ``state.db`` gains it on first use, and nothing in it
changes what an older release reads.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from bus.db import apply_migrations, now_ms, translate
from bus.messages import Bus
from registry.errors import InvalidJobInput
from registry.store import ensure_schema

VERSION_KEY: Final = "budgets_schema_version"
MICRO: Final = 1_000_000
MAX_BUDGET_USD: Final = 10_000.0
"""The largest budget taken: past this a number is a typo (a missing point), not a cap."""

_V1 = """
CREATE TABLE IF NOT EXISTS job_budgets (
    job_id TEXT PRIMARY KEY REFERENCES jobs(job_id) ON DELETE CASCADE,
    budget_micro_usd INTEGER,
    day_waived INTEGER NOT NULL DEFAULT 0,
    spent_micro_usd INTEGER,
    spent_measured INTEGER NOT NULL DEFAULT 0,
    unpriced_tokens INTEGER NOT NULL DEFAULT 0,
    spent_at_ms INTEGER
);
"""
MIGRATIONS: list[str] = [_V1]


def check_budget_usd(value: object, what: str = "--budget-usd") -> int:
    """A budget in dollars as micro-dollars: a positive, finite number no larger than
    MAX_BUDGET_USD (``InvalidJobInput``, one line, else)."""
    if isinstance(value, str):
        text = value
        try:
            value = float(text.strip().removeprefix("$"))
        except ValueError:
            shown = text.encode("unicode_escape").decode("ascii")[:40]
            raise InvalidJobInput(f"{what} must be a number of dollars, got {shown!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidJobInput(f"{what} must be a number of dollars")
    if not math.isfinite(value) or value <= 0:
        raise InvalidJobInput(f"{what} must be a positive number of dollars, got {value}")
    if value > MAX_BUDGET_USD:
        raise InvalidJobInput(f"{what} must be at most ${MAX_BUDGET_USD:,.0f}, got {value:,.2f}")
    micro = round(value * MICRO)
    if micro <= 0:
        raise InvalidJobInput(f"{what} must be at least one micro-dollar, got {value}")
    return micro


def usd(micro: int) -> str:
    """Micro-dollars as a person reads them: "$0.53" (cents unless the amount is smaller)."""
    if 0 < abs(micro) < 10_000:
        return f"${micro / MICRO:.4f}"
    return f"${micro / MICRO:,.2f}"


def day_start_ms(now: int | None = None) -> int:
    """The start of the current UTC day: a day budget sums the jobs registered since.
    UTC, not local time, so every node and the history agree on where a day ends."""
    moment = datetime.fromtimestamp((now if now is not None else now_ms()) / 1000, UTC)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return int(midnight.timestamp() * 1000)


@dataclass(frozen=True)
class Spend:
    """What a job's agent spent, as far as its transcript says.

    ``measured``: every priced message carried the agent's own cost figure (else some
    of it is tokens x prices.toml, an estimate). ``unpriced_tokens``: tokens of a model
    the price table does not know, which the figure leaves out."""

    micro_usd: int
    measured: bool = False
    unpriced_tokens: int = 0


@dataclass(frozen=True)
class JobBudget:
    """A job's budget row: its own cap (None: only its agent's day budget applies)
    and the spend last read."""

    job_id: str
    budget_micro_usd: int | None
    day_waived: bool
    spent: Spend | None
    spent_at_ms: int | None

    @property
    def spent_micro_usd(self) -> int:
        return self.spent.micro_usd if self.spent is not None else 0

    def crossed(self) -> bool:
        """Whether the spend reached the job's own budget."""
        cap = self.budget_micro_usd
        return cap is not None and self.spent_micro_usd >= cap

    def line(self) -> str:
        """ "$0.12 spent of $0.50", as the row, the job page and `job why` say it."""
        spent = usd(self.spent_micro_usd) if self.spent is not None else "nothing read yet"
        if self.spent is not None:
            spent += " spent" + ("" if self.spent.measured else " (estimated)")
        if self.budget_micro_usd is None:
            return spent
        return f"{spent} of {usd(self.budget_micro_usd)}"


def reached_line(budget_micro: int, spent_micro: int, *, day_of: str | None = None) -> str:
    """Why a job was paused: "budget $0.50 reached ($0.53 spent)"; a day budget says
    whose ("claude's day budget $5.00 reached ($5.02 spent today)")."""
    if day_of is not None:
        return f"{day_of}'s day budget {usd(budget_micro)} reached ({usd(spent_micro)} spent today)"
    return f"budget {usd(budget_micro)} reached ({usd(spent_micro)} spent)"


class BudgetStore:
    """The ``job_budgets`` table, beside the jobs it caps."""

    def __init__(self, bus: Bus) -> None:
        self.db = bus.db
        ensure_schema(self.db.conn, self.db.path)  # the jobs table it refers to
        try:
            apply_migrations(self.db.conn, VERSION_KEY, MIGRATIONS, self.db.path)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def set_budget(self, job_id: str, micro_usd: int, *, waive_day: bool = False) -> None:
        """Give ``job_id`` its own budget (``waive_day``: its agent's day budget no
        longer stops it, as a person raised it past that knowingly)."""
        if type(micro_usd) is not int or micro_usd <= 0:
            raise InvalidJobInput("a budget must be a positive number of micro-dollars")
        try:
            with self.db.transaction() as conn:
                conn.execute(
                    "INSERT INTO job_budgets (job_id, budget_micro_usd, day_waived) "
                    "VALUES (?, ?, ?) ON CONFLICT(job_id) DO UPDATE SET "
                    "budget_micro_usd = excluded.budget_micro_usd, "
                    "day_waived = MAX(day_waived, excluded.day_waived)",
                    (job_id, micro_usd, int(waive_day)),
                )
        except sqlite3.IntegrityError:
            raise InvalidJobInput(f"no job {job_id!r}") from None
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def record_spend(self, job_id: str, spend: Spend) -> None:
        """Keep the spend just read from the job's transcript."""
        try:
            with self.db.transaction() as conn:
                conn.execute(
                    "INSERT INTO job_budgets (job_id, spent_micro_usd, spent_measured, "
                    "unpriced_tokens, spent_at_ms) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(job_id) DO UPDATE SET "
                    "spent_micro_usd = excluded.spent_micro_usd, "
                    "spent_measured = excluded.spent_measured, "
                    "unpriced_tokens = excluded.unpriced_tokens, "
                    "spent_at_ms = excluded.spent_at_ms",
                    (job_id, spend.micro_usd, int(spend.measured), spend.unpriced_tokens, now_ms()),
                )
        except sqlite3.IntegrityError:
            raise InvalidJobInput(f"no job {job_id!r}") from None
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    def get(self, job_id: str) -> JobBudget | None:
        return self.of_jobs([job_id]).get(job_id)

    def of_jobs(self, job_ids: Iterable[str]) -> dict[str, JobBudget]:
        """The budget rows of these jobs (those that have one)."""
        ids = sorted(set(job_ids))
        found: dict[str, JobBudget] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.conn.execute(
                f"SELECT * FROM job_budgets WHERE job_id IN ({marks})", chunk
            ).fetchall()
            for row in rows:
                found[row["job_id"]] = _budget_of(row)
        return found


def _budget_of(row: sqlite3.Row) -> JobBudget:
    spent = None
    if row["spent_micro_usd"] is not None:
        spent = Spend(
            int(row["spent_micro_usd"]), bool(row["spent_measured"]), int(row["unpriced_tokens"])
        )
    return JobBudget(
        job_id=row["job_id"],
        budget_micro_usd=row["budget_micro_usd"],
        day_waived=bool(row["day_waived"]),
        spent=spent,
        spent_at_ms=row["spent_at_ms"],
    )
