"""OpenAI Responses (Codex): `POST /v1/responses` streamed as SSE, plus the title request."""

from __future__ import annotations

import itertools
import json
from typing import Any

from app.selftest.models.script import SIDE_USAGE, Reply, RunShell, Usage, fill_schema
from app.selftest.models.server import JsonResponse, RecordedRequest, Response, SseResponse

TITLE = "Fake session"


class OpenAIResponses:
    """Codex's wire. A RunShell becomes an `exec_command` call asking for
    ``sandbox_permissions: "require_escalated"``: under ``-a on-request`` that is what
    makes Codex ask the user (a sandboxed command would just run)."""

    shell_tool = "exec_command"

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def classify(self, request: RecordedRequest) -> str:
        if request.method != "POST":
            return "probe"
        if not request.path.endswith("/responses"):
            return "other"
        body = request.body if isinstance(request.body, dict) else {}
        if body.get("tools"):
            return "turn"
        return "title" if _json_schema(body) is not None else "side"

    def answer_turn(self, request: RecordedRequest, step: RunShell | Reply) -> Response:
        items: list[dict[str, Any]] = [self._message(step.text)]
        if isinstance(step, RunShell):
            number = next(self._ids)
            arguments = {
                "cmd": step.command,
                "justification": step.description,
                "sandbox_permissions": "require_escalated",
            }
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_fake{number:04d}",
                    "call_id": f"call_fake{number:04d}",
                    "name": self.shell_tool,
                    "arguments": json.dumps(arguments),
                    "status": "completed",
                }
            )
        return self._stream(items, step.usage)

    def answer_side(self, request: RecordedRequest) -> Response:
        if request.kind == "probe":
            return JsonResponse(200, {"object": "list", "data": []})
        if request.kind == "other":
            return self.error(404, f"no such endpoint: {request.path}")
        body = request.body if isinstance(request.body, dict) else {}
        schema = _json_schema(body)
        text = json.dumps(fill_schema(schema, {"title": TITLE})) if schema else "fake"
        request.usage = SIDE_USAGE
        return self._stream([self._message(text)], SIDE_USAGE)

    def error(self, status: int, message: str) -> JsonResponse:
        return JsonResponse(
            status, {"error": {"message": message, "type": "server_error", "code": None}}
        )

    def tool_results(self, request: RecordedRequest) -> list[str]:
        body = request.body if isinstance(request.body, dict) else {}
        return [
            str(item.get("output", ""))
            for item in body.get("input") or []
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]

    def _message(self, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"msg_fake{next(self._ids):04d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }

    def _stream(self, items: list[dict[str, Any]], usage: Usage) -> SseResponse:
        response_id = f"resp_fake{next(self._ids):04d}"
        events: list[tuple[str | None, Any]] = [
            (
                "response.created",
                {
                    "type": "response.created",
                    "response": {"id": response_id, "status": "in_progress", "output": []},
                },
            )
        ]
        for index, item in enumerate(items):
            events.extend(_item_events(index, item))
        completed = {
            "id": response_id,
            "status": "completed",
            "output": items,
            "usage": {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                "total_tokens": usage.total_tokens,
            },
        }
        events.append(("response.completed", {"type": "response.completed", "response": completed}))
        return SseResponse(events)


def _item_events(index: int, item: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """output_item.added, the text delta for a message, and output_item.done."""
    opened = {**item, "status": "in_progress"}
    if item["type"] == "message":
        opened["content"] = []
    events: list[tuple[str | None, Any]] = [
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": opened},
        )
    ]
    if item["type"] == "message":
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": item["content"][0]["text"],
                },
            )
        )
    events.append(
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": index, "item": item},
        )
    )
    return events


def _json_schema(body: dict[str, Any]) -> Any:
    """The JSON schema a request asks its answer to follow (``text.format``), if any."""
    text_format = (body.get("text") or {}).get("format") or {}
    return text_format.get("schema") if text_format.get("type") == "json_schema" else None
