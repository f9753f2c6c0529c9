"""`job resume --budget-usd` and the budget's line in `job why` (app/usage/budget.py
holds the watch and the arithmetic)."""

from __future__ import annotations

from typing import Protocol

from app.settings import Settings
from app.tmux.driver import TmuxDriver
from app.tmux.errors import PaneNotFound
from app.usage.budget import raise_budget, set_budget_above_spend
from registry.activity import clean_text
from registry.budget import BudgetStore, usd
from registry.jobs import Registry
from registry.records import Job
from registry.vocabulary import Activity, JobStatus, PauseReason

SCREEN_LINES = 40


class Resumable(Protocol):
    """What resuming needs of the orchestrator (a Protocol: no import circle)."""

    settings: Settings
    registry: Registry

    @property
    def driver(self) -> TmuxDriver: ...

    def pane_for_job(self, job_id: str) -> str | None: ...

    def send_input(self, job_id: str, text: str, *, by: str = "cli") -> int: ...

    def resume_job(self, job_id: str, *, reason: str = ...) -> Job: ...


def resume_with_budget(orch: Resumable, job_id: str, budget_micro: int, reason: str) -> str:
    """Raise the job's budget above its spend; a running job paused by its budget goes
    on in its pane, an ended one starts again (as `job resume`). One line of what was done."""
    registry = orch.registry
    job = registry.get(job_id)
    if job.status == JobStatus.RUNNING:
        pane_id = orch.pane_for_job(job_id)

        def screen() -> list[str]:
            if pane_id is None:
                return []
            try:
                return orch.driver.capture(pane_id, SCREEN_LINES)
            except PaneNotFound:
                return []

        def go_on(text: str) -> None:
            orch.send_input(job_id, text, by="cli")

        return raise_budget(registry, orch.settings.state_dir, job_id, budget_micro, screen, go_on)
    spent = set_budget_above_spend(registry, job_id, budget_micro)
    done = orch.resume_job(job_id, reason=reason)
    return f"{job_id}: {done.status}; budget {usd(budget_micro)} ({usd(spent)} spent)"


def paused_by_budget(job: Job) -> bool:
    """Whether the job is paused because it crossed a budget."""
    source = job.activity_source or ""
    return job.activity == Activity.PAUSED and source.startswith(f"{PauseReason.BUDGET}:")


def budget_why(registry: Registry, job_id: str) -> str | None:
    """`job why`'s budget line: "paused: budget $0.50 reached ($0.53 spent)" for a job
    its budget stopped, else "budget: $0.12 spent of $0.50"; None without a budget."""
    job = registry.get(job_id)
    if job.status == JobStatus.RUNNING and paused_by_budget(job):
        return f"paused: {clean_text((job.activity_data or {}).get('question'))}"
    known = BudgetStore(registry.bus).get(job_id)
    return f"budget: {known.line()}" if known is not None else None
