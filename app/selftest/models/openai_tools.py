"""OpenAI chat completions with function calling (Qwen Code): a turn's shell step is a
streamed ``tool_calls`` delta for the agent's own shell tool, not a fenced block."""

from __future__ import annotations

import json
import time
from typing import Any

from app.selftest.models.openai_chat import OpenAIChat
from app.selftest.models.script import Reply, RunShell
from app.selftest.models.server import RecordedRequest, Response, SseResponse

SUBAGENT = "You are now acting as the managed memory extraction subagent"
"""How Qwen's memory subagent's system prompt starts (off in the offline settings)."""


def _system_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    first = messages[0] if messages and isinstance(messages[0], dict) else {}
    return json.dumps(first.get("content")) if first.get("role") == "system" else ""


class OpenAIChatTools(OpenAIChat):
    """Qwen Code's wire: ``POST /v1/chat/completions`` with ``tools``. A request that
    offers tools and streams plays the next script step; Qwen's side calls (titles,
    summaries, its auto-mode classifier) get a canned answer."""

    shell_tool = "run_shell_command"

    def classify(self, request: RecordedRequest) -> str:
        if request.method != "POST":
            return "probe"
        if not request.path.endswith("/chat/completions"):
            return "other"
        body = request.body if isinstance(request.body, dict) else {}
        if not body.get("tools"):
            return "summary"
        # its auto-mode safety classifier offers one tool and does not stream
        if not body.get("stream"):
            return "classifier"
        # a background subagent (memory extraction) streams with tools of its own
        return "subagent" if SUBAGENT in _system_text(body) else "turn"

    def answer_turn(self, request: RecordedRequest, step: RunShell | Reply) -> Response:
        if not isinstance(step, RunShell):
            return super().answer_turn(request, step)
        body = request.body if isinstance(request.body, dict) else {}
        serial = next(self._ids)
        common = {
            "id": f"chatcmpl-fake{serial:04d}",
            "created": int(time.time()),
            "model": body.get("model") or "fake-model",
            "object": "chat.completion.chunk",
        }
        arguments = json.dumps({"command": step.command, "description": step.description})
        call = {
            "index": 0,
            "id": f"call_fake{serial:04d}",
            "type": "function",
            "function": {"name": self.shell_tool, "arguments": arguments},
        }
        usage = {
            "prompt_tokens": step.usage.input_tokens,
            "completion_tokens": step.usage.output_tokens,
            "total_tokens": step.usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": step.usage.cached_input_tokens},
        }
        events: list[tuple[str | None, Any]] = [
            (None, {**common, "choices": [_delta({"role": "assistant", "content": step.text})]}),
            (None, {**common, "choices": [_delta({"tool_calls": [call]})]}),
            (None, {**common, "choices": [_delta({}, "tool_calls")]}),
            (None, {**common, "choices": [], "usage": usage}),
            (None, "[DONE]"),
        ]
        return SseResponse(events)

    def tool_results(self, request: RecordedRequest) -> list[str]:
        """The ``role: tool`` messages of the request: each call's output, as Qwen sent it."""
        body = request.body if isinstance(request.body, dict) else {}
        return [
            message["content"] if isinstance(message.get("content"), str)
            else json.dumps(message.get("content"))
            for message in body.get("messages") or []
            if isinstance(message, dict) and message.get("role") == "tool"
        ]  # fmt: skip


def _delta(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish_reason}
