"""A JSON-RPC client for `codex app-server` on a private unix socket.

Codex 0.169.0 serves its app-server protocol over a WebSocket: `--listen
unix://PATH` binds PATH (mode 0600, in a private directory; a long PATH becomes a
symlink to a socket under /tmp/codex-daemon-<uid>/) and expects the usual HTTP
upgrade, then one JSON-RPC message per text frame, without the "jsonrpc" field.
The TUI joins the same server with `--remote unix://PATH`; every client that has
`thread/resume`d a thread gets its server requests (approvals), and the first
answer wins. wsproto does the WebSocket framing; this module only moves messages.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections import deque
from pathlib import Path
from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)

CONNECT_POLL_SEC = 0.1
READ_BYTES = 65536


class AppServerUnavailable(OSError):
    """The app-server cannot be reached (not started, gone, or refused us)."""


class AppServerClient:
    """One connection: ``request``/``notify``/``respond`` out, ``receive`` in."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.inbox: deque[dict[str, Any]] = deque()
        self._parts: list[str] = []
        self._next_id = 0
        self.closed = False

    @classmethod
    def connect(cls, path: Path, deadline: float) -> AppServerClient:
        """Connect once the server listens (it may still be starting) and upgrade."""
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                # the real socket, when Codex left a symlink to a shorter path
                sock.connect(os.path.realpath(path))
                break
            except OSError as exc:
                sock.close()
                if time.monotonic() >= deadline:
                    raise AppServerUnavailable(f"no app-server at {path}: {exc}") from None
                time.sleep(CONNECT_POLL_SEC)
        client = cls(sock)
        client._upgrade(deadline)
        return client

    def _upgrade(self, deadline: float) -> None:
        self.sock.sendall(self.ws.send(Request(host="localhost", target="/")))
        while True:
            self._read(max(0.05, deadline - time.monotonic()))
            for event in self.ws.events():
                if isinstance(event, AcceptConnection):
                    return
                if isinstance(event, RejectConnection):
                    raise AppServerUnavailable(f"app-server refused us ({event.status_code})")
            if time.monotonic() >= deadline:
                raise AppServerUnavailable("app-server did not answer the upgrade")

    def _read(self, timeout: float) -> bool:
        """Feed what arrives within ``timeout`` to the framing; False on timeout."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(READ_BYTES)
        except TimeoutError:
            return False
        except OSError as exc:
            self.closed = True
            raise AppServerUnavailable(f"app-server connection lost: {exc}") from None
        if not data:
            self.closed = True
            raise AppServerUnavailable("app-server closed the connection")
        self.ws.receive_data(data)
        return True

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(self.ws.send(TextMessage(data=json.dumps(message))))

    def request(self, method: str, params: dict[str, Any]) -> int:
        """Send a request; its id (the answer comes back through ``receive``)."""
        self._next_id += 1
        self.send({"id": self._next_id, "method": method, "params": params})
        return self._next_id

    def notify(self, method: str) -> None:
        self.send({"method": method})

    def respond(self, request_id: Any, result: dict[str, Any]) -> None:
        """Answer a request the server sent (an approval)."""
        self.send({"id": request_id, "result": result})

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when none came within ``timeout``."""
        deadline = time.monotonic() + timeout
        while not self.inbox:
            self._drain()
            if self.inbox:
                break
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                return None
        return self.inbox.popleft()

    def _drain(self) -> None:
        for event in self.ws.events():
            if isinstance(event, TextMessage):
                self._parts.append(event.data)
                if event.message_finished:
                    text, self._parts = "".join(self._parts), []
                    try:
                        message = json.loads(text)
                    except ValueError:
                        continue  # not ours to guess at
                    if isinstance(message, dict):
                        self.inbox.append(message)
            elif isinstance(event, Ping):
                self.sock.sendall(self.ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                self.closed = True
                raise AppServerUnavailable("app-server closed the connection")

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()
