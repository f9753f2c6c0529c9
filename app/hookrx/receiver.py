"""The resident hook receiver: the supervisor records agents' hooks without a new
Python process per hook.

Hooks run the tiny client (app/hookrx/client.py), which sends the hook's input here
over ``<state>/hook.sock`` (or its short path, ``client.socket_path``). Each request
goes through the one hook path of app/agents/hook.py: ``hear`` on the connection's
thread, ``record`` on the recorder thread, which takes every request waiting and
records them in ONE transaction (twenty agents' hooks at once are one COMMIT, not
twenty fights for the write lock), then ``settle`` back on the connection's thread
for a hook that waits for a decision. A request that is not what the client sends
(too big, not JSON, another state dir) is refused with a line in the receiver's
report; nothing a client sends can stop the receiver.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import socketserver
import stat
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from app.agents import hook
from app.hookrx import client
from app.settings import APPROVAL_WAIT_ENV, APPROVALS_ENV, HOME_ENV, JOB_ENV, POLICY_ENV
from registry.jobs import Registry

READ_TIMEOUT_SEC = 5.0
"""A client sends its whole request at once; one that dawdles is dropped."""
BATCH_MAX = 64
KNOWN_ENV = (HOME_ENV, JOB_ENV, APPROVALS_ENV, APPROVAL_WAIT_ENV, POLICY_ENV)


class Refused(ValueError):
    """A request the receiver will not handle (its reason goes to the report)."""


@dataclass
class Pending:
    """A heard hook waiting for the recorder thread."""

    heard: hook.Heard
    env: Mapping[str, str]
    done: Future[hook.Asked | None]


class Recorder:
    """The recorder thread: records what is queued, all that waits in one transaction."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.queue: queue.Queue[Pending | None] = queue.Queue()
        self.batches: list[int] = []
        """The size of each batch recorded (the bench and the tests read it)."""
        self.thread = threading.Thread(target=self.run, name="hook-recorder", daemon=True)
        self.stopped = threading.Event()

    def submit(self, heard: hook.Heard, env: Mapping[str, str]) -> Future[hook.Asked | None]:
        """Queue ``heard``; its future holds the question to settle (or the error)."""
        done: Future[hook.Asked | None] = Future()
        if self.stopped.is_set():  # the receiver is closing: the client falls back
            raise OSError("the hook receiver is closing")
        self.queue.put(Pending(heard, env, done))
        return done

    def run(self) -> None:
        try:
            while True:
                first = self.queue.get()
                if first is None:
                    return
                batch = [first]
                with contextlib.suppress(queue.Empty):
                    while len(batch) < BATCH_MAX:
                        item = self.queue.get_nowait()
                        if item is None:
                            self.queue.put(None)  # stop after this batch
                            break
                        batch.append(item)
                self.record(batch)
        finally:
            self.registry.db.close()
            self.stopped.set()
            with contextlib.suppress(queue.Empty):
                while True:  # queued as it stopped: their clients fall back
                    late = self.queue.get_nowait()
                    if late is not None:
                        late.done.set_exception(OSError("the hook receiver closed"))

    def record(self, batch: list[Pending]) -> None:
        """One transaction for the batch; if any of it fails, each on its own, so one
        bad hook (a job that is gone) costs the others nothing."""
        self.batches.append(len(batch))
        try:
            with self.registry.store.write():
                results = [hook.record(self.registry, p.heard, p.env) for p in batch]
        except Exception:
            for pending in batch:
                try:
                    pending.done.set_result(hook.record(self.registry, pending.heard, pending.env))
                except Exception as exc:
                    pending.done.set_exception(exc)
            return
        for pending, result in zip(batch, results, strict=True):
            pending.done.set_result(result)

    def stop(self) -> None:
        self.stopped.set()
        self.queue.put(None)
        self.thread.join(10)


class HookReceiver:
    """The listening socket and its threads (app/hookrx/slot.py decides which process
    runs one: only the holder of the state dir's receiver lock)."""

    def __init__(
        self, state_dir: Path, *, report: Callable[[str], None] = lambda line: None
    ) -> None:
        self.state_dir = state_dir.resolve()
        self.report = report
        self.path = Path(client.socket_path(str(self.state_dir)))
        self.registry = Registry.open(self.state_dir, busy_timeout_ms=hook.BUSY_TIMEOUT_MS)
        self.recorder = Recorder(self.registry)
        self.server: socketserver.ThreadingUnixStreamServer | None = None

    def start(self) -> bool:
        """Listen; False (said in the report) where the socket's directory is not private."""
        directory = self.path.parent
        if directory != self.state_dir:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not safe_dir(directory):
            self.report(f"hook receiver off: {directory} is not this user's private directory")
            return False
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a dead receiver's: the receiver lock's holder owns it
        receiver = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                receiver.serve(self.request)

        server = socketserver.ThreadingUnixStreamServer(str(self.path), Handler, False)
        server.daemon_threads = True
        server.request_queue_size = 128
        old = os.umask(0o177)
        try:
            server.server_bind()
        finally:
            os.umask(old)
        server.server_activate()
        self.server = server
        self.recorder.thread.start()
        threading.Thread(target=server.serve_forever, name="hook-receiver", daemon=True).start()
        if directory != self.state_dir:
            self.report(f"hook receiver at {self.path} (the state dir's path is too long)")
        return True

    def close(self) -> None:
        """Stop listening, remove the socket, finish the queued batch."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.recorder.stop()
        self.registry.db.close()

    # -- one connection ------------------------------------------------------------
    def serve(self, conn: socket.socket) -> None:
        """Answer one client; whatever it sent, the receiver goes on."""
        env: Mapping[str, str] = {}
        kind = ""
        try:
            conn.settimeout(READ_TIMEOUT_SEC)
            kind, args, env, stdin_text = self.parse(read_request(conn))
            output = self.handle(conn, kind, args, stdin_text, env)
            conn.sendall(client.DONE + b"\n" + (output or "").encode("utf-8", "replace"))
        except Refused as refusal:
            self.report(f"hook request refused: {refusal}")
            with contextlib.suppress(OSError):
                conn.sendall(client.REFUSED + f" {refusal}\n".encode())
        except OSError:
            pass  # the client went away: nothing to answer
        except Exception:
            hook.log_failure(env, kind)
            with contextlib.suppress(OSError):
                conn.sendall(client.DONE + b"\n")
        finally:
            self.registry.db.close()  # this thread's connection, if it opened one

    def parse(self, raw: bytes) -> tuple[str, list[str], dict[str, str], str]:
        """The request's parts, checked: it names this state dir."""
        kind, args, env, stdin_text = decode_request(raw)
        known = {name: value for name, value in env.items() if name in KNOWN_ENV}
        home = known.get(HOME_ENV, "")
        if not home or Path(home).resolve() != self.state_dir:
            raise Refused("the request is for another state dir")
        return kind, args, known, stdin_text

    def handle(
        self, conn: socket.socket, kind: str, args: list[str], stdin_text: str, env: dict[str, str]
    ) -> str | None:
        """The hook path of app/agents/hook.py, its record step batched."""
        payload = hook.read_payload(args, stdin_text)
        heard = hook.hear(kind, payload, env)
        if heard is None:
            return None
        asked = self.recorder.submit(heard, env).result()
        if asked is None:
            return None
        conn.sendall(client.WAIT + f" {asked.wait_sec}\n".encode())
        return hook.settle(self.registry, asked)


def read_request(conn: socket.socket) -> bytes:
    """All the client sent (it shuts its side when done), refused past the limit."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > client.MAX_REQUEST_BYTES:
            raise Refused(f"request over {client.MAX_REQUEST_BYTES} bytes")
        chunks.append(chunk)


def decode_request(raw: bytes) -> tuple[str, list[str], dict[str, str], str]:
    """The kind, arguments, variables and stdin of a request framed by
    ``client.encode_request``; Refused when it is not one. Bytes that are not UTF-8
    are kept as surrogates, which the payload's JSON reader refuses as it always has."""
    head, newline, body = raw.partition(b"\n")
    words = head.split(b" ")
    if not newline or len(words) != 3 or words[0] != client.MAGIC:
        raise Refused("not a hook request")
    if not (words[1].isdigit() and words[2].isdigit()) or len(words[1] + words[2]) > 8:
        raise Refused("bad field counts")
    n_args, n_env = int(words[1]), int(words[2])
    fields = body.split(b"\0", 1 + n_args + n_env)
    if len(fields) != 2 + n_args + n_env:
        raise Refused("a request cut short")
    text = [field.decode("utf-8", "surrogateescape") for field in fields]
    env: dict[str, str] = {}
    for entry in text[1 + n_args : -1]:
        name, equals, value = entry.partition("=")
        if not equals:
            raise Refused("a variable without a value")
        env[name] = value
    return text[0], text[1 : 1 + n_args], env, text[-1]


def safe_dir(directory: Path) -> bool:
    """This user's directory that no one else may write to (where the socket can live)."""
    try:
        info = directory.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022
