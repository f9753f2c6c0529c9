"""`orchestrate broker config/start/stop/status`: a hardened local Mosquitto for development."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import click

from app.settings import MOSQUITTO_ENV, Settings
from bus.broker import (
    CONFIG_NAME,
    LOG_NAME,
    BrokerSettings,
    BrokerUser,
    Mosquitto,
    issue_client_cert,
    read_settings,
    rewrite_port,
    write_config,
)
from bus.broker_checks import check_port
from bus.broker_config import CONTROL_SECRET_NAME
from bus.broker_home import ROOT_BROKER_HOME, default_broker_dir, prepare_root_home
from bus.broker_tls import BROKER_USER

DIR_OPTION = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Broker directory (default: <state dir>/broker; as root, under "
    f"{ROOT_BROKER_HOME}, where user mosquitto can reach it).",
)


def broker_dir(ctx: click.Context, directory: Path | None, *, create: bool = False) -> Path:
    """``--dir``, else the state directory's broker (``bus.broker_home``: as root, one
    user ``mosquitto`` can reach). ``create``: make root's broker home, and say where
    it is, since it is not under the state directory."""
    settings: Settings = ctx.obj
    if directory is not None:
        return directory.expanduser().resolve()
    target = default_broker_dir(settings.state_dir)
    if target.parent == ROOT_BROKER_HOME and create:
        prepare_root_home()
        click.echo(
            f"broker dir {target} (as root, mosquitto runs as user {BROKER_USER!r}, "
            f"which cannot reach the private state directory {settings.state_dir})"
        )
    return target.expanduser().resolve()


def env_hint(directory: Path, settings: BrokerSettings) -> str:
    """The MQTT_* lines the control room needs to reach this broker. The generated
    control user's password is read from its file by the shell, never printed."""
    host = "localhost" if settings.tls else settings.bind
    values = {"MQTT_BROKER": host, "MQTT_PORT": str(settings.port)}
    if settings.tls:
        values |= {"MQTT_TLS": "1", "MQTT_CA_CERTS": str(directory / "certs" / "ca.crt")}
    if settings.control_user:
        values["MQTT_USERNAME"] = settings.control_user
    # quoted: people paste or eval these lines, and a directory may hold spaces
    lines = [f"export {name}={shlex.quote(value)}" for name, value in values.items()]
    if settings.control_secret:
        secret = shlex.quote(str(directory / CONTROL_SECRET_NAME))
        lines.append(f'export MQTT_PASSWORD="$(cat {secret})"')
    if settings.require_certificate:
        lines.append(f"# mTLS: orchestrate broker cert NAME --dir {shlex.quote(str(directory))}")
    return "\n".join(lines)


ANONYMOUS_OPTION = click.option(
    "--allow-anonymous",
    is_flag=True,
    help="Let clients in without a user (loopback listeners only; development).",
)


@click.group()
def broker() -> None:
    """Write a hardened Mosquitto config and run a local broker on loopback."""


@broker.command("config")
@DIR_OPTION
@click.option("--port", type=int, default=None, help="Listener port (1883, 8883 with --tls).")
@click.option("--bind", default="127.0.0.1", show_default=True, help="Listener address.")
@click.option("--tls", is_flag=True, help="TLS listener; creates a test CA unless one exists.")
@click.option(
    "--require-certificate",
    is_flag=True,
    help="mTLS (implies --tls): clients need a certificate from `broker cert`.",
)
@ANONYMOUS_OPTION
@click.option(
    "--user",
    "workers",
    multiple=True,
    metavar="NAME:PASS[:JOB,...]",
    help="A worker: may only write <prefix>/JOB/events (default JOB: its name). "
    "PASS @FILE: the password is FILE's first line (kept off the process list).",
)
@click.option(
    "--control",
    "controls",
    multiple=True,
    metavar="NAME:PASS",
    help="A control-room user: reads <prefix>/+/events (default: one is generated). "
    "PASS @FILE as for --user.",
)
@click.option(
    "--node",
    "nodes",
    multiple=True,
    metavar="NAME:PASS",
    help="A node (`orchestrate node run --name NAME`): may only use <prefix>/nodes/NAME/... "
    "PASS @FILE as for --user.",
)
@click.option("--prefix", default="jobs", show_default=True, help="Topic prefix.")
@click.pass_context
def config_command(
    ctx: click.Context,
    directory: Path | None,
    port: int | None,
    bind: str,
    tls: bool,
    require_certificate: bool,
    allow_anonymous: bool,
    workers: tuple[str, ...],
    controls: tuple[str, ...],
    nodes: tuple[str, ...],
    prefix: str,
) -> None:
    """Write mosquitto.conf, the password file and the ACL (no anonymous clients)."""
    target = broker_dir(ctx, directory, create=True)
    users = [BrokerUser.parse(spec, "worker") for spec in workers]
    users += [BrokerUser.parse(spec, "control") for spec in controls]
    users += [BrokerUser.parse(spec, "node") for spec in nodes]
    tls = tls or require_certificate
    port = check_port(port if port is not None else (8883 if tls else 1883))
    conf = write_config(
        target, port=port, bind=bind, tls=tls, users=users, topic_prefix=prefix,
        allow_anonymous=allow_anonymous, require_certificate=require_certificate,
    )  # fmt: skip
    click.echo(f"wrote {conf}")
    settings = read_settings(target)
    assert settings is not None
    click.echo(env_hint(target, settings))
    for user in users:
        if user.role == "node":  # its own login: the node's name, its password
            click.echo(
                f"# on node {user.name}: MQTT_USERNAME={user.name} MQTT_PASSWORD=… "
                f"orchestrate node start --name {user.name}"
            )


@broker.command("start")
@DIR_OPTION
@click.option("--port", type=int, default=None, help="Listener port (rewrites the config).")
@ANONYMOUS_OPTION
@click.pass_context
def start_command(
    ctx: click.Context, directory: Path | None, port: int | None, allow_anonymous: bool
) -> None:
    """Start mosquitto in the background (a hardened loopback config if none exists yet)."""
    target = broker_dir(ctx, directory, create=True)
    if port is not None:
        check_port(port)
    # ORCHESTRATE_MOSQUITTO names the executable (e.g. a build outside PATH).
    process = Mosquitto(target, binary=os.environ.get(MOSQUITTO_ENV) or None)
    process.require_stopped()  # before the config is touched: a refused start changes nothing
    process.executable()
    if not (target / CONFIG_NAME).exists():
        write_config(target, port=port or 1883, allow_anonymous=allow_anonymous)
    elif allow_anonymous:
        raise click.UsageError("--allow-anonymous is for a new config: use broker config")
    elif port is not None:
        rewrite_port(target, port)
    pid = process.start()
    settings = process.settings
    click.echo(f"mosquitto running (pid {pid}) on {settings.bind}:{settings.port}")
    click.echo(env_hint(target, settings))


@broker.command("cert")
@click.argument("name")
@DIR_OPTION
@click.pass_context
def cert_command(ctx: click.Context, name: str, directory: Path | None) -> None:
    """Issue a client certificate NAME from this broker's test CA (for --require-certificate)."""
    target = broker_dir(ctx, directory)
    issued = issue_client_cert(target / "certs", name)
    click.echo(f"export MQTT_CERTFILE={shlex.quote(str(issued.cert))}")
    click.echo(f"export MQTT_KEYFILE={shlex.quote(str(issued.key))}")


@broker.command("stop")
@DIR_OPTION
@click.pass_context
def stop_command(ctx: click.Context, directory: Path | None) -> None:
    """Stop the local mosquitto (SIGTERM, so it saves its persistence file)."""
    if Mosquitto(broker_dir(ctx, directory)).stop():
        click.echo("mosquitto stopped")
    else:
        click.echo("mosquitto was not running")


@broker.command("status")
@DIR_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def status_command(ctx: click.Context, directory: Path | None, as_json: bool) -> None:
    """Say whether the local mosquitto runs; exit 0 if it does, 1 if not."""
    target = broker_dir(ctx, directory)
    pid = Mosquitto(target).running_pid()
    settings = read_settings(target)
    if as_json:
        record = {
            "running": pid is not None,
            "pid": pid,
            "dir": str(target),
            "port": settings.port if settings else None,
            "tls": settings.tls if settings else None,
            "log": str(target / LOG_NAME),
        }
        click.echo(json.dumps(record))
    elif pid is None:
        click.echo(f"mosquitto not running ({target})")
    else:
        assert settings is not None
        click.echo(f"mosquitto running (pid {pid}) on {settings.bind}:{settings.port}")
    if pid is None:
        # SystemExit, not ctx.exit: app.cli.main runs click with standalone_mode=False,
        # which turns ctx.exit's code into a return value that main ignores.
        raise SystemExit(1)
