"""Token usage from each agent CLI's own transcript (formats measured in
/work/shared/AGENTS.md and its fixtures), one ``ModelUsage`` per model message.

* Claude Code: assistant lines carry ``message.usage``; one API message with text
  and a tool call is written as several lines with the same ``message.id`` and the
  same usage: counted once per id (its last line). Releases that wrote a
  ``costUSD`` beside it give the message's measured cost, which beats tokens x prices.
* Codex: ``token_usage_record`` lines give each response's usage by
  ``response_id``; older rollouts only have ``event_msg``/``token_count`` lines with
  the thread's running total: each rise of the total is a message. Codex's
  ``input_tokens`` include the cached ones.
* Gemini CLI: model messages carry ``tokens {input, output, cached, thoughts,
  tool}``; a chat file rewrites whole messages (``$set``): counted once per id.
  ``input`` includes the cached tokens; thoughts are billed as output.
* Aider: ``> Tokens: 2.5k sent, 1.1k cache write, 245 received. Cost: $0.01 message,
  …`` lines in its chat history: Aider's own rounded estimates (``measured`` False),
  its cost estimate too. No time per message.

Transcripts are the agent's (and the model's) text: a line that is not what it
should be is skipped, never trusted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from registry.usage import MAX_TOKENS, ModelUsage

UNKNOWN_MODEL = "unknown"


def _count(value: Any) -> int:
    """A token count from JSON: a non-negative int, else 0."""
    return value if type(value) is int and 0 <= value <= MAX_TOKENS else 0


def _ms(stamp: Any) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None  # a time without a zone says nothing sure
    return int(moment.timestamp() * 1000)


def _objects(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _text(value: Any, default: str = UNKNOWN_MODEL) -> str:
    return value if isinstance(value, str) and value else default


def claude_usage(lines: Iterable[str]) -> list[ModelUsage]:
    """Claude Code's ``<session>.jsonl``: each assistant message once, by ``message.id``."""
    found: dict[str, ModelUsage] = {}
    for line in _objects(lines):
        message = line.get("message")
        if line.get("type") != "assistant" or not isinstance(message, Mapping):
            continue
        usage, message_id = message.get("usage"), message.get("id")
        if not isinstance(usage, Mapping) or not isinstance(message_id, str):
            continue
        found[message_id] = ModelUsage(
            key=f"claude:{message_id}",
            at_ms=_ms(line.get("timestamp")),
            model=_text(message.get("model")),
            input_tokens=_count(usage.get("input_tokens")),
            output_tokens=_count(usage.get("output_tokens")),
            cache_read_tokens=_count(usage.get("cache_read_input_tokens")),
            cache_write_tokens=_count(usage.get("cache_creation_input_tokens")),
            cost_micro_usd=_cost(line.get("costUSD")),
        )
    return list(found.values())


def _cost(value: Any) -> int | None:
    """A transcript's own cost figure in dollars (Claude Code wrote ``costUSD`` on each
    assistant line), as micro-dollars; None when there is none or it is not a sane one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 0 <= value <= 1_000_000:  # NaN fails both
        return None
    return round(value * 1_000_000)


def _codex_usage(usage: Mapping[str, Any]) -> tuple[int, int, int]:
    """(uncached input, output, cached input) of a Codex usage object."""
    cached = _count(usage.get("cached_input_tokens"))
    return (
        max(0, _count(usage.get("input_tokens")) - cached),
        _count(usage.get("output_tokens")),
        cached,
    )


def codex_usage(lines: Iterable[str]) -> list[ModelUsage]:
    """A Codex rollout: per response when it records them, else rises of the total."""
    records: dict[str, ModelUsage] = {}
    rises: list[ModelUsage] = []
    model = UNKNOWN_MODEL
    last_total = 0
    for line in _objects(lines):
        payload = line.get("payload")
        if not isinstance(payload, Mapping):
            continue
        kind = line.get("type")
        if kind == "turn_context":
            model = _text(payload.get("model"), model)
        elif kind == "token_usage_record":
            usage, response = payload.get("usage"), payload.get("response_id")
            if isinstance(usage, Mapping) and isinstance(response, str):
                fresh, output, cached = _codex_usage(usage)
                records[response] = ModelUsage(f"codex:{response}", _ms(line.get("timestamp")),
                                               model, fresh, output, cached)  # fmt: skip
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            total = info.get("total_token_usage") if isinstance(info, Mapping) else None
            if not isinstance(total, Mapping):
                continue
            running = _count(total.get("total_tokens"))
            if running <= last_total:
                continue  # repeated, or a total from before a reset
            last = info.get("last_token_usage") if isinstance(info, Mapping) else None
            fresh, output, cached = _codex_usage(last if isinstance(last, Mapping) else total)
            rises.append(ModelUsage(f"codex-total:{running}", _ms(line.get("timestamp")), model,
                                    fresh, output, cached))  # fmt: skip
            last_total = running
    return list(records.values()) if records else rises


def gemini_usage(lines: Iterable[str]) -> list[ModelUsage]:
    """A Gemini CLI chat file: each model message once, by its id (whole-message
    rewrites under ``$set`` repeat them)."""
    found: dict[str, ModelUsage] = {}

    def take(message: Any) -> None:
        if not isinstance(message, Mapping) or message.get("type") != "gemini":
            return
        tokens, message_id = message.get("tokens"), message.get("id")
        if not isinstance(tokens, Mapping) or not isinstance(message_id, str):
            return
        cached = _count(tokens.get("cached"))
        found[message_id] = ModelUsage(
            key=f"gemini:{message_id}",
            at_ms=_ms(message.get("timestamp")),
            model=_text(message.get("model")),
            input_tokens=max(0, _count(tokens.get("input")) - cached),
            output_tokens=_count(tokens.get("output")) + _count(tokens.get("thoughts")),
            cache_read_tokens=cached,
        )

    for line in _objects(lines):
        take(line)
        update = line.get("$set")
        if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
            for message in update["messages"]:
                take(message)
    return list(found.values())


_AIDER_TOKENS = re.compile(
    r"^> Tokens: (?P<sent>[\d.]+[kM]?) sent"
    r"(?:, (?P<write>[\d.]+[kM]?) cache write)?"
    r"(?:, (?P<hit>[\d.]+[kM]?) cache hit)?"
    r", (?P<received>[\d.]+[kM]?) received\."
    r"(?:\s+Cost: \$(?P<cost>[\d.]+) message)?"
)
_AIDER_COST = re.compile(r"^> Cost: \$(?P<cost>[\d.]+) message")
_AIDER_MODEL = re.compile(r"^> Model: (?P<model>\S+)")


def _aider_number(text: str | None) -> int:
    """Aider's rounded count ("777", "2.5k", "12k", "1.2M") as an int."""
    if not text:
        return 0
    scale = {"k": 1_000, "M": 1_000_000}.get(text[-1], 1)
    try:
        value = float(text.rstrip("kM")) * scale
    except ValueError:
        return 0
    return min(round(value), MAX_TOKENS)


def _micro_usd(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return min(round(float(text) * 1_000_000), 10**12)
    except ValueError:
        return None


def aider_usage(lines: Iterable[str]) -> list[ModelUsage]:
    """Aider's chat history (markdown): every ``Tokens:`` line, with the cost on it or
    on the next line. Keyed by line number: the file is only appended to."""
    found: list[ModelUsage] = []
    model = UNKNOWN_MODEL
    pending: tuple[int, re.Match[str]] | None = None

    def close(cost: str | None) -> None:
        nonlocal pending
        if pending is None:
            return
        number, match = pending
        found.append(
            ModelUsage(
                key=f"aider:{number}",
                at_ms=None,
                model=model,
                input_tokens=_aider_number(match["sent"]),
                output_tokens=_aider_number(match["received"]),
                cache_read_tokens=_aider_number(match["hit"]),
                cache_write_tokens=_aider_number(match["write"]),
                cost_micro_usd=_micro_usd(cost),
                measured=False,
            )
        )
        pending = None

    for number, raw in enumerate(lines):
        line = raw.rstrip()
        if pending is not None:
            cost = _AIDER_COST.match(line)
            close(cost["cost"] if cost else None)
        if (named := _AIDER_MODEL.match(line)) is not None:
            model = named["model"]
        elif (tokens := _AIDER_TOKENS.match(line)) is not None:
            if tokens["cost"] is not None:
                pending = (number, tokens)
                close(tokens["cost"])
            else:
                pending = (number, tokens)
    close(None)
    return found
