"""The hook command an agent runs: a tiny client of the supervisor's hook receiver.

Run as ``python -I -S .../app/hookrx/client.py KIND [ARG...]``: no site packages,
none of orchestrate and almost none of the standard library (``_socket``, and
modules Python has loaded before any script runs), so a hook costs about a bare
interpreter's start rather than ~60 ms of imports: even ``json`` and ``socket``
would cost twice the interpreter's start (their ``re``, ``enum``, ``collections``).
It passes the hook's input (stdin, or a JSON last argument for Codex's ``notify``)
with the few ``ORCHESTRATE_*`` variables the hook reads to the receiver's unix
socket, and prints what the receiver answers: a decision, or nothing. With no
receiver (no socket, refused, too slow) it runs today's full path, `orchestrate
hook KIND`, with the same input, so nothing is lost.

It always exits 0 and writes nothing but a decision (Claude adds a hook's stdout to
the model's context). The receiver imports this module for the protocol's names and
framing, so they exist once.

The protocol (framed by hand, without json, for the reason above):

* request: ``ORX1 <args> <env>\\n``, then the kind, each argument and each
  ``NAME=VALUE`` ended by a NUL (none can hold one: they come from argv and the
  environment), then the hook's stdin, raw, up to the end (the client shuts its
  sending side);
* answer: ``WAIT <seconds>\\n`` first when the hook waits for the control room's
  decision, then ``DONE\\n`` followed by the text to print (often none), or
  ``REFUSED <reason>\\n`` (the receiver reports it; the client prints nothing).
"""

from __future__ import annotations

import _socket
import os
import stat
import sys

MAGIC = b"ORX1"
SOCKET_NAME = "hook.sock"
SHORT_SOCKET_DIR = "/tmp"
"""Where the socket goes when ``<state>/hook.sock`` is past a unix socket path's
limit: ``/tmp/orchestrate-<uid>/<hash of the state dir>.sock`` (a private directory)."""
MAX_SOCKET_PATH = 100
"""sun_path holds 108 bytes with its NUL; kept short of it."""
MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""The receiver refuses a bigger request (the hook reads at most 1 MiB of payload)."""
FORWARDED_ENV = (
    "ORCHESTRATE_HOME",
    "ORCHESTRATE_JOB",
    "ORCHESTRATE_APPROVALS",
    "ORCHESTRATE_APPROVAL_WAIT_SEC",
    "ORCHESTRATE_POLICY",
)
"""The variables the hook path reads (app/settings.py names them; a test holds them
equal). Nothing else of the agent's environment leaves it, no token above all."""
HOME, JOB = FORWARDED_ENV[0], FORWARDED_ENV[1]
WAIT, DONE, REFUSED = b"WAIT", b"DONE", b"REFUSED"
CONNECT_TIMEOUT_SEC = 0.5
REPLY_TIMEOUT_SEC = 5.0
"""Bound on the first answer line: the full path's own bound is its 2 s busy timeout."""
DECISION_SLACK_SEC = 5.0
"""Beyond the question's own wait, before the client gives up on a decision."""


def socket_path(state_dir: str) -> str:
    """The receiver's socket for ``state_dir``: in it when the path fits, else in a
    private directory under /tmp named by a hash of the state dir."""
    path = os.path.join(state_dir, SOCKET_NAME)
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    import hashlib

    digest = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:24]
    return os.path.join(short_socket_dir(), digest + ".sock")


def short_socket_dir() -> str:
    """The private directory of the short socket paths (this user's)."""
    return os.path.join(SHORT_SOCKET_DIR, f"orchestrate-{os.getuid()}")


def trusted(path: str, kind: int) -> bool:
    """Whether ``path`` is a ``kind`` (stat.S_IFSOCK, S_IFDIR) of this user's, in a
    directory of this user's that nobody else can write to: a socket another user
    planted could answer decisions."""
    try:
        node, parent = os.lstat(path), os.lstat(os.path.dirname(path))
    except OSError:
        return False
    uid = os.getuid()
    return (
        stat.S_IFMT(node.st_mode) == kind
        and node.st_uid == uid
        and stat.S_ISDIR(parent.st_mode)
        and parent.st_uid == uid
        and not parent.st_mode & 0o022
    )


def encode_request(kind: str, args: list[str], env: dict[str, str], stdin: bytes) -> bytes:
    """One request in the framing above (``decode_request`` of the receiver reads it)."""
    fields = [kind, *args, *(f"{name}={value}" for name, value in env.items())]
    head = b"%s %d %d\n" % (MAGIC, len(args), len(env))
    return head + b"".join(os.fsencode(field) + b"\0" for field in fields) + stdin


def read_input(args: list[str]) -> bytes:
    """The hook's stdin, unless the payload is the last argument or stdin is a terminal."""
    if args and args[-1].lstrip().startswith("{"):
        return b""
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()


def ask_receiver(kind: str, args: list[str], stdin: bytes) -> bytes | None:
    """The receiver's answer (the bytes to print, b"" for nothing); None when there is
    no receiver to ask or it did not answer in time (the caller falls back)."""
    path = socket_path(os.environ[HOME])
    if not trusted(path, stat.S_IFSOCK):
        return None
    env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    waited = False
    try:
        conn.settimeout(CONNECT_TIMEOUT_SEC)
        conn.connect(path)
        conn.settimeout(REPLY_TIMEOUT_SEC)
        conn.sendall(encode_request(kind, args, env, stdin))
        conn.shutdown(_socket.SHUT_WR)
        line, rest = read_line(conn, b"")
        if line.startswith(WAIT + b" "):
            waited = True  # recorded: asking again would only wait twice as long
            conn.settimeout(float(line[len(WAIT) + 1 :]) + DECISION_SLACK_SEC)
            line, rest = read_line(conn, rest)
        if line.startswith(REFUSED):
            return b""
        if line != DONE:
            return b"" if waited else None
        return rest + read_all(conn)
    except (OSError, ValueError):
        return b"" if waited else None
    finally:
        conn.close()


def read_line(conn: _socket.socket, buffer: bytes) -> tuple[bytes, bytes]:
    """The next answer line (without its newline) and what came after it."""
    while b"\n" not in buffer:
        chunk = conn.recv(4096)
        if not chunk:
            raise ValueError("the receiver closed mid-line")
        buffer += chunk
    line, _, rest = buffer.partition(b"\n")
    return line, rest


def read_all(conn: _socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def fallback_command(kind: str, args: list[str]) -> list[str]:
    """Today's full path: this install's `orchestrate hook KIND ARG...`."""
    script = os.path.join(os.path.dirname(sys.executable), "orchestrate")
    if os.access(script, os.X_OK):
        return [script, "hook", kind, *args]
    return [sys.executable, "-m", "app", "hook", kind, *args]


def run_fallback(kind: str, args: list[str], stdin: bytes) -> bytes:
    """What `orchestrate hook` prints, given the same input (it never fails itself)."""
    import subprocess

    done = subprocess.run(
        fallback_command(kind, args),
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return done.stdout


def main(argv: list[str]) -> int:
    """Ask the receiver, else run the full path; print only a decision; exit 0."""
    try:
        kind, args = (argv[0] if argv else ""), argv[1:]
        stdin = read_input(args)
        if not os.environ.get(HOME) or not os.environ.get(JOB):
            return 0  # no job to record for: the full path would do nothing either
        output = ask_receiver(kind, args, stdin)
        if output is None:
            output = run_fallback(kind, args, stdin)
        output = output.rstrip(b"\n")
        if output:
            sys.stdout.buffer.write(output + b"\n")
            sys.stdout.flush()
    except BaseException:  # a hook never fails the agent
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
