"""`orchestrate broker config/start/stop/status` as a user runs it (real subprocesses)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bus.broker import control_password, free_port
from bus.broker_home import ROOT_BROKER_HOME, default_broker_dir
from bus.errors import BrokerAuthError
from bus.mqtt import BrokerConfig, publish_once
from tests.ci import missing_part
from tests.plugin.mosquitto import MOSQUITTO

CONFIG_FILES = ("mosquitto.conf", "broker.json")


@pytest.fixture
def broker_tmp() -> Iterator[Path]:
    """A directory user ``mosquitto`` can reach when the tests run as root (pytest's
    own tree is 0700, and the broker never runs as root)."""
    directory = Path(tempfile.mkdtemp(prefix="orchestrate-broker-cli-"))
    directory.chmod(0o711)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orchestrate: "), result.stderr
    return str(lines[0])


def test_config_writes_hardened_files(cli, broker_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    """TLS, password file and ACL, persistence traps handled, secrets 0600."""
    target = broker_tmp / "b"
    result = cli(
        "broker", "config", "--dir", str(target), "--tls",
        "--control", "hq:hq-pass", "--user", "w1:w1-pass:0000aaaa", "--user", "w2:w2-pass",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "MQTT_TLS=1" in result.stdout and "MQTT_PORT=8883" in result.stdout
    conf = (target / "mosquitto.conf").read_text()
    for line in (
        "persistence true", "autosave_interval 100", "max_queued_messages 100000",
        "max_queued_bytes 134217728", "max_packet_size 131072",
        "allow_anonymous false", "listener 8883 127.0.0.1", "tls_version tlsv1.2",
    ):  # fmt: skip
        assert line in conf.splitlines()
    assert "user root" not in conf and "require_certificate" not in conf
    acl = (target / "acl").read_text()
    assert "user hq\ntopic read jobs/+/events\ntopic write jobs/+/applied" in acl
    assert "user w1\ntopic write jobs/0000aaaa/events\ntopic read jobs/0000aaaa/applied" in acl
    assert "user w2\ntopic write jobs/w2/events" in acl
    assert "readwrite" not in acl, "no anonymous section"
    passwd = (target / "passwd").read_text()
    assert passwd.startswith("w1:$7$") and "w1-pass" not in passwd
    assert "MQTT_USERNAME=hq" in result.stdout and "MQTT_PASSWORD" not in result.stdout
    for secret in ("passwd", "acl", "certs/server.key", "certs/ca.key"):
        assert stat.S_IMODE((target / secret).stat().st_mode) == 0o600


def test_passwords_can_come_from_files_not_the_command_line(cli, broker_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    """NAME:@FILE: the password is the file's first line, so no argv (process list,
    shell history) holds it; the password file's hash is of exactly that text."""
    secret = broker_tmp / "w1.pass"
    secret.write_text("s3cret with spaces\nignored\n")
    (broker_tmp / "hq.pass").write_text("hq-secret")
    target = broker_tmp / "b"
    control = f"hq:@{broker_tmp / 'hq.pass'}"
    result = cli("broker", "config", "--dir", str(target), "--user", f"w1:@{secret}:0000aaaa",
                 "--control", control)  # fmt: skip
    assert result.returncode == 0, result.stderr
    hashes = dict(line.split(":", 1) for line in (target / "passwd").read_text().splitlines())
    for name, password in (("w1", "s3cret with spaces"), ("hq", "hq-secret")):
        _, _, iterations, salt, digest = hashes[name].split("$")
        again = hashlib.pbkdf2_hmac(
            "sha512", password.encode(), base64.b64decode(salt), int(iterations)
        )
        assert base64.b64encode(again).decode() == digest
    assert "user w1\ntopic write jobs/0000aaaa/events" in (target / "acl").read_text()
    (broker_tmp / "empty.pass").write_text("\n")
    for spec, fragment in (
        (f"w2:@{broker_tmp / 'missing'}", "cannot read the password of 'w2'"),
        (f"w2:@{broker_tmp / 'empty.pass'}", "starts with an empty line"),
    ):
        error = one_line_error(cli("broker", "config", "--dir", str(target), "--user", spec))
        assert fragment in error


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["broker", "config", "--port", "70000"], "port must be in 1-65535"),
        (["broker", "config", "--dir", "/proc/orchestrate"], "cannot write broker directory"),
        (["broker", "config", "--user", "nopass"], "user must be NAME:PASS"),
        (["broker", "start", "--port", "0"], "port must be in 1-65535"),
    ],
)
def test_bad_input_is_one_line(cli, args: list[str], fragment: str) -> None:  # type: ignore[no-untyped-def]
    assert fragment in one_line_error(cli(*args))


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--bind", "not an ip"], "bind address must be an IP address or a host name"),
        (["--bind", "300.1.1.1"], "got '300.1.1.1'"),
        (["--bind", "127.0.0.1\nallow_anonymous true"], "bind address must be"),
        (["--user", "w1:p", "--user", "w1:q"], "broker user 'w1' is given twice"),
        (["--user", "hq:p", "--control", "hq:q"], "broker user 'hq' is given twice"),
        (["--bind", "0.0.0.0", "--allow-anonymous"], "only for a loopback listener, not 0.0.0.0"),
        (["--user", "orchestrate-control:p"], "is the generated control user"),
        (["--prefix", "jobs\nuser evil\ntopic readwrite jobs"], "topic prefix must be"),
        (["--prefix", "jobs x"], "topic prefix must be"),
        (["--user", "w1:p:0000aaaa\x01"], "job id may not contain"),
    ],
)
def test_config_refuses_a_bad_bind_or_a_user_named_twice(  # type: ignore[no-untyped-def]
    cli, broker_tmp: Path, flags: list[str], fragment: str
) -> None:
    """Either was written as given: `listener 1883 not an ip`, two passwords for w1."""
    target = broker_tmp / "b"
    assert cli("broker", "config", "--dir", str(target)).returncode == 0
    before = {path.name: path.read_bytes() for path in target.iterdir() if path.is_file()}
    assert fragment in one_line_error(cli("broker", "config", "--dir", str(target), *flags))
    assert {path.name: path.read_bytes() for path in target.iterdir() if path.is_file()} == before


def test_a_broker_directory_that_would_add_config_lines_is_refused(  # type: ignore[no-untyped-def]
    cli, broker_tmp: Path
) -> None:
    """The directory's path is written into mosquitto.conf (persistence_location,
    password_file, acl_file, ...): a newline in it would be a config line of its own."""
    target = broker_tmp / "b\nallow_anonymous true\nplugin /tmp/evil.so\n#"
    error = one_line_error(cli("broker", "config", "--dir", str(target)))
    assert "holds a control character" in error
    assert not target.exists()


@pytest.mark.parametrize("bind", ["0.0.0.0", "::1", "localhost", "broker.example.org"])
def test_config_takes_ip_addresses_and_host_names(cli, broker_tmp: Path, bind: str) -> None:  # type: ignore[no-untyped-def]
    result = cli("broker", "config", "--dir", str(broker_tmp / "b"), "--bind", bind)
    assert result.returncode == 0, result.stderr
    assert f"listener 1883 {bind}" in (broker_tmp / "b" / "mosquitto.conf").read_text()


def test_mtls_config_and_a_client_certificate(cli, broker_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    """--require-certificate implies TLS; `broker cert` issues a client certificate
    from the same test CA and prints where it is (the key 0600)."""
    target = broker_tmp / "b"
    result = cli("broker", "config", "--dir", str(target), "--require-certificate")
    assert result.returncode == 0, result.stderr
    conf = (target / "mosquitto.conf").read_text().splitlines()
    assert "require_certificate true" in conf and "listener 8883 127.0.0.1" in conf
    issued = cli("broker", "cert", "worker-1", "--dir", str(target))
    assert issued.returncode == 0, issued.stderr
    key = target / "certs" / "client-worker-1.key"
    assert f"export MQTT_KEYFILE={key}" in issued.stdout.splitlines()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert "client name must be" in one_line_error(
        cli("broker", "cert", "../x", "--dir", str(target))
    )


def test_config_exports_are_shell_quoted(cli, broker_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    """The export lines are meant to be pasted into a shell: a path with a space stays one word."""
    target = broker_tmp / "my broker"
    result = cli("broker", "config", "--dir", str(target), "--tls")
    assert result.returncode == 0, result.stderr
    assert f"export MQTT_CA_CERTS='{target / 'certs' / 'ca.crt'}'" in result.stdout.splitlines()


def test_start_without_mosquitto_is_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("broker", "start", env={"ORCHESTRATE_MOSQUITTO": "/nonexistent/mosquitto"})
    assert "mosquitto is not installed" in one_line_error(result)


def test_start_status_stop(cli, broker_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    """A dev broker: started detached with a generated control user (anonymous
    clients refused), reachable with the printed env, stopped by pid file."""
    if MOSQUITTO is None:
        missing_part("mosquitto is not installed (apt-get install mosquitto)")
    home = broker_tmp / "broker"
    at = ("--dir", str(home))
    port = free_port()
    started = cli("broker", "start", "--port", str(port), *at)
    try:
        assert started.returncode == 0, started.stderr
        assert f"MQTT_PORT={port}" in started.stdout
        assert "MQTT_USERNAME=orchestrate-control" in started.stdout
        assert f'export MQTT_PASSWORD="$(cat {home / "control.secret"})"' in started.stdout
        assert (home / "mosquitto.pid").exists()
        assert cli("broker", "status", *at).returncode == 0
        assert "already running" in one_line_error(cli("broker", "start", *at))
        files = {name: (home / name).read_text() for name in CONFIG_FILES}
        other_port = str(free_port())
        refused = cli("broker", "start", "--port", other_port, *at)  # refused: changes nothing
        assert "already running" in one_line_error(refused)
        assert {name: (home / name).read_text() for name in CONFIG_FILES} == files
        assert f"on 127.0.0.1:{port}" in cli("broker", "status", *at).stdout
        password = control_password(home)
        assert password and stat.S_IMODE((home / "control.secret").stat().st_mode) == 0o600
        with pytest.raises(BrokerAuthError):
            publish_once(BrokerConfig("127.0.0.1", port), "jobs/0000aaaa/applied", b"anonymous")
        control = BrokerConfig("127.0.0.1", port, username="orchestrate-control", password=password)
        publish_once(control, "jobs/0000aaaa/applied", b"hello")
    finally:
        stopped = cli("broker", "stop", *at)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    status = cli("broker", "status", *at)
    assert status.returncode == 1 and "not running" in status.stdout
    assert not (home / "mosquitto.pid").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's broker drops privileges")
def test_as_root_a_directory_the_broker_user_cannot_reach_is_refused(  # type: ignore[no-untyped-def]
    cli, state_dir: Path
) -> None:
    """It used to be written `user root`; now one line names the way out, nothing is written."""
    assert cli("job", "list").returncode == 0  # makes the state dir, private
    private = state_dir / "broker"
    result = cli("broker", "config", "--dir", str(private))  # under a private tree
    assert "cannot reach" in one_line_error(result) and "--dir" in result.stderr
    assert not (private / "mosquitto.conf").exists()


@pytest.fixture
def root_broker_home(state_dir: Path) -> Iterator[Path]:
    """The directory root's default broker for this state dir gets, removed after."""
    home = default_broker_dir(state_dir)
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.skipif(MOSQUITTO is None, reason="mosquitto is not installed")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root's broker drops privileges")
def test_as_root_the_default_broker_works_after_another_command_made_the_state_dir(  # type: ignore[no-untyped-def]
    cli, state_dir: Path, root_broker_home: Path
) -> None:
    """`broker config` and `broker start` with no --dir were refused once any command
    had made the (private) state dir. The default now lives where user mosquitto
    can reach it, through directories it can traverse but not list, and the output
    says where; the state dir stays private."""
    assert cli("job", "list").returncode == 0
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    assert root_broker_home.parent == ROOT_BROKER_HOME
    configured = cli("broker", "config")
    assert configured.returncode == 0, configured.stderr
    assert f"broker dir {root_broker_home} " in configured.stdout
    assert (root_broker_home / "mosquitto.conf").exists()
    for directory in (ROOT_BROKER_HOME, ROOT_BROKER_HOME.parent):
        assert stat.S_IMODE(directory.stat().st_mode) & 0o007 == 0o001  # traverse only
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    port = free_port()
    started = cli("broker", "start", "--port", str(port))
    try:
        assert started.returncode == 0, started.stderr
        assert f"broker dir {root_broker_home} " in started.stdout
        assert f"on 127.0.0.1:{port}" in started.stdout
        status = cli("broker", "status", "--json")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["dir"] == str(root_broker_home)
        password = control_password(root_broker_home)
        control = BrokerConfig("127.0.0.1", port, username="orchestrate-control", password=password)
        publish_once(control, "jobs/0000aaaa/applied", b"hello")
    finally:
        stopped = cli("broker", "stop")
    assert stopped.returncode == 0 and "mosquitto stopped" in stopped.stdout
