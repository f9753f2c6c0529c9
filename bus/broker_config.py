"""A hardened mosquitto.conf, its password file and ACL, written into one directory.

Writes::

    D/mosquitto.conf   D/broker.json (settings, no secrets)   D/passwd   D/acl
    D/control.secret (the generated control user's password)   D/certs/   D/data/

Hardened by default: no anonymous client (``allow_anonymous`` is only for a
loopback listener, and only when asked for), a control-room account generated
when none is given, a message size limit and a bounded queue per client, an
optional mTLS listener, and never ``user root``. It also carries the traps
measured in FIELD-NOTES: persistence with ``autosave_interval 100`` (a kill -9
loses at most that much: PUBACK is not tied to the disk write, so durability
comes from the publisher's outbox, not from here), and a queue limit far above
Mosquitto's default of 1000, which silently drops QoS 1 messages for an
offline persistent subscriber.
"""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from bus.broker_checks import (
    check_bind,
    check_config_path,
    check_port,
    check_topic_prefix,
    is_loopback,
)
from bus.broker_tls import (
    BROKER_USER,
    TlsFiles,
    create_test_ca,
    give_to_broker_user,
    prepare_dir,
)
from bus.broker_users import BrokerUser, check_users, write_password_file
from bus.errors import BrokerSetupError
from bus.fleet_topics import control_acl_lines, node_acl_lines

CONFIG_NAME = "mosquitto.conf"
SETTINGS_NAME = "broker.json"
CONTROL_SECRET_NAME = "control.secret"
AUTOSAVE_INTERVAL_S = 100
DEFAULT_PREFIX = "jobs"
# The largest valid event is 64 KiB (registry.events.MAX_EVENT_BYTES). A packet over
# MAX_PACKET_BYTES closes the connection before the broker buffers it (a 100 MB
# payload took it to 790 MB RSS); MQTT 5 clients are told the limit in CONNACK.
# (message_size_limit is deprecated, and Mosquitto 2.0.11's refusing PUBACK for it
# is a packet paho cannot parse: the client sees a protocol error.)
MAX_PACKET_BYTES = 128 * 1024
# Per client, for an offline persistent session (the control room's ingest): what
# goes past either limit is dropped, which the publishers' outboxes then re-send.
MAX_QUEUED_MESSAGES = 100_000
MAX_QUEUED_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class BrokerSettings:
    """What ``mosquitto.conf`` is generated from (kept in broker.json, no secrets)."""

    port: int = 1883
    bind: str = "127.0.0.1"
    tls: bool = False
    topic_prefix: str = DEFAULT_PREFIX
    authenticated: bool = True  # a password file and an ACL
    allow_anonymous: bool = False  # loopback listeners only
    require_certificate: bool = False  # mTLS: a client certificate from the test CA
    control_user: str | None = None  # the account the control room logs in with
    control_secret: bool = False  # its password is in control.secret (generated)


def read_settings(directory: Path) -> BrokerSettings | None:
    """The settings ``write_config`` left in ``directory``, or None.

    A broker.json from before hardening has no ``allow_anonymous``: its
    anonymous configs were exactly those without users.
    """
    try:
        raw = json.loads((directory / SETTINGS_NAME).read_text())
        known = {f.name for f in fields(BrokerSettings)}
        values = {key: value for key, value in raw.items() if key in known}
        values.setdefault("allow_anonymous", not values.get("authenticated", False))
        return BrokerSettings(**values)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def control_password(directory: Path) -> str | None:
    """The generated control user's password, if ``broker config`` made one here."""
    try:
        return (directory / CONTROL_SECRET_NAME).read_text().strip() or None
    except OSError:
        return None


def _broker_user_can_reach(directory: Path) -> bool:
    """Whether user ``mosquitto`` can traverse every directory above ``directory``
    (a root-owned 0700 state dir above it would lock the dropped broker out);
    ``directory`` itself is handed to that user."""
    entry = pwd.getpwnam(BROKER_USER)
    for parent in directory.parents:
        info = parent.stat()
        if info.st_uid == entry.pw_uid:
            continue
        bit = 0o010 if info.st_gid == entry.pw_gid else 0o001
        if not info.st_mode & bit:
            return False
    return True


def check_runs_unprivileged(directory: Path) -> None:
    """Started as root, Mosquitto drops to user ``mosquitto``; refuse a directory that
    user cannot reach (it would fail to save its persistence file) rather than keep
    the broker root. As any other user it runs as that user."""
    if os.geteuid() != 0:
        return
    try:
        reachable = _broker_user_can_reach(directory)
    except KeyError:
        raise BrokerSetupError(
            f"as root, mosquitto drops to user {BROKER_USER!r}, which does not exist "
            "(install the mosquitto package, or run orchestrate as another user)"
        ) from None
    if not reachable:
        raise BrokerSetupError(
            f"as root, mosquitto runs as user {BROKER_USER!r}, which cannot reach "
            f"{directory} (a parent directory is private): pass --dir somewhere it can "
            "reach, or none for the default (bus/broker_home.py)"
        )


def acl_text(
    users: Iterable[BrokerUser], prefix: str = DEFAULT_PREFIX, anonymous: bool = False
) -> str:
    """The ACL: control users read ``<prefix>/+/events`` and confirm what they
    recorded on ``<prefix>/+/applied``; a worker writes only its jobs' events and
    reads only their confirmations; a node writes and reads only the topics under
    its own name (``bus.fleet_topics``), which control users read and command. With
    anonymous clients (loopback, when allowed) the broker uses no ACL at all.

    ACLs filter at delivery time (a SUBACK "granted" proves nothing), so a
    worker that subscribes elsewhere simply receives nothing.
    """
    lines = ["# written by orchestrate broker config", ""]
    if anonymous:
        lines += ["# not in use: anonymous clients are allowed (loopback only)", ""]
    for user in users:
        lines.append(f"user {user.name}")
        if user.role == "control":
            lines.append(f"topic read {prefix}/+/events")
            lines.append(f"topic write {prefix}/+/applied")
            lines += control_acl_lines(prefix)
        elif user.role == "node":
            lines += node_acl_lines(prefix, user.name)
        else:
            for job in user.jobs or (user.name,):
                lines.append(f"topic write {prefix}/{job}/events")
                lines.append(f"topic read {prefix}/{job}/applied")
        lines.append("")
    return "\n".join(lines)


def config_text(directory: Path, settings: BrokerSettings, tls: TlsFiles | None) -> str:
    """mosquitto.conf for ``settings``; paths are absolute under ``directory``."""
    data = directory / "data"
    lines = [
        "# written by orchestrate broker config; regenerate rather than edit",
        "per_listener_settings false",
        "persistence true",
        f"persistence_location {data}/",
        f"autosave_interval {AUTOSAVE_INTERVAL_S}",
        "# the default (1000) silently drops QoS 1 messages for offline sessions;",
        "# the bytes limit bounds the memory one offline client can take",
        f"max_queued_messages {MAX_QUEUED_MESSAGES}",
        f"max_queued_bytes {MAX_QUEUED_BYTES}",
        f"max_packet_size {MAX_PACKET_BYTES}",
        "# small packets go out at once (a confirmation right after a PUBACK otherwise",
        "# waits for the client's delayed ACK, ~40 ms)",
        "set_tcp_nodelay true",
        "log_dest stderr",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "connection_messages true",
        f"allow_anonymous {'true' if settings.allow_anonymous else 'false'}",
    ]
    if settings.authenticated:
        lines.append(f"password_file {directory / 'passwd'}")
        # With anonymous clients there is nothing to restrict (any local process may
        # use every topic), and Mosquitto 2.0.11 with an ACL file drops what it
        # queued for an anonymous session restored after a restart.
        if not settings.allow_anonymous:
            lines.append(f"acl_file {directory / 'acl'}")
    lines.append(f"listener {settings.port} {settings.bind}")
    if settings.tls:
        if tls is None:
            raise BrokerSetupError("TLS requested but no certificates were given")
        lines += [
            f"cafile {tls.ca_cert}",
            f"certfile {tls.server_cert}",
            f"keyfile {tls.server_key}",
            "tls_version tlsv1.2",
        ]
        if settings.require_certificate:
            lines += ["require_certificate true", "use_identity_as_username false"]
    return "\n".join(lines) + "\n"


def _tls_files(directory: Path) -> TlsFiles:
    certs = directory / "certs"
    return TlsFiles(certs / "ca.crt", certs / "server.crt", certs / "server.key")


def _control_user(directory: Path, users: Sequence[BrokerUser]) -> tuple[list[BrokerUser], bool]:
    """``users`` plus a generated control account when none is given (its password
    kept in control.secret, and reused when the config is written again)."""
    if any(user.role == "control" for user in users):
        (directory / CONTROL_SECRET_NAME).unlink(missing_ok=True)  # no generated user now
        return list(users), False
    control = BrokerUser.generated_control(control_password(directory))
    if any(user.name == control.name for user in users):
        raise BrokerSetupError(f"broker user {control.name!r} is the generated control user")
    secret = directory / CONTROL_SECRET_NAME
    temporary = secret.with_name(f".{secret.name}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(control.password + "\n")
    os.replace(temporary, secret)
    return [*users, control], True


def write_config(
    directory: Path,
    *,
    port: int = 1883,
    bind: str = "127.0.0.1",
    tls: bool = False,
    users: Sequence[BrokerUser] = (),
    topic_prefix: str = DEFAULT_PREFIX,
    allow_anonymous: bool = False,
    require_certificate: bool = False,
) -> Path:
    """Write a hardened broker config into ``directory``; return mosquitto.conf's path.

    ``tls`` creates a test CA under ``directory/certs`` unless one is there;
    ``require_certificate`` (mTLS, needs ``tls``) makes every client show a
    certificate that CA signed (``issue_client_cert``). ``users`` get a password
    file (written from Python) and an ACL; without a control user one is
    generated. ``allow_anonymous`` is refused unless ``bind`` is loopback.
    Everything is checked before anything is written.
    """
    check_port(port)
    bind = check_bind(bind)
    check_users(users)
    topic_prefix = check_topic_prefix(topic_prefix)
    check_config_path(directory.absolute())
    if allow_anonymous and not is_loopback(bind):
        raise BrokerSetupError(
            f"--allow-anonymous is only for a loopback listener, not {bind} "
            "(give users instead: --control, --user)"
        )
    if require_certificate and not tls:
        raise BrokerSetupError("--require-certificate needs a TLS listener (--tls)")
    directory = check_config_path(prepare_dir(directory))  # resolved: a link could bend it
    check_runs_unprivileged(directory)
    users, generated = _control_user(directory, users)
    control = next(user.name for user in users if user.role == "control")
    settings = BrokerSettings(
        port, bind, tls, topic_prefix, True, allow_anonymous, require_certificate,
        control, generated,
    )  # fmt: skip
    tls_files: TlsFiles | None = None
    if tls:
        tls_files = _tls_files(directory)
        if all(p.exists() for p in asdict(tls_files).values()):
            give_to_broker_user(tls_files.ca_cert, tls_files.server_cert, tls_files.server_key)
        else:
            tls_files = create_test_ca(directory / "certs")
    write_password_file(directory / "passwd", users)
    acl = directory / "acl"
    acl.write_text(acl_text(users, settings.topic_prefix, allow_anonymous))
    acl.chmod(0o600)
    data = directory / "data"
    data.mkdir(mode=0o700, exist_ok=True)
    give_to_broker_user(directory, directory / "certs", data, acl, directory / "passwd")
    (directory / SETTINGS_NAME).write_text(json.dumps(asdict(settings), indent=2) + "\n")
    conf = directory / CONFIG_NAME
    conf.write_text(config_text(directory, settings, tls_files))
    return conf


def rewrite_port(directory: Path, port: int) -> Path:
    """Regenerate ``directory``'s mosquitto.conf with a new listener port."""
    check_port(port)
    check_config_path(directory.absolute())
    settings = read_settings(directory)
    if settings is None:
        raise BrokerSetupError(f"no readable broker settings in {directory}")
    if settings.allow_anonymous and not is_loopback(settings.bind):
        raise BrokerSetupError(
            f"{directory} allows anonymous clients on {settings.bind}: write a new "
            "config with broker config (users instead of anonymous access)"
        )
    check_runs_unprivileged(directory)
    settings = BrokerSettings(**{**asdict(settings), "port": port})
    tls_files = _tls_files(directory) if settings.tls else None
    (directory / SETTINGS_NAME).write_text(json.dumps(asdict(settings), indent=2) + "\n")
    conf = directory / CONFIG_NAME
    conf.write_text(config_text(directory, settings, tls_files))
    return conf
