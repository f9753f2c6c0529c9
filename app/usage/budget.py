"""Budgets that stop work, while the agent runs: its spend is read from the same
transcript the history reads (``locate``, ``transcripts``), priced (the agent's own
cost figure where the transcript has one, else tokens x ``prices.toml``), and a job
that reaches its budget has its turn interrupted and is paused until a person raises
the budget (`orchestrate job resume --job ID --budget-usd Y`).

Two budgets can stop a job: its own (``submit --budget-usd``), and its agent's day
budget from the policy file's ``[budget]`` table (``claude = 5.0``: dollars per UTC
day, summed over that agent's jobs registered since midnight UTC). A job resumed
with a new budget of its own is no longer stopped by the day budget.

Every supervision pass runs ``BudgetWatch.check`` over the running jobs; a
transcript is only read again when its size or mtime moved.
"""

from __future__ import annotations

import logging
import math
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from app.agents import adapter_for, built_in_kind
from app.agents.screen import match_screen
from app.policy.rules import policy_path
from app.usage.locate import Transcript, find_transcript, transcript_env
from app.usage.sync import SOURCES, read_transcript
from registry.activity import Observation
from registry.budget import (
    MAX_BUDGET_USD,
    MICRO,
    BudgetStore,
    JobBudget,
    Spend,
    day_start_ms,
    reached_line,
    usd,
)
from registry.errors import InvalidJobInput, RegistryError
from registry.history.errors import HistoryError
from registry.history.prices import PriceTable, load_prices, price_usage, prices_path
from registry.jobs import Registry
from registry.records import Job
from registry.usage import ModelUsage, record_usage
from registry.vocabulary import Activity, PauseReason

log = logging.getLogger(__name__)

BUDGET_TABLE: Final = "budget"


class BudgetFileError(ValueError):
    """The policy file's [budget] table cannot be used (one line says why)."""


@dataclass(frozen=True)
class Priced:
    """One model message as the price table reads it (``prices.Usage``)."""

    agent: str
    usage: ModelUsage

    @property
    def model(self) -> str:
        return self.usage.model

    @property
    def measured(self) -> bool:
        return self.usage.measured

    @property
    def input_tokens(self) -> int:
        return self.usage.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.usage.output_tokens

    @property
    def cache_read_tokens(self) -> int:
        return self.usage.cache_read_tokens

    @property
    def cache_write_tokens(self) -> int:
        return self.usage.cache_write_tokens

    @property
    def agent_cost_micro_usd(self) -> int | None:
        return self.usage.cost_micro_usd


def spend_of(kind: str, usages: Sequence[ModelUsage], table: PriceTable) -> Spend:
    """What these model messages cost: the transcript's own figure where it has one
    (measured), else tokens x the table's price (an estimate)."""
    cost = price_usage((Priced(kind, usage) for usage in usages), table)
    measured = bool(usages) and all(u.cost_micro_usd is not None for u in usages)
    return Spend(round(cost.usd * MICRO), measured, cost.unpriced_tokens)


def parse_day_budgets(data: Mapping[str, object]) -> dict[str, int]:
    """The ``[budget]`` table of a parsed policy file: agent kind -> micro-dollars a
    day. BudgetFileError names the first entry that is not a sane amount."""
    table = data.get(BUDGET_TABLE, {})
    if not isinstance(table, dict):
        raise BudgetFileError("[budget] must be a table of agent = dollars per day")
    budgets: dict[str, int] = {}
    for agent, value in table.items():
        kind = built_in_kind(agent)
        if kind is None or kind != agent:
            raise BudgetFileError(f"[budget]: {agent[:40]!r} is not an agent kind")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BudgetFileError(f"[budget]: {agent} must be a number of dollars a day")
        if not math.isfinite(value) or not 0 < value <= MAX_BUDGET_USD:
            raise BudgetFileError(
                f"[budget]: {agent} must be more than $0 and at most ${MAX_BUDGET_USD:,.0f} a day"
            )
        budgets[kind] = round(value * MICRO)
    return budgets


def load_day_budgets(state_dir: Path, env: Mapping[str, str]) -> dict[str, int]:
    """The day budgets of the policy file (none when there is no file). A file that
    cannot be read raises BudgetFileError: a cap must not vanish silently."""
    path, _named = policy_path(state_dir, env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise BudgetFileError(f"{path} cannot be read: {error}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise BudgetFileError(f"{path} is not TOML: {error}") from None
    return parse_day_budgets(data)


@dataclass(frozen=True)
class Crossed:
    """A job past one of its budgets, and the line that says which."""

    job: Job
    why: str


class BudgetWatch:
    """Reads running jobs' spend and finds those past a budget (one per supervisor)."""

    def __init__(self, registry: Registry, state_dir: Path, env: Mapping[str, str]) -> None:
        self.registry = registry
        self.state_dir = state_dir
        self.env = env
        self.store = BudgetStore(registry.bus)
        self._marks: dict[str, tuple[str, int, int]] = {}
        self._found: dict[str, Transcript] = {}  # a glob per job once, then a stat a pass
        self._recorded: dict[str, set[ModelUsage]] = {}  # given to the history already
        self._table: tuple[tuple[int, int], PriceTable] | None = None
        self.problem: str | None = None
        """Why the day budgets are not applied (the policy file's [budget] is broken)."""

    def check(self, jobs: Iterable[Job]) -> list[Crossed]:
        """Read the spend of every running job under a budget; those now past one."""
        running = [job for job in jobs if job.activity != Activity.PAUSED]
        if not running:
            return []
        own = self.store.of_jobs(job.job_id for job in running)
        try:
            day = load_day_budgets(self.state_dir, self.env)
            self.problem = None
        except BudgetFileError as error:
            day, self.problem = {}, str(error)
            log.warning("day budgets not applied: %s", error)
        watched = [job for job in running if job.job_id in own or built_in_kind(job.agent) in day]
        if not watched:
            return []
        table = self._prices()
        if table is None:
            return []
        if any([self._read(job, table) for job in watched]):  # each read: no short cut
            own = self.store.of_jobs(job.job_id for job in watched)
        crossed = []
        for job in watched:
            why = self._over(job, own.get(job.job_id), day, table)
            if why is not None:
                crossed.append(Crossed(job, why))
        return crossed

    def _prices(self) -> PriceTable | None:
        """The price table, read again only when prices.toml changed."""
        try:
            stat = prices_path(self.state_dir).stat()
            mark = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            mark = (-1, -1)  # not written yet: load_prices writes the default
        if self._table is not None and self._table[0] == mark:
            return self._table[1]
        try:
            table = load_prices(self.state_dir)
            self._table = (mark, table)
            return table
        except HistoryError as error:
            log.warning("budgets not checked: %s", error)
            self.problem = str(error)
            return None

    def _transcript(self, job: Job) -> Transcript | None:
        """Where the job's transcript is: looked for once, again only once it is gone."""
        known = self._found.get(job.job_id)
        if known is not None and known.path.is_file():
            return known
        job_dir = self.state_dir / "logs" / job.job_id
        env = transcript_env(job_dir, self.env)
        found = find_transcript(job.agent, job.agent_session_id, job_dir, env)
        if found is not None:
            self._found[job.job_id] = found
        return found

    def _read(self, job: Job, table: PriceTable) -> bool:
        """Record the job's spend if its transcript changed since it was last read;
        whether it did."""
        transcript = self._transcript(job)
        if transcript is None:
            return False
        try:
            stat = transcript.path.stat()
            mark = (str(transcript.path), stat.st_size, stat.st_mtime_ns)
            if self._marks.get(job.job_id) == mark:
                return False
            usages = read_transcript(transcript)
            spend = spend_of(transcript.kind, usages, table)
            self.store.record_spend(job.job_id, spend)
            done = self._recorded.setdefault(job.job_id, set())
            new = [usage for usage in usages if usage not in done]  # a message's usage grows
            record_usage(self.registry, job.job_id, new, SOURCES[transcript.kind])
            done.update(new)
        except (OSError, RegistryError) as error:
            log.info("job %s: spend not read: %s", job.job_id, error)
            return False
        self._marks[job.job_id] = mark
        return True

    def _over(
        self, job: Job, budget: JobBudget | None, day: Mapping[str, int], table: PriceTable
    ) -> str | None:
        """Why the job must stop now (its own budget, or its agent's day), or None."""
        if budget is not None and budget.crossed() and budget.budget_micro_usd is not None:
            return reached_line(budget.budget_micro_usd, budget.spent_micro_usd)
        kind = built_in_kind(job.agent)
        cap = day.get(kind) if kind is not None else None
        if cap is None or (budget is not None and budget.day_waived):
            return None
        spent = self.day_spend(kind or job.agent, table)
        return reached_line(cap, spent, day_of=kind) if spent >= cap else None

    def day_spend(self, kind: str, table: PriceTable) -> int:
        """What ``kind``'s jobs registered today (UTC) spent; a finished one whose spend
        was never read has its transcript read once."""
        since = day_start_ms()
        todays = [
            job
            for job in self.registry.list()
            if job.created_at_ms >= since and built_in_kind(job.agent) == kind
        ]
        known = self.store.of_jobs(job.job_id for job in todays)
        for job in todays:
            if job.job_id not in known or known[job.job_id].spent is None:
                self._read(job, table)
        known = self.store.of_jobs(job.job_id for job in todays)
        return sum(budget.spent_micro_usd for budget in known.values())


def budget_source(job: Job) -> str:
    """``budget:<kind>``: the source a pause and its resume are recorded under."""
    return f"{PauseReason.BUDGET}:{built_in_kind(job.agent) or 'agent'}"


def pause(
    registry: Registry,
    state_dir: Path,
    job: Job,
    why: str,
    screen: Callable[[], Sequence[str]],
    send_keys: Callable[[tuple[str, ...]], None],
) -> str:
    """Pause ``job`` for ``why``: record it ``paused`` first (so the idle prompt the
    interrupt leaves is not taken for the end of its task), then stop its turn with
    its adapter's interrupt, but only if its screen, read now, shows it working: the
    interrupt key is Escape for Claude Code and Codex, which on a dialog means "no"
    and twice on an idle prompt opens another menu. Only the process whose pause was
    recorded sends it (two passes, a supervisor's and a control room's, may both find
    the job past its budget). Says what was done."""
    held = Observation(Activity.PAUSED, budget_source(job), question=why)
    if registry.observe(job.job_id, held) is None:
        return f"not paused again ({why}): it is paused already, or no longer runs"
    shown = interrupt_if_working(job, state_dir, screen, send_keys)
    if shown is not None:
        return f"paused ({why}); not interrupted: its screen shows {shown}"
    keys = " ".join(adapter_for(job.agent, state_dir).keys.interrupt)
    return f"paused ({why}); its turn interrupted ({keys})"


def interrupt_if_working(
    job: Job,
    state_dir: Path,
    screen: Callable[[], Sequence[str]],
    send_keys: Callable[[tuple[str, ...]], None],
) -> str | None:
    """Send ``job``'s adapter's interrupt if its screen, read now, shows it working;
    else say what the screen shows (None: sent). Also for a paused job whose screen
    read something else at the pause (a redraw under load) and works on: the supervisor
    tries again on a later pass, so a budget never stops only on paper."""
    adapter = adapter_for(job.agent, state_dir)
    seen = match_screen(adapter.kind, adapter.screen_rules, screen())
    if seen is None or seen.activity != Activity.WORKING or not adapter.keys.interrupt:
        return str(seen.activity) if seen is not None else "no screen rule"
    send_keys(adapter.keys.interrupt)
    return None


GO_ON_PROMPT: Final = (
    "Your budget was raised; you were paused when it ran out. Continue the task where you left off."
)


def set_budget_above_spend(registry: Registry, job_id: str, budget_micro: int) -> int:
    """Give ``job_id`` a budget of ``budget_micro``, which must exceed what it spent
    (else InvalidJobInput, one line); its day budget no longer stops it. Returns the
    spend: `job resume --budget-usd` says both, for a paused job and any other."""
    store = BudgetStore(registry.bus)
    known = store.get(job_id)
    spent = known.spent_micro_usd if known is not None else 0
    if budget_micro <= spent:
        raise InvalidJobInput(
            f"--budget-usd {usd(budget_micro)} does not exceed the {usd(spent)} job "
            f"{job_id} already spent"
        )
    store.set_budget(job_id, budget_micro, waive_day=True)
    return spent


def raise_budget(
    registry: Registry,
    state_dir: Path,
    job_id: str,
    budget_micro: int,
    screen: Callable[[], Sequence[str]],
    go_on: Callable[[str], object],
) -> str:
    """`job resume --budget-usd`: give the job a budget above what it spent (else
    InvalidJobInput, one line) and, if it is paused by its budget, lift the pause. Its
    agent is told to go on only when its screen shows its idle prompt (a paste ends in
    Enter, which on a dialog would answer it); a dialog is left for the person.
    Says what was done."""
    job = registry.get(job_id)
    spent = set_budget_above_spend(registry, job_id, budget_micro)
    line = f"budget {usd(budget_micro)} ({usd(spent)} spent)"
    source = budget_source(job)
    if job.activity != Activity.PAUSED or not (job.activity_source or "").startswith(
        f"{PauseReason.BUDGET}:"
    ):
        return f"{job_id}: {line}"
    adapter = adapter_for(job.agent, state_dir)
    seen = match_screen(adapter.kind, adapter.screen_rules, screen())
    if seen is not None and seen.activity == Activity.WAITING:
        registry.observe(job_id, Observation(Activity.WAITING, source, question=seen.question,
                                             tool=seen.tool, command=seen.command))  # fmt: skip
        return f"{job_id}: {line}; resumed, its agent asks a question: answer it"
    registry.observe(job_id, Observation(Activity.WORKING, source, question="budget raised"))
    if seen is None or seen.activity != Activity.IDLE:
        shown = seen.activity if seen is not None else "nothing a rule knows"
        return f"{job_id}: {line}; resumed, not told to go on (its screen shows {shown})"
    go_on(GO_ON_PROMPT)
    return f"{job_id}: {line}; resumed, its agent told to go on"
