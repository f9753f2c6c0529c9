"""The line `job why` gives about a job's newest decision: who answered its agent's
last structured question, a policy rule, the policy's reviewer or a person."""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.decisions import latest_decision
from registry.vocabulary import DecisionSource

if TYPE_CHECKING:
    from bus.messages import Bus


def decision_line(bus: Bus, job_id: str) -> str | None:
    """ "answered yes by policy rule 'tests'"; None when no decision was ever posted."""
    decision = latest_decision(bus, job_id, 0)
    if decision is None or not decision.readable or decision.answer is None:
        return None
    if decision.by in (DecisionSource.POLICY, DecisionSource.REVIEWER):
        who = decision.reason or f"the {decision.by}"
    else:
        who = f"a {DecisionSource.PERSON} (in the {decision.by})"
    return f"answered {decision.answer} by {who}"
