"""A local Mosquitto process for one config directory: start, stop, kill, restart.

The config it runs is written by ``bus.broker_config`` (hardened by default),
with certificates from ``bus.broker_tls`` and accounts from ``bus.broker_users``;
the names callers use most are importable from here too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from bus.broker_config import (
    CONFIG_NAME,
    DEFAULT_PREFIX,
    SETTINGS_NAME,
    BrokerSettings,
    check_runs_unprivileged,
    control_password,
    read_settings,
    rewrite_port,
    write_config,
)
from bus.broker_tls import ClientCert, TlsFiles, create_test_ca, issue_client_cert
from bus.broker_users import BrokerUser
from bus.errors import BrokerSetupError

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_PREFIX",
    "LOG_NAME",
    "PID_NAME",
    "SETTINGS_NAME",
    "BrokerSettings",
    "BrokerUser",
    "ClientCert",
    "Mosquitto",
    "TlsFiles",
    "control_password",
    "create_test_ca",
    "find_program",
    "free_port",
    "issue_client_cert",
    "read_settings",
    "rewrite_port",
    "wait_listening",
    "write_config",
]

PID_NAME = "mosquitto.pid"
LOG_NAME = "mosquitto.log"


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
        binary = self.executable()
        settings = self.settings
        self._refuse_root()
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

    def executable(self) -> str:
        """The mosquitto to run; BrokerSetupError if there is none."""
        binary = self.binary or find_program("mosquitto")
        if not os.access(binary, os.X_OK):
            raise BrokerSetupError(f"mosquitto is not installed (no executable {binary})")
        return binary

    def _refuse_root(self) -> None:
        """A config from before hardening may say ``user root``: never run that."""
        try:
            lines = (self.directory / CONFIG_NAME).read_text().splitlines()
        except OSError as exc:
            raise BrokerSetupError(f"cannot read {self.directory / CONFIG_NAME}: {exc}") from exc
        if any(line.split() == ["user", "root"] for line in lines):
            raise BrokerSetupError(
                f"{self.directory / CONFIG_NAME} runs mosquitto as root: write it again "
                "with broker config"
            )
        check_runs_unprivileged(self.directory)

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
