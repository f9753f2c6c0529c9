"""Gemini API (Gemini CLI): `streamGenerateContent?alt=sse` turns, and its `generateContent`
side calls (the model router's complexity score, summaries, next-speaker checks)."""

from __future__ import annotations

import json
from typing import Any

from app.selftest.models.script import SIDE_USAGE, Reply, RunShell, Usage, fill_schema
from app.selftest.models.server import JsonResponse, RecordedRequest, Response, SseResponse

SIDE_ANSWERS: dict[str, Any] = {
    "complexity_score": 10,
    "complexity_reasoning": "a simple scripted task",
    "next_speaker": "user",
    "reasoning": "the scripted turn is over",
}
"""Answers to the structured side calls: a low score keeps the router on one model."""


class GeminiApi:
    """Gemini CLI's wire: ``POST /v1beta/models/<model>:<method>``."""

    shell_tool = "run_shell_command"

    def classify(self, request: RecordedRequest) -> str:
        method = request.path.rsplit(":", 1)[-1] if ":" in request.path else ""
        if request.method != "POST":
            return "probe"
        if method == "streamGenerateContent":
            return "turn" if _has_tools(request.body) else "summary"
        if method == "generateContent":
            schema = _json_schema(request.body)
            if schema is not None and "complexity_score" in json.dumps(schema):
                return "router"
            return "side" if schema is not None else "summary"
        if method == "countTokens":
            return "count_tokens"
        return "other"

    def answer_turn(self, request: RecordedRequest, step: RunShell | Reply) -> Response:
        parts: list[dict[str, Any]] = [{"text": step.text}]
        if isinstance(step, RunShell):
            call = {"command": step.command, "description": step.description}
            parts.append({"functionCall": {"name": self.shell_tool, "args": call}})
        return SseResponse([(None, _candidate(part, step.usage)) for part in parts])

    def answer_side(self, request: RecordedRequest) -> Response:
        if request.kind == "probe":
            return JsonResponse(200, {})
        if request.kind == "other":
            return self.error(404, f"no such method: {request.path}")
        if request.kind == "count_tokens":
            return JsonResponse(200, {"totalTokens": SIDE_USAGE.input_tokens})
        schema = _json_schema(request.body)
        text = json.dumps(fill_schema(schema, SIDE_ANSWERS)) if schema else "A scripted session."
        request.usage = SIDE_USAGE
        body = _candidate({"text": text}, SIDE_USAGE)
        if request.path.endswith(":streamGenerateContent"):
            return SseResponse([(None, body)])
        return JsonResponse(200, body)

    def error(self, status: int, message: str) -> JsonResponse:
        return JsonResponse(
            status, {"error": {"code": status, "message": message, "status": "INTERNAL"}}
        )

    def tool_results(self, request: RecordedRequest) -> list[str]:
        body = request.body if isinstance(request.body, dict) else {}
        contents = body.get("contents") or []
        last = contents[-1] if contents else {}
        return [
            json.dumps(part["functionResponse"].get("response"))
            for part in last.get("parts") or []
            if isinstance(part, dict) and "functionResponse" in part
        ]


def _candidate(part: dict[str, Any], usage: Usage) -> dict[str, Any]:
    """One streamed chunk (or a whole answer): a model part, STOP, and the usage."""
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "cachedContentTokenCount": usage.cached_input_tokens,
            "thoughtsTokenCount": usage.reasoning_tokens,
            "totalTokenCount": usage.total_tokens,
        },
        "modelVersion": "fake-model",
    }


def _has_tools(body: Any) -> bool:
    return isinstance(body, dict) and bool(body.get("tools"))


def _json_schema(body: Any) -> Any:
    """The response schema a generateContent call asks for, if any."""
    config = (body.get("generationConfig") if isinstance(body, dict) else None) or {}
    return config.get("responseJsonSchema") or config.get("responseSchema")
