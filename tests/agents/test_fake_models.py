"""The fake model servers speak each wire API as the real CLIs expect (checked here over HTTP,
without the CLIs: the real CLIs are driven in test_cli_harness.py)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from app.selftest.models.anthropic import AnthropicMessages
from app.selftest.models.gemini import GeminiApi
from app.selftest.models.openai_chat import OpenAIChat
from app.selftest.models.openai_responses import OpenAIResponses
from app.selftest.models.script import Fail, Reply, RunShell, Script, Usage, fill_schema
from app.selftest.models.server import FakeModelServer
from tests.plugin.models import ServeModel


def post(server: FakeModelServer, path: str, body: Any) -> tuple[int, str]:
    request = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def sse(text: str) -> list[tuple[str | None, Any]]:
    """(event, data) pairs of a server-sent event stream; data decoded from JSON if it is."""
    events: list[tuple[str | None, Any]] = []
    for block in text.strip().split("\n\n"):
        event = None
        data = ""
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = line.removeprefix("data: ")
        events.append((event, data if data == "[DONE]" else json.loads(data)))
    return events


def test_anthropic_asks_for_bash_then_sees_the_tool_result(serve_model: ServeModel) -> None:
    usage = Usage(input_tokens=11, output_tokens=7, cached_input_tokens=5)
    server = serve_model(
        AnthropicMessages(), Script([RunShell("touch done.txt", usage=usage), Reply("Done.")])
    )
    head = urllib.request.Request(server.base_url + "/", method="HEAD")
    with urllib.request.urlopen(head, timeout=10) as response:
        assert response.status == 200
    tools = [{"name": "Bash", "input_schema": {}}]
    first: dict[str, Any] = {
        "stream": True,
        "tools": tools,
        "messages": [{"role": "user", "content": "go"}],
    }

    status, body = post(server, "/v1/messages?beta=true", first)

    assert status == 200
    events = sse(body)
    assert events[0][0] == "message_start"
    assert events[0][1]["message"]["usage"]["cache_read_input_tokens"] == 5
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    tool_use = starts[1]
    assert tool_use["type"] == "tool_use" and tool_use["name"] == "Bash"
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert json.loads(deltas[1]["partial_json"])["command"] == "touch done.txt"
    message_delta = next(data for name, data in events if name == "message_delta")
    assert message_delta["delta"]["stop_reason"] == "tool_use"
    assert message_delta["usage"]["output_tokens"] == 7
    assert server.tool_results() == []

    result = {"type": "tool_result", "tool_use_id": tool_use["id"], "content": "ok"}
    second = {**first, "messages": [*first["messages"], {"role": "user", "content": [result]}]}
    status, body = post(server, "/v1/messages", second)

    assert status == 200
    texts = [d["delta"].get("text") for n, d in sse(body) if n == "content_block_delta"]
    assert texts == ["Done."]
    assert server.tool_results() == ["ok"]
    assert [request.kind for request in server.requests] == ["probe", "turn", "turn"]


def test_anthropic_title_request_gets_a_json_title_and_plays_no_step(
    serve_model: ServeModel,
) -> None:
    server = serve_model(AnthropicMessages(), Script([Reply("the turn")]))
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    body = {"messages": [], "output_config": {"format": {"type": "json_schema", "schema": schema}}}

    status, text = post(server, "/v1/messages", body)

    assert status == 200
    answer = json.loads(json.loads(text)["content"][0]["text"])
    assert answer == {"title": "Fake session"}
    assert server.script.played == []


def test_a_failed_step_answers_with_the_apis_error_shape(serve_model: ServeModel) -> None:
    server = serve_model(AnthropicMessages(), Script([Fail(500)], after=Reply("later")))
    request = {"stream": True, "tools": [{"name": "Bash"}], "messages": []}

    status, body = post(server, "/v1/messages", request)
    assert status == 500
    assert json.loads(body)["error"]["type"] == "api_error"

    status, _ = post(server, "/v1/messages", request)
    assert status == 200


def test_responses_ask_for_an_escalated_exec_command(serve_model: ServeModel) -> None:
    server = serve_model(OpenAIResponses(), Script.shell_then_reply("touch done.txt"))
    request: dict[str, Any] = {"stream": True, "tools": [{"name": "exec_command"}], "input": []}

    status, body = post(server, "/v1/responses", request)

    assert status == 200
    events = sse(body)
    calls = [
        data["item"]
        for name, data in events
        if name == "response.output_item.done" and data["item"]["type"] == "function_call"
    ]
    arguments = json.loads(calls[0]["arguments"])
    assert calls[0]["name"] == "exec_command"
    assert arguments["cmd"] == "touch done.txt"
    assert arguments["sandbox_permissions"] == "require_escalated"
    completed = events[-1][1]["response"]
    assert completed["usage"]["input_tokens_details"]["cached_tokens"] == 300

    output = {"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "done"}
    post(server, "/v1/responses", {**request, "input": [output]})
    assert server.tool_results() == ["done"]


def test_chat_completions_suggest_a_bash_block_and_report_usage(serve_model: ServeModel) -> None:
    server = serve_model(OpenAIChat(), Script.shell_then_reply("touch done.txt"))

    status, body = post(server, "/v1/chat/completions", {"stream": True, "messages": []})

    assert status == 200
    events = sse(body)
    assert events[-1] == (None, "[DONE]")
    text = events[0][1]["choices"][0]["delta"]["content"]
    assert "```bash\ntouch done.txt\n```" in text
    assert events[-2][1]["usage"]["prompt_tokens"] == 1200
    status, body = post(server, "/v1/chat/completions", {"messages": []})  # a side call
    assert json.loads(body)["object"] == "chat.completion"
    assert len(server.script.played) == 1


def test_gemini_router_gets_a_score_and_the_turn_a_shell_call(serve_model: ServeModel) -> None:
    server = serve_model(GeminiApi(), Script.shell_then_reply("touch done.txt"))
    schema = {
        "type": "OBJECT",
        "properties": {
            "complexity_reasoning": {"type": "STRING"},
            "complexity_score": {"type": "INTEGER"},
        },
    }
    router = {"contents": [], "generationConfig": {"responseJsonSchema": schema}}

    status, body = post(server, "/v1beta/models/flash-lite:generateContent", router)

    assert status == 200
    answer = json.loads(json.loads(body)["candidates"][0]["content"]["parts"][0]["text"])
    assert answer["complexity_score"] == 10
    turn = {"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": [{}]}
    status, body = post(server, "/v1beta/models/pro:streamGenerateContent?alt=sse", turn)
    parts = [data["candidates"][0]["content"]["parts"][0] for _, data in sse(body)]
    assert parts[1]["functionCall"] == {
        "name": "run_shell_command",
        "args": {"command": "touch done.txt", "description": "Run the command the task needs"},
    }
    assert [request.kind for request in server.requests] == ["router", "turn"]


def test_a_gated_step_answers_only_once_released(serve_model: ServeModel) -> None:
    gate = threading.Event()
    server = serve_model(OpenAIChat(), Script([Reply("held", gate=gate)]))
    answers: list[int] = []
    caller = threading.Thread(
        target=lambda: answers.append(post(server, "/v1/chat/completions", {"stream": True})[0])
    )
    caller.start()
    caller.join(timeout=0.3)
    assert caller.is_alive() and answers == []

    gate.set()
    caller.join(timeout=10)
    assert answers == [200]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object", "properties": {"title": {"type": "string"}}}, {"title": "T"}),
        ({"type": "object", "properties": {"n": {"enum": ["user", "model"]}}}, {"n": "user"}),
        ({"type": "object", "properties": {"s": {"type": "integer", "minimum": 1}}}, {"s": 1}),
    ],
)
def test_fill_schema_answers_any_structured_side_request(schema: Any, expected: Any) -> None:
    assert fill_schema(schema, {"title": "T"}) == expected
