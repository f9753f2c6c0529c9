"""OpenAI chat completions (Aider, through litellm): `POST /v1/chat/completions`, SSE or not."""

from __future__ import annotations

import itertools
import time
from typing import Any

from app.selftest.models.script import SIDE_USAGE, Reply, RunShell, Usage
from app.selftest.models.server import JsonResponse, RecordedRequest, Response, SseResponse


class OpenAIChat:
    """Aider's wire. Aider has no shell tool: a RunShell is a ```bash block in the reply,
    which Aider offers to run (only in an editblock format such as ``--edit-format diff``).
    Its result comes back, if the user lets it, as a plain user message."""

    shell_tool = "```bash block"

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def classify(self, request: RecordedRequest) -> str:
        if request.method != "POST":
            return "probe"
        if not request.path.endswith("/chat/completions"):
            return "other"
        body = request.body if isinstance(request.body, dict) else {}
        # Aider's own side calls (commit messages, summaries) go out without streaming.
        return "turn" if body.get("stream") else "summary"

    def answer_turn(self, request: RecordedRequest, step: RunShell | Reply) -> Response:
        text = step.text
        if isinstance(step, RunShell):
            text += f"\n\n```bash\n{step.command}\n```\n"
        return self._answer(request, text, step.usage)

    def answer_side(self, request: RecordedRequest) -> Response:
        if request.kind == "probe":
            return JsonResponse(200, {"object": "list", "data": []})
        if request.kind == "other":
            return self.error(404, f"no such endpoint: {request.path}")
        request.usage = SIDE_USAGE
        return self._answer(request, "chore: scripted change", SIDE_USAGE)

    def error(self, status: int, message: str) -> JsonResponse:
        return JsonResponse(
            status, {"error": {"message": message, "type": "server_error", "code": None}}
        )

    def tool_results(self, request: RecordedRequest) -> list[str]:
        """Command output Aider added to the chat (a user message it writes itself)."""
        body = request.body if isinstance(request.body, dict) else {}
        return [
            str(message.get("content"))
            for message in body.get("messages") or []
            if message.get("role") == "user" and "Output from" in str(message.get("content"))
        ]

    def _answer(self, request: RecordedRequest, text: str, usage: Usage) -> Response:
        body = request.body if isinstance(request.body, dict) else {}
        common = {
            "id": f"chatcmpl-fake{next(self._ids):04d}",
            "created": int(time.time()),
            "model": body.get("model") or "fake-model",
        }
        usage_body = {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        }
        if not body.get("stream"):
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            return JsonResponse(
                200,
                {**common, "object": "chat.completion", "choices": [choice], "usage": usage_body},
            )
        chunk = {**common, "object": "chat.completion.chunk"}
        events: list[tuple[str | None, Any]] = [
            (None, {**chunk, "choices": [_delta({"role": "assistant", "content": text}, None)]}),
            (None, {**chunk, "choices": [_delta({}, "stop")]}),
            (None, {**chunk, "choices": [], "usage": usage_body}),
            (None, "[DONE]"),
        ]
        return SseResponse(events)


def _delta(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish_reason}
