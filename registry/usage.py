"""A job's token usage, as the registry records it: one ``job.usage`` bus message per
model message of the job's agent, which the history build sums per hour.

Who reads the agent's transcript is the app's business (``app.usage``: it knows
where each CLI writes it); the registry checks what it is handed and files it
under an id made from the agent's own message id, so reading a transcript again
records nothing twice (the bus ignores a message whose id it already holds).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bus.messages import Outgoing
from registry.activity import clean_text
from registry.bus_types import JOB_USAGE
from registry.errors import InvalidJobInput
from registry.jobs import Registry
from registry.jobstore import REGISTRY_AGENT
from registry.vocabulary import FINAL_JOB_STATUSES

MAX_TOKENS = 10**12  # per message: a number past this is a broken transcript, not usage
MAX_COST_MICRO_USD = 10**12


@dataclass(frozen=True)
class ModelUsage:
    """The tokens of one model message, as the agent's transcript gives them.

    ``key`` is the agent's own id of the message (deduplicates re-reads);
    ``at_ms`` when it was made (None: the transcript does not say); ``measured``:
    the provider's usage record (else the agent's own estimate, as Aider's);
    ``cost_micro_usd``: the agent's own cost estimate, if it gives one."""

    key: str
    at_ms: int | None
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_micro_usd: int | None = None
    measured: bool = True

    def __post_init__(self) -> None:
        counts = (self.input_tokens, self.output_tokens, self.cache_read_tokens,
                  self.cache_write_tokens)  # fmt: skip
        if any(type(n) is not int or not 0 <= n <= MAX_TOKENS for n in counts):
            raise InvalidJobInput(f"usage of {self.key[:40]!r}: token counts out of range")
        cost = self.cost_micro_usd
        if cost is not None and (type(cost) is not int or not 0 <= cost <= MAX_COST_MICRO_USD):
            raise InvalidJobInput(f"usage of {self.key[:40]!r}: cost out of range")


def usage_message_id(job_id: str, key: str) -> str:
    """The bus id of one model message's usage: the job's, then a hash of the agent's
    own message id (which is agent text: never put in an id as it is)."""
    digest = hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:24]
    return f"{job_id}:usage:{digest}"


def _ms(stamp: str | None) -> int | None:
    if not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def record_usage(registry: Registry, job_id: str, usages: Sequence[ModelUsage], source: str) -> int:
    """Record the usage of ``job_id``'s model messages; returns how many were new.

    A message's time is the transcript's, kept within the job's life (from its
    registration to its end, or now): a clock gone wrong must not put tokens in
    another week. Without one it counts at the job's end, or now if it runs."""
    job = registry.get(job_id)
    now = int(time.time() * 1000)
    born = job.created_at_ms or _ms(job.created_at) or 0
    ended = _ms(job.completed_at) if job.status in FINAL_JOB_STATUSES else None
    latest = min(now, ended) if ended is not None else now
    messages = []
    for usage in usages:
        at_ms = latest if usage.at_ms is None else min(max(usage.at_ms, born), latest)
        payload = {
            "job_id": job_id,
            "at_ms": at_ms,
            "model": clean_text(usage.model, 120) or "unknown",
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "measured": usage.measured,
            "source": clean_text(source, 120),
        }
        if usage.cost_micro_usd is not None:
            payload["cost_micro_usd"] = usage.cost_micro_usd
        messages.append(
            Outgoing(
                type=JOB_USAGE,
                from_agent=REGISTRY_AGENT,
                payload=payload,
                correlation_id=job_id,
                id=usage_message_id(job_id, usage.key),
            )
        )
    published = registry.bus.publish_many(messages) if messages else []
    return sum(1 for message in published if not message.duplicate)
