"""A hardened local Mosquitto: config, password file, ACL, test CA, and its process.

Writes everything into one directory::

    D/mosquitto.conf   D/broker.json (settings, no secrets)   D/passwd   D/acl
    D/certs/{ca,server}.{crt,key}   D/data/ (persistence)   D/mosquitto.log

The config carries the traps measured in FIELD-NOTES: persistence with
``autosave_interval 100`` (a kill -9 loses at most that much), and
``max_queued_messages 0`` (the default 1000 silently drops QoS 1 messages for
an offline persistent subscriber).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bus.broker_checks import check_bind, check_port, check_users
from bus.errors import BrokerSetupError

CONFIG_NAME = "mosquitto.conf"
SETTINGS_NAME = "broker.json"
PID_NAME = "mosquitto.pid"
LOG_NAME = "mosquitto.log"
AUTOSAVE_INTERVAL_S = 100
DEFAULT_PREFIX = "jobs"
BROKER_USER = "mosquitto"  # the user Mosquitto drops to when started as root


@dataclass(frozen=True)
class BrokerUser:
    """A broker account: the control room reads every job's events; a worker
    writes only its own job topics (``jobs`` empty: the topic named after it)."""

    name: str
    password: str = field(repr=False)
    role: str = "worker"  # "worker" | "control"
    jobs: tuple[str, ...] = ()

    @classmethod
    def parse(cls, spec: str, role: str = "worker") -> BrokerUser:
        """``NAME:PASS`` or, for a worker, ``NAME:PASS:JOB[,JOB...]``."""
        parts = spec.split(":", 2)
        if len(parts) < 2 or not parts[0] or not parts[1]:
            raise BrokerSetupError(f"user must be NAME:PASS[:JOB,...], got {spec.split(':')[0]!r}")
        name, password = parts[0], parts[1]
        if any(ch.isspace() for ch in name) or "#" in name or "+" in name:
            raise BrokerSetupError(f"user name may not contain spaces, '#' or '+': {name!r}")
        jobs = tuple(j for j in (parts[2].split(",") if len(parts) == 3 else ()) if j)
        for job in jobs:
            if "/" in job or "#" in job or "+" in job or any(ch.isspace() for ch in job):
                raise BrokerSetupError(f"job id may not contain '/', '#', '+' or spaces: {job!r}")
        return cls(name=name, password=password, role=role, jobs=jobs)


@dataclass(frozen=True)
class BrokerSettings:
    """What ``mosquitto.conf`` is generated from (kept in broker.json, no secrets)."""

    port: int = 1883
    bind: str = "127.0.0.1"
    tls: bool = False
    topic_prefix: str = DEFAULT_PREFIX
    authenticated: bool = False  # password file + ACL, no anonymous clients


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (for tests and `broker start`)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def find_program(name: str) -> str:
    """The path of ``name`` on PATH (also /usr/sbin, where Debian puts mosquitto)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
    found = shutil.which(name, path=search)
    if found is None:
        raise BrokerSetupError(f"{name} is not installed (apt-get install mosquitto)")
    return found


def _prepare_dir(directory: Path) -> Path:
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        probe = directory / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise BrokerSetupError(
            f"cannot write broker directory {directory}: {exc.strerror}"
        ) from exc
    return directory.resolve()


def _give_to_broker_user(*paths: Path) -> None:
    """As root, Mosquitto drops to user ``mosquitto``: let it read and write these."""
    if os.geteuid() != 0:
        return
    try:
        entry = pwd.getpwnam(BROKER_USER)
    except KeyError:
        return
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.chown(path, entry.pw_uid, entry.pw_gid)


def _broker_user_can_reach(directory: Path) -> bool:
    """Whether user ``mosquitto`` can traverse every directory down to ``directory``
    (a root-owned 0700 state dir above it would lock the dropped broker out)."""
    try:
        entry = pwd.getpwnam(BROKER_USER)
    except KeyError:
        return True
    for parent in (directory, *directory.parents):
        info = parent.stat()
        if info.st_uid == entry.pw_uid:
            continue
        bit = 0o010 if info.st_gid == entry.pw_gid else 0o001
        if not info.st_mode & bit:
            return False
    return True


def _run(argv: Sequence[str], what: str) -> None:
    try:
        subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as exc:
        raise BrokerSetupError(f"{argv[0]} is not installed") from exc
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()
        raise BrokerSetupError(f"{what} failed: {detail[-1] if detail else exc}") from exc


@dataclass(frozen=True)
class TlsFiles:
    """A CA and the server certificate it signed."""

    ca_cert: Path
    server_cert: Path
    server_key: Path


def create_test_ca(directory: Path, days: int = 365) -> TlsFiles:
    """A throwaway CA and a server cert for localhost/127.0.0.1 (development and tests).

    Clients trust it with MQTT_CA_CERTS=<directory>/ca.crt. Not for production:
    the CA key sits unencrypted beside the certs.
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        raise BrokerSetupError("openssl is not installed")
    certs = _prepare_dir(directory)
    ca_key, ca_crt = certs / "ca.key", certs / "ca.crt"
    key, csr, crt = certs / "server.key", certs / "server.csr", certs / "server.crt"
    ext = certs / "server.ext"
    ext.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
        "authorityKeyIdentifier=keyid\n"
    )
    _run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days),
         "-keyout", str(ca_key), "-out", str(ca_crt), "-subj", "/CN=orchestrate test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        "creating the test CA",
    )  # fmt: skip
    _run(
        [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(csr), "-subj", "/CN=localhost"],
        "creating the server key",
    )  # fmt: skip
    _run(
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key),
         "-CAcreateserial", "-out", str(crt), "-days", str(days), "-extfile", str(ext)],
        "signing the server certificate",
    )  # fmt: skip
    for private in (ca_key, key):
        private.chmod(0o600)
    _give_to_broker_user(key, crt, ca_crt)
    csr.unlink()
    ext.unlink()
    return TlsFiles(ca_cert=ca_crt, server_cert=crt, server_key=key)


def acl_text(users: Iterable[BrokerUser], prefix: str = DEFAULT_PREFIX) -> str:
    """The ACL: control users read ``<prefix>/+/events``; workers write only theirs.

    ACLs filter at delivery time (a SUBACK "granted" proves nothing), so a
    worker that subscribes elsewhere simply receives nothing.
    """
    lines = ["# written by orchestrate broker config", ""]
    for user in users:
        lines.append(f"user {user.name}")
        if user.role == "control":
            lines.append(f"topic read {prefix}/+/events")
        else:
            for job in user.jobs or (user.name,):
                lines.append(f"topic write {prefix}/{job}/events")
        lines.append("")
    return "\n".join(lines)


def config_text(directory: Path, settings: BrokerSettings, tls: TlsFiles | None) -> str:
    """mosquitto.conf for ``settings``; paths are absolute under ``directory``."""
    data = directory / "data"
    lines = ["# written by orchestrate broker config; regenerate rather than edit"]
    if os.geteuid() == 0 and not _broker_user_can_reach(directory):
        # Started as root, Mosquitto drops to user mosquitto, which cannot reach
        # files under a private (0700) parent; stay root rather than fail.
        lines.append("user root")
    lines += [
        "per_listener_settings false",
        "persistence true",
        f"persistence_location {data}/",
        f"autosave_interval {AUTOSAVE_INTERVAL_S}",
        "# the default (1000) silently drops QoS 1 messages for offline sessions",
        "max_queued_messages 0",
        "log_dest stderr",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "connection_messages true",
    ]
    if settings.authenticated:
        lines += [
            "allow_anonymous false",
            f"password_file {directory / 'passwd'}",
            f"acl_file {directory / 'acl'}",
        ]
    else:
        lines.append("allow_anonymous true")
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
    return "\n".join(lines) + "\n"


def write_config(
    directory: Path,
    *,
    port: int = 1883,
    bind: str = "127.0.0.1",
    tls: bool = False,
    users: Sequence[BrokerUser] = (),
    topic_prefix: str = DEFAULT_PREFIX,
) -> Path:
    """Write a hardened broker config into ``directory``; return mosquitto.conf's path.

    ``tls`` creates a test CA under ``directory/certs`` unless one is there;
    ``users`` (any) turns on the password file and ACL and forbids anonymous
    clients. The password file is written with ``mosquitto_passwd -b``.
    """
    check_port(port)
    bind = check_bind(bind)
    check_users(users)
    if "#" in topic_prefix or "+" in topic_prefix or not topic_prefix.strip("/"):
        raise BrokerSetupError(f"bad topic prefix: {topic_prefix!r}")
    directory = _prepare_dir(directory)
    settings = BrokerSettings(port, bind, tls, topic_prefix.strip("/"), bool(users))
    tls_files: TlsFiles | None = None
    if tls:
        certs = directory / "certs"
        tls_files = TlsFiles(certs / "ca.crt", certs / "server.crt", certs / "server.key")
        if all(p.exists() for p in asdict(tls_files).values()):
            _give_to_broker_user(tls_files.ca_cert, tls_files.server_cert, tls_files.server_key)
        else:
            tls_files = create_test_ca(certs)
    if users:
        _write_passwords(directory / "passwd", users)
        acl = directory / "acl"
        acl.write_text(acl_text(users, settings.topic_prefix))
        acl.chmod(0o600)
        _give_to_broker_user(acl)
    data = directory / "data"
    data.mkdir(mode=0o700, exist_ok=True)
    _give_to_broker_user(directory, directory / "certs", data)
    (directory / SETTINGS_NAME).write_text(json.dumps(asdict(settings), indent=2) + "\n")
    conf = directory / CONFIG_NAME
    conf.write_text(config_text(directory, settings, tls_files))
    return conf


def _write_passwords(path: Path, users: Sequence[BrokerUser]) -> None:
    tool = find_program("mosquitto_passwd")
    path.unlink(missing_ok=True)
    path.touch(mode=0o600)
    for user in users:
        _run([tool, "-b", str(path), user.name, user.password], f"adding broker user {user.name}")
    path.chmod(0o600)
    _give_to_broker_user(path)


def rewrite_port(directory: Path, port: int) -> Path:
    """Regenerate ``directory``'s mosquitto.conf with a new listener port."""
    check_port(port)
    settings_path = directory / SETTINGS_NAME
    try:
        settings = BrokerSettings(**json.loads(settings_path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise BrokerSetupError(f"no readable broker settings in {directory}: {exc}") from exc
    settings = BrokerSettings(
        port, settings.bind, settings.tls, settings.topic_prefix, settings.authenticated
    )
    certs = directory / "certs"
    tls_files = (
        TlsFiles(certs / "ca.crt", certs / "server.crt", certs / "server.key")
        if settings.tls
        else None
    )
    settings_path.write_text(json.dumps(asdict(settings), indent=2) + "\n")
    conf = directory / CONFIG_NAME
    conf.write_text(config_text(directory, settings, tls_files))
    return conf


def read_settings(directory: Path) -> BrokerSettings | None:
    """The settings ``write_config`` left in ``directory``, or None."""
    try:
        return BrokerSettings(**json.loads((directory / SETTINGS_NAME).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def wait_listening(
    host: str, port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None
) -> None:
    """Poll until something accepts TCP connections on host:port.

    Raises ``BrokerSetupError`` if ``proc`` exits first or the deadline passes.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerSetupError(f"mosquitto exited with status {proc.returncode} at start")
        try:  # any family: the listener may be IPv6 or a host name
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise BrokerSetupError(f"mosquitto did not listen on {host}:{port} within {timeout:g} s")


class Mosquitto:
    """A Mosquitto process for one config directory: start, stop, kill, restart.

    Used by ``orchestrate broker start/stop`` (detached, pid file) and by the
    test fixtures (attached). ``start`` returns only once the listener accepts.
    """

    def __init__(
        self, directory: Path, *, pid_file: Path | None = None, binary: str | None = None
    ) -> None:
        """``binary``: the mosquitto executable (default: found on PATH or /usr/sbin)."""
        self.directory = directory
        self.binary = binary
        self.pid_file = pid_file or directory / PID_NAME
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def settings(self) -> BrokerSettings:
        settings = read_settings(self.directory)
        if settings is None:
            raise BrokerSetupError(f"no broker config in {self.directory} (run broker config)")
        return settings

    def require_stopped(self) -> None:
        """BrokerSetupError if this directory's mosquitto already runs. Callers that
        rewrite its config before ``start`` check this first, so a refused start
        leaves the running broker's files as they were."""
        if (pid := self.running_pid()) is not None:
            raise BrokerSetupError(f"mosquitto is already running (pid {pid})")

    def start(self, timeout: float = 10.0) -> int:
        """Start mosquitto detached from this terminal; return its pid."""
        self.require_stopped()
        binary = self.binary or find_program("mosquitto")
        if not os.access(binary, os.X_OK):
            raise BrokerSetupError(f"mosquitto is not installed (no executable {binary})")
        settings = self.settings
        log_file = open(self.directory / LOG_NAME, "ab")  # noqa: SIM115 (handed to the child)
        with log_file:
            self.proc = subprocess.Popen(
                [binary, "-c", str(self.directory / CONFIG_NAME)],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,
            )
        try:
            wait_listening(settings.bind, settings.port, timeout, self.proc)
        except BrokerSetupError as exc:
            self.kill()
            raise BrokerSetupError(f"{exc}: {self._last_log_line()}") from exc
        self.pid_file.write_text(f"{self.proc.pid}\n")
        return self.proc.pid

    def _last_log_line(self) -> str:
        log_path = self.directory / LOG_NAME
        try:
            lines = [ln for ln in log_path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            lines = []
        return f"{lines[-1].split(': ', 1)[-1]} (log: {log_path})" if lines else f"see {log_path}"

    def running_pid(self) -> int | None:
        """The pid in the pid file if that process is a live mosquitto, else None."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if b"mosquitto" not in cmdline or stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return None
        return pid

    def _signal(self, sig: signal.Signals, timeout: float) -> bool:
        pid = self.proc.pid if self.proc is not None else self.running_pid()
        if pid is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None:
                if self.proc.poll() is not None:
                    break
            elif self.running_pid() is None:
                break
            time.sleep(0.02)
        else:
            return False
        self.proc = None
        self.pid_file.unlink(missing_ok=True)
        return True

    def stop(self, timeout: float = 10.0) -> bool:
        """SIGTERM (Mosquitto saves its persistence file on the way out), then
        SIGKILL if it lingers. Returns False when nothing was running."""
        if self.proc is None and self.running_pid() is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        if not self._signal(signal.SIGTERM, timeout):
            self._signal(signal.SIGKILL, timeout)
        return True

    def kill(self) -> None:
        """SIGKILL: everything since the last autosave is lost, as in a crash."""
        self._signal(signal.SIGKILL, 10.0)
