"""Anthropic Messages (Claude Code): `POST /v1/messages` streamed as SSE, plus its side requests."""

from __future__ import annotations

import itertools
import json
from typing import Any

from app.selftest.models.script import SIDE_USAGE, Reply, RunShell, Usage, fill_schema
from app.selftest.models.server import JsonResponse, RecordedRequest, Response, SseResponse

MODEL = "claude-fake-1"
TITLE = "Fake session"
SAFETY_CHECK = "dangerous_tool_use"
"""The safeguard Claude Code's auto mode asks of a turn (2.1.332: ``safeguards`` in the
request); the server answers it per tool call in the ``message_delta``. Without the answer
auto mode stops the turn and asks the person ("Auto mode can't check actions")."""
FLAG_EXPLANATION = "Deletes files outside the work tree and runs a script from the network."


class AnthropicMessages:
    """Claude Code's wire: a `HEAD /` probe at start, tool-using turns, and a tool-less
    title request per session whose answer must be the JSON ``{"title": ...}``."""

    shell_tool = "Bash"

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def classify(self, request: RecordedRequest) -> str:
        if request.method != "POST":
            return "probe"
        if request.path.endswith("/count_tokens"):
            return "count_tokens"
        if not request.path.endswith("/v1/messages"):
            return "other"
        body = request.body if isinstance(request.body, dict) else {}
        if body.get("tools"):
            return "turn"
        return "title" if _json_schema(body) is not None else "side"

    def answer_turn(self, request: RecordedRequest, step: RunShell | Reply) -> Response:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": step.text}]
        stop_reason = "end_turn"
        verdicts: dict[str, Any] = {}
        if isinstance(step, RunShell):
            tool_id = f"toolu_fake{next(self._ids):04d}"
            blocks.append(
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": self.shell_tool,
                    "input": {"command": step.command, "description": step.description},
                }
            )
            stop_reason = "tool_use"
            verdicts[tool_id] = _verdict(step.flagged)
        safety = None
        if _asks_safety_check(request):
            status = {"type": "available", "tool_uses": verdicts}
            safety = [{"type": SAFETY_CHECK, "status": status}]
        return self._message(request, blocks, stop_reason, step.usage, safety)

    def answer_side(self, request: RecordedRequest) -> Response:
        if request.kind == "probe":
            return JsonResponse(200, {})
        if request.kind == "count_tokens":
            return JsonResponse(200, {"input_tokens": SIDE_USAGE.input_tokens})
        if request.kind == "other":
            return self.error(404, f"no such endpoint: {request.path}")
        body = request.body if isinstance(request.body, dict) else {}
        schema = _json_schema(body)
        text = json.dumps(fill_schema(schema, {"title": TITLE})) if schema else "fake"
        request.usage = SIDE_USAGE
        return self._message(request, [{"type": "text", "text": text}], "end_turn", SIDE_USAGE)

    def error(self, status: int, message: str) -> JsonResponse:
        kind = "overloaded_error" if status == 529 else "api_error"
        return JsonResponse(status, {"type": "error", "error": {"type": kind, "message": message}})

    def tool_results(self, request: RecordedRequest) -> list[str]:
        """The tool_result blocks of the request's last user message."""
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("messages") or []
        if not messages or messages[-1].get("role") != "user":
            return []
        content = messages[-1].get("content")
        if not isinstance(content, list):
            return []
        return [
            _text_of(block.get("content"))
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    def _message(
        self,
        request: RecordedRequest,
        blocks: list[dict[str, Any]],
        stop_reason: str,
        usage: Usage,
        safety: list[dict[str, Any]] | None = None,
    ) -> Response:
        message_id = f"msg_fake{next(self._ids):04d}"
        body = request.body if isinstance(request.body, dict) else {}
        model = body.get("model") or MODEL
        usage_start = {
            "input_tokens": usage.input_tokens,
            "output_tokens": 1,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cached_input_tokens,
        }
        if not body.get("stream"):
            return JsonResponse(
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": {**usage_start, "output_tokens": usage.output_tokens},
                },
            )
        events: list[tuple[str | None, Any]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": usage_start,
                    },
                },
            )
        ]
        for index, block in enumerate(blocks):
            events.extend(_block_events(index, block))
        delta: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
        if safety is not None:
            delta["safeguard_results"] = safety
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": delta,
                    "usage": {"output_tokens": usage.output_tokens},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return SseResponse(events)


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """content_block_start / _delta / _stop for one text or tool_use block."""
    start: dict[str, Any]
    if block["type"] == "text":
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _asks_safety_check(request: RecordedRequest) -> bool:
    """Whether the turn asks for auto mode's server-side safety check."""
    body = request.body if isinstance(request.body, dict) else {}
    asked = body.get("safeguards")
    return isinstance(asked, list) and any(
        isinstance(item, dict) and item.get("type") == SAFETY_CHECK for item in asked
    )


def _verdict(flagged: bool) -> dict[str, Any]:
    """The safety check's answer for one tool call, in 2.1.332's shape."""
    if not flagged:
        return {"type": "evaluated", "outcome": "not_flagged"}
    return {"type": "evaluated", "outcome": "flagged", "explanation": FLAG_EXPLANATION}


def _json_schema(body: dict[str, Any]) -> Any:
    """The JSON schema a tool-less request asks its answer to follow, if any."""
    output_format = (body.get("output_config") or {}).get("format") or {}
    return output_format.get("schema") if output_format.get("type") == "json_schema" else None


def _text_of(content: Any) -> str:
    """A tool_result's content: a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""
