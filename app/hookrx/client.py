"""The hook command an agent runs: a tiny client of the supervisor's hook receiver.

Run as ``python -I -S .../app/hookrx/client.py KIND [ARG...]``: the standard library
only, no site packages and none of orchestrate, so a hook costs a Python start and
not ~60 ms of imports. It passes the hook's input (stdin, or a JSON last argument
for Codex's ``notify``) with the few ``ORCHESTRATE_*`` variables the receiver needs
to the receiver's unix socket, and prints what the receiver answers: a decision,
or nothing. With no receiver (no socket, refused, too slow) it runs today's full
path, `orchestrate hook KIND`, with the same input, so nothing is lost.

It always exits 0 and writes nothing but a decision (Claude adds a hook's stdout to
the model's context). The receiver imports this module for the protocol's names,
so they exist once.

The protocol: one JSON request, then the client shuts its sending side; the
receiver answers newline-ended JSON lines: ``{"wait": SECONDS}`` first when the
hook waits for the control room's decision, then ``{"output": TEXT | null}``, or
``{"refused": REASON}`` (logged by the receiver; the client then says nothing).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys

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
)
"""The variables `handle` reads (app/settings.py names them; a test holds them equal)."""
HOME, JOB = FORWARDED_ENV[0], FORWARDED_ENV[1]
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
    """The private directory of the short socket paths (this user's, mode 0700)."""
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


def read_input(args: list[str]) -> str:
    """The hook's stdin, unless the payload is the last argument or stdin is a terminal."""
    if args and args[-1].lstrip().startswith("{"):
        return ""
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.buffer.read().decode("utf-8", "surrogateescape")


def ask_receiver(kind: str, args: list[str], stdin_text: str) -> str | None:
    """The receiver's answer (the text to print, "" for nothing); None when there is
    no receiver to ask or it did not answer in time (the caller falls back)."""
    state_dir = os.environ.get(HOME, "")
    if not state_dir:
        return None
    path = socket_path(state_dir)
    if not trusted(path, stat.S_IFSOCK):
        return None
    env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    request = json.dumps({"kind": kind, "args": args, "stdin": stdin_text, "env": env})
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    waited = False
    try:
        conn.settimeout(CONNECT_TIMEOUT_SEC)
        conn.connect(path)
        conn.settimeout(REPLY_TIMEOUT_SEC)
        conn.sendall(request.encode("ascii"))
        conn.shutdown(socket.SHUT_WR)
        reader = conn.makefile("rb")
        reply = json.loads(reader.readline())
        if isinstance(reply, dict) and "wait" in reply:
            waited = True  # recorded: asking again would only wait twice as long
            conn.settimeout(float(reply["wait"]) + DECISION_SLACK_SEC)
            reply = json.loads(reader.readline())
    except (OSError, ValueError, TypeError):
        return "" if waited else None
    finally:
        conn.close()
    if not isinstance(reply, dict):
        return None
    if "refused" in reply:
        return ""
    output = reply.get("output")
    return output if isinstance(output, str) else ("" if "output" in reply else None)


def fallback_command(kind: str, args: list[str]) -> list[str]:
    """Today's full path: this install's `orchestrate hook KIND ARG...`."""
    script = os.path.join(os.path.dirname(sys.executable), "orchestrate")
    if os.access(script, os.X_OK):
        return [script, "hook", kind, *args]
    return [sys.executable, "-m", "app", "hook", kind, *args]


def run_fallback(kind: str, args: list[str], stdin_text: str) -> str:
    """What `orchestrate hook` prints, given the same input (it never fails itself)."""
    import subprocess

    done = subprocess.run(
        fallback_command(kind, args),
        input=stdin_text.encode("utf-8", "surrogateescape"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return done.stdout.decode("utf-8", "replace")


def main(argv: list[str]) -> int:
    """Ask the receiver, else run the full path; print only a decision; exit 0."""
    try:
        kind, args = (argv[0] if argv else ""), argv[1:]
        stdin_text = read_input(args)
        if not os.environ.get(HOME) or not os.environ.get(JOB):
            return 0  # no job to record for: the full path would do nothing either
        output = ask_receiver(kind, args, stdin_text)
        if output is None:
            output = run_fallback(kind, args, stdin_text).rstrip("\n")
        if output:
            sys.stdout.write(output + "\n")
            sys.stdout.flush()
    except BaseException:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
