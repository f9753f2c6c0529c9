"""`orchestrate msg send/poll/ack/follow` and `orchestrate export`: the SQLite bus by hand."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from app.commands.json_argument import read_json_argument
from app.commands.json_option import ALWAYS_JSON_OPTION
from app.settings import JOB_ENV, Settings
from app.terminal.output import dumps
from bus.errors import InvalidPayload
from bus.messages import MAX_SEQ, Bus, Message, Outgoing
from registry.bus_types import send as send_message
from registry.errors import InvalidEvent
from registry.records import check_label
from registry.wording import counted


def default_agent() -> str:
    """Who "I" am on the bus: the job a pane runs for, else the control room ("hq")."""
    return os.environ.get(JOB_ENV) or "hq"


def parse_payload(text: str | None) -> Any:
    """A payload argument: JSON text, or ``@path`` to a JSON file."""
    if text is None:
        return None
    try:
        return read_json_argument(text, "payload")
    except InvalidEvent as exc:  # the event parser's JSON reader; here it reads a payload
        raise InvalidPayload(str(exc)) from None


def checked_agent(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--agent/--from, checked as `job register` checks an agent name. Given empty it
    used to fall back to the default agent ("hq") and read or move hq's cursor."""
    return None if value is None else check_label(param.opts[0], value)


def emit(record: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed so pipes see it at once."""
    sys.stdout.write(dumps(record) + "\n")
    sys.stdout.flush()


@click.group()
def msg() -> None:
    """Send, poll, acknowledge and follow messages on the SQLite bus."""


@msg.command()
@click.argument("type_")
@click.argument("payload", required=False)
@click.option(
    "--to",
    "to_agent",
    metavar="AGENT",
    help="Recipient the bus knows: it has sent, polled or beaten, or is a job or session "
    "(default: broadcast).",
)
@click.option(
    "--from",
    "from_agent",
    metavar="AGENT",
    callback=checked_agent,
    help="Sender (default: $ORCHESTRATE_JOB or hq).",
)
@click.option("--correlation-id", metavar="ID", help="Task or job this message is about.")
@click.option("--reply-to", "in_reply_to", metavar="ID", help="Message id this answers.")
@click.option(
    "--id", "msg_id", metavar="ID", help="Message id (retries with the same id are no-ops)."
)
@ALWAYS_JSON_OPTION
@click.pass_obj
def send(
    settings: Settings,
    type_: str,
    payload: str | None,
    to_agent: str | None,
    from_agent: str | None,
    correlation_id: str | None,
    in_reply_to: str | None,
    msg_id: str | None,
) -> None:
    """Publish a message of TYPE with a JSON PAYLOAD (or @file.json).

    Types starting job., session., queue. or control. are orchestrate's own and
    refused, as are ids starting with a job id and ':'."""
    body = parse_payload(payload)
    bus = settings.open_bus()
    if to_agent is not None:
        bus.check_recipient(to_agent, also_known=_registry_names(bus))
    message = Outgoing(
        type=type_,
        from_agent=from_agent or default_agent(),
        payload=body,
        to_agent=to_agent,
        correlation_id=correlation_id,
        in_reply_to=in_reply_to,
        **({"id": msg_id} if msg_id else {}),
    )
    result = send_message(bus, message)
    emit({"seq": result.seq, "id": result.id, "duplicate": result.duplicate})


def _registry_names(bus: Bus) -> set[str]:
    """Job ids and session labels are valid recipients even before they speak."""
    from registry.names import known_names

    return known_names(bus)


PAYLOAD_PROBLEMS = {
    "blob_missing": "its payload file {ref} is missing from blobs/",
    "blob_corrupt": "its payload file {ref} no longer holds what was stored",
    "decode_failed": "its stored payload is not JSON any more",
}


def emit_message(message: Message) -> None:
    """The message as a JSON line; a payload that could not be read is also said on
    stderr, so a consumer acking a null payload is not the only one who knows."""
    emit(message.to_dict())
    if message.payload_error:
        problem = PAYLOAD_PROBLEMS.get(message.payload_error, message.payload_error)
        click.echo(
            f"orchestrate: message {message.seq}: {problem.format(ref=message.payload_ref)}",
            err=True,
        )


@msg.command()
@click.option(
    "--agent",
    metavar="ID",
    callback=checked_agent,
    help="Reader (default: $ORCHESTRATE_JOB or hq).",
)
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 100_000))
@ALWAYS_JSON_OPTION
@click.pass_obj
def poll(settings: Settings, agent: str | None, limit: int) -> None:
    """Print unacknowledged messages as JSON lines (does not move the cursor)."""
    for message in settings.open_bus().poll(agent or default_agent(), limit=limit):
        emit_message(message)


@msg.command()
@click.argument("seq", type=int)
@click.option(
    "--agent",
    metavar="ID",
    callback=checked_agent,
    help="Reader (default: $ORCHESTRATE_JOB or hq).",
)
@ALWAYS_JSON_OPTION
@click.pass_obj
def ack(settings: Settings, seq: int, agent: str | None) -> None:
    """Acknowledge everything up to SEQ after processing it (never moves back)."""
    reader = agent or default_agent()
    emit({"agent": reader, "last_acked_seq": settings.open_bus().ack(reader, seq)})


@msg.command()
@click.option("--task", metavar="ID", help="Only messages about this task/job.")
@click.option(
    "--since", type=click.IntRange(0, MAX_SEQ), help="Start after this seq (default: now)."
)
@click.option("--count", type=click.IntRange(min=1), help="Exit after this many messages.")
@ALWAYS_JSON_OPTION
@click.pass_obj
def follow(settings: Settings, task: str | None, since: int | None, count: int | None) -> None:
    """Tail the bus as JSON lines, like tail -f (stateless: no cursor moves)."""
    click.echo(f"following {settings.db_path} (Ctrl-C to stop)", err=True)
    seen = 0
    try:
        for message in settings.open_bus().follow(after_seq=since, task=task):
            emit_message(message)
            seen += 1
            if count is not None and seen >= count:
                break
    except KeyboardInterrupt:
        pass


@click.command()
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Target file (default: <state>/export/bus.jsonl).",
)
@click.pass_obj
def export(settings: Settings, out: Path | None) -> None:
    """Append bus messages not yet exported to a JSONL file."""
    from bus.export import default_target, export_jsonl

    bus = settings.open_bus()
    target = out or default_target(bus)
    written = export_jsonl(bus, target)
    click.echo(f"exported {counted(written, 'message')} to {target}", err=True)
