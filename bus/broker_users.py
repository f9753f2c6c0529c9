"""Broker accounts: who may connect, and the password file Mosquitto checks them against.

The password file is written from Python in Mosquitto's own PBKDF2-SHA512
format (``NAME:$7$ITERATIONS$SALT$HASH``, base64), so no password ever sits
on a command line (``mosquitto_passwd -b`` puts it on the process list).

>>> line = password_line("w1", "secret", salt=bytes(12), iterations=101)
>>> line.split("$")[:3]
['w1:', '7', '101']
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bus.errors import BrokerSetupError, InvalidTopic
from bus.fleet_topics import check_node_name

# Mosquitto 2.0's mosquitto_passwd uses 101; the broker reads the count from each
# line, and 1000 costs it about 0.5 ms per login here.
PBKDF2_ITERATIONS = 1000
SALT_BYTES = 12  # what mosquitto_passwd uses
GENERATED_CONTROL_USER = "orchestrate-control"


@dataclass(frozen=True)
class BrokerUser:
    """A broker account: the control room reads every job's events; a worker
    writes only its own job topics (``jobs`` empty: the topic named after it); a node
    (one host's supervisor, ``bus.fleet_topics``) only the topics under its own name."""

    name: str
    password: str = field(repr=False)
    role: str = "worker"  # "worker" | "control" | "node"
    jobs: tuple[str, ...] = ()

    @classmethod
    def parse(cls, spec: str, role: str = "worker") -> BrokerUser:
        """``NAME:PASS`` or, for a worker, ``NAME:PASS:JOB[,JOB...]``; PASS ``@FILE``
        reads the password from FILE's first line (a command line is visible to every
        local user in the process list while it runs, and stays in shell history)."""
        parts = spec.split(":", 2)
        if len(parts) < 2 or not parts[0] or not parts[1]:
            raise BrokerSetupError(f"user must be NAME:PASS[:JOB,...], got {spec.split(':')[0]!r}")
        name, password = parts[0], parts[1]
        check_user_name(name)
        if role == "node":
            if len(parts) == 3:
                raise BrokerSetupError(f"node user must be NAME:PASS, got {name!r} with jobs")
            try:
                check_node_name(name)
            except InvalidTopic as exc:
                raise BrokerSetupError(str(exc)) from None
        if password.startswith("@"):
            password = read_password_file(Path(password[1:]), name)
        jobs = tuple(j for j in (parts[2].split(",") if len(parts) == 3 else ()) if j)
        for job in jobs:
            if set(job) & set("/#+") or any(ch.isspace() or not ch.isprintable() for ch in job):
                raise BrokerSetupError(
                    f"job id may not contain '/', '#', '+', spaces or control characters: {job!r}"
                )
        return cls(name=name, password=password, role=role, jobs=jobs)

    @classmethod
    def generated_control(cls, password: str | None = None) -> BrokerUser:
        """The control-room account ``broker config`` makes when none is given."""
        return cls(GENERATED_CONTROL_USER, password or secrets.token_urlsafe(24), "control")


def read_password_file(path: Path, name: str) -> str:
    """The password for ``name`` on the first line of ``path`` (without its newline)."""
    try:
        with path.open(encoding="utf-8") as handle:
            password = handle.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise BrokerSetupError(
            f"cannot read the password of {name!r} from {path}: {reason}"
        ) from None
    if not password:
        raise BrokerSetupError(f"the password file of {name!r}, {path}, starts with an empty line")
    return password


def check_user_name(name: str) -> str:
    """``name`` if it can be a line of the password file and an ACL ``user`` line."""
    if not name or any(ch.isspace() or ord(ch) < 32 for ch in name) or set(name) & set("#+:"):
        raise BrokerSetupError(
            f"user name may not be empty or contain spaces, control characters, "
            f"':', '#' or '+': {name!r}"
        )
    return name


def check_users(users: Sequence[BrokerUser]) -> Sequence[BrokerUser]:
    """``users`` if no name appears twice (the password file would keep only the
    last password, and the ACL would grant the name both roles' topics)."""
    seen: set[str] = set()
    for user in users:
        if user.name in seen:
            raise BrokerSetupError(f"broker user {user.name!r} is given twice")
        seen.add(user.name)
    return users


def password_line(
    name: str, password: str, *, salt: bytes | None = None, iterations: int = PBKDF2_ITERATIONS
) -> str:
    """One line of a Mosquitto 2 password file for ``name`` (no newline)."""
    salt = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, iterations)
    encoded = (base64.b64encode(part).decode("ascii") for part in (salt, digest))
    return f"{check_user_name(name)}:$7${iterations}${'$'.join(encoded)}"


def write_password_file(path: Path, users: Sequence[BrokerUser]) -> None:
    """Write ``path`` (mode 0600 from its creation, replaced atomically)."""
    text = "".join(password_line(user.name, user.password) + "\n" for user in users)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)
