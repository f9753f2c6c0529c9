"""The decision protocol: an answer handed to an agent that waits for one, with no key
typed (so none can be dropped or land in the wrong dialog).

Two agents wait this way under ``--approvals control-room``:

* Claude Code's permission hook (`orchestrate hook claude`, app/agents/hook.py)
  blocks, bounded, in :func:`wait_for_decision`, and prints the decision in
  Claude's format (``decision_output`` of app/agents/claude.py);
* Codex's app-server bridge (app/agents/codex_bridge.py) holds the request and
  answers it with the decision, through a :class:`DecisionReader` of its own.

The person's side posts the decision with :func:`decide`. The record itself
(``job.decision``) is the registry's: registry/decisions.py.

Imported by the hook on the agent's critical path: nothing heavy here.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from registry.decisions import Decision, DecisionReader, post_decision
from registry.vocabulary import Answer

if TYPE_CHECKING:
    from bus.messages import Bus

CONTROL_ROOM_APPROVALS = "control-room"
"""``--approvals control-room``: structured questions wait for orchestrate's decision."""
POLL_SEC = 0.1
"""How often a waiting hook looks for its decision."""


def decide(bus: Bus, job_id: str, reply: Answer, *, by: str) -> int:
    """Post ``reply`` as the decision the job's waiting hook or bridge obeys; its seq."""
    return post_decision(bus, job_id, reply, by=by)


def wait_for_decision(
    bus: Bus, job_id: str, after_seq: int, deadline: float, poll_sec: float = POLL_SEC
) -> Decision | None:
    """The decision on this job's question posted after ``after_seq``, waiting until
    ``deadline`` (``time.monotonic()``); None when none came, or it was unreadable
    (the agent then shows its own dialog)."""
    reader = DecisionReader(bus, job_id, after_seq)
    while time.monotonic() < deadline:
        decision = reader.latest()
        if decision is not None:
            return decision if decision.readable else None
        time.sleep(poll_sec)
    return None
