"""The HTTP side of a fake model: a loopback server in a thread that records every request."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from app.selftest.models.script import Fail, Reply, RunShell, Script, Step, Usage

GATE_TIMEOUT_S = 60.0
"""How long a gated step waits for the test to release it before answering anyway."""


@dataclass
class RecordedRequest:
    """One request as the agent sent it, and how the API classified it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    kind: str = "other"
    """turn (consumed a script step), title, router, summary, probe or other."""
    step: Step | None = None
    usage: Usage | None = None
    """What the response reported, if it reported usage."""


@dataclass
class JsonResponse:
    status: int
    body: Any


@dataclass
class SseResponse:
    """Server-sent events: (event name or None, JSON data or a raw string) in order."""

    events: list[tuple[str | None, Any]] = field(default_factory=list)


Response = JsonResponse | SseResponse


class WireApi(Protocol):
    """One vendor's wire format: what a request is, and how a scripted step is spoken."""

    def classify(self, request: RecordedRequest) -> str:
        """'turn' for a request that plays the next script step, else a side-request kind."""

    def answer_turn(self, request: RecordedRequest, step: RunShell | Reply) -> Response:
        """The response to a turn request (never for a Fail: the server answers those)."""

    def answer_side(self, request: RecordedRequest) -> Response:
        """The response to a request that is not a turn (titles, probes, routing, ...)."""

    def error(self, status: int, message: str) -> JsonResponse:
        """An error body in the API's own shape."""

    def tool_results(self, request: RecordedRequest) -> list[str]:
        """The outputs of tool calls this request carries back to the model."""


class FakeModelServer:
    """A scripted model on 127.0.0.1:<free port>, served from a thread.

    ``with FakeModelServer(AnthropicMessages(), script) as server:`` then point the
    agent at ``server.base_url``. Every request is kept in ``server.requests``.
    """

    def __init__(self, api: WireApi, script: Script) -> None:
        self.api = api
        self.script = script
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # shutdown() waits up to one interval
            name="fake-model",
            daemon=True,
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_of(self, kind: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.kind == kind]

    def tool_results(self) -> list[str]:
        """Every tool output the agent sent back, over all turn requests."""
        return [
            output
            for request in self.requests_of("turn")
            for output in self.api.tool_results(request)
        ]

    def handle(self, request: RecordedRequest) -> Response:
        """Classify, record, and answer one request (called from a server thread)."""
        request.kind = self.api.classify(request)
        with self._lock:
            self._requests.append(request)
        if request.kind != "turn":
            return self.api.answer_side(request)
        step = self.script.next_step()
        request.step = step
        if step.gate is not None:
            step.gate.wait(GATE_TIMEOUT_S)
        if isinstance(step, Fail):
            return self.api.error(step.status, step.message)
        request.usage = step.usage
        return self.api.answer_turn(request, step)


def _handler_for(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
            pass

        def do_HEAD(self) -> None:
            self._record_and_answer(with_body=False)

        def do_GET(self) -> None:
            self._record_and_answer()

        def do_POST(self) -> None:
            self._record_and_answer()

        def _record_and_answer(self, with_body: bool = True) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            url = urlsplit(self.path)
            request = RecordedRequest(
                method=self.command,
                path=url.path,
                query=parse_qs(url.query),
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
            )
            response = server.handle(request)
            if isinstance(response, SseResponse):
                self._send_sse(response)
            else:
                self._send_json(response, with_body)

        def _send_json(self, response: JsonResponse, with_body: bool) -> None:
            payload = json.dumps(response.body).encode()
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if with_body:
                self.wfile.write(payload)

        def _send_sse(self, response: SseResponse) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for event, data in response.events:
                text = data if isinstance(data, str) else json.dumps(data)
                chunk = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
                try:
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the agent hung up (interrupted turn): nothing to finish
                time.sleep(0.002)  # arrive as a stream, not one read

    return Handler
