"""Event protocol v1 (seed 000 §2): build, validate and parse job events.

Both sides of the wire run the same checks. ``build_event`` (publisher side)
and ``parse_event`` / ``event_from_dict`` (subscriber side) refuse anything
that is not a well-formed v1 event with :class:`~registry.errors.InvalidEvent`,
whose message is one line a person can act on. In particular the ``detail``
text must be *safe*: an absolute path or something that looks like a secret is
refused on both sides rather than scrubbed, so a leak is fixed at its source
instead of being silently rewritten. Those checks live in :mod:`registry.detail`,
signing in :mod:`registry.signing`.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypeGuard

from bus.text import replace_hidden
from registry.detail import check_detail, encodable
from registry.errors import InvalidEvent
from registry.vocabulary import EventType

SCHEMA_VERSION: Final = 1
EVENT_TYPES: Final = tuple(EventType)
TERMINAL_EVENTS: Final = frozenset({EventType.COMPLETED, EventType.ERROR})
FIELDS: Final = ("schema_version", "seq", "job_id", "event", "timestamp", "detail", "data")
SIGNATURE_FIELD: Final = "hmac_sig"

MAX_EVENT_BYTES: Final = 64 * 1024
"""Largest raw event accepted by the parser (an MQTT payload or a bus row)."""
MAX_DATA_BYTES: Final = 32 * 1024
"""Largest ``data`` object, measured as compact UTF-8 JSON."""
MAX_DEPTH: Final = 16
"""Deepest nesting of lists/objects inside ``data``."""
MAX_SEQ: Final = 2**53 - 1
"""Largest seq: the largest integer every JSON implementation holds exactly."""

JSONObject = dict[str, Any]

_JOB_ID = re.compile(r"[0-9a-f]{8}")
# A \uD800-\uDFFF escape: paired ones make one character, a lone one a surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z")


@dataclass(frozen=True)
class Event:
    """One v1 event, already validated. Build with :func:`build_event` or
    :func:`parse_event`; both guarantee every field below is well-formed.
    Treat ``data`` as read-only: to change an event, build a new one."""

    job_id: str
    seq: int
    event: str
    timestamp: str
    detail: str = ""
    data: JSONObject = field(default_factory=dict, hash=False)
    schema_version: int = SCHEMA_VERSION

    @property
    def is_terminal(self) -> bool:
        """True for ``completed`` and ``error``: nothing counts after them."""
        return self.event in TERMINAL_EVENTS

    @property
    def signature(self) -> str | None:
        """The ``data.hmac_sig`` this event carries, if any."""
        value = self.data.get(SIGNATURE_FIELD)
        return value if isinstance(value, str) else None

    def to_dict(self) -> JSONObject:
        """The wire form as a fresh dict (fields in schema order, data deep-copied)."""
        return {
            "schema_version": self.schema_version,
            "seq": self.seq,
            "job_id": self.job_id,
            "event": self.event,
            "timestamp": self.timestamp,
            "detail": self.detail,
            "data": copy.deepcopy(self.data),
        }

    def to_bytes(self) -> bytes:
        """The wire form: compact JSON, UTF-8, exactly what ``parse_event`` reads back."""
        text = json.dumps(
            self.to_dict(), ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )
        return text.encode("utf-8")


def is_terminal(event: Event | str) -> bool:
    """True when ``event`` (an Event or an event name) ends its job."""
    name = event.event if isinstance(event, Event) else event
    return name in TERMINAL_EVENTS


def format_timestamp(moment: datetime | None = None) -> str:
    """ISO-8601 UTC with a ``Z`` and whole seconds; a naive datetime is taken as UTC."""
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_event(
    job_id: str,
    seq: int,
    event: str,
    detail: str = "",
    data: JSONObject | None = None,
    now: datetime | None = None,
) -> Event:
    """A new event stamped ``now`` (default: the current UTC time).

    Raises InvalidEvent for anything ``parse_event`` would refuse, so a
    publisher never puts on the wire what a subscriber must drop.
    """
    return event_from_dict(
        {
            "schema_version": SCHEMA_VERSION,
            "seq": seq,
            "job_id": job_id,
            "event": event,
            "timestamp": format_timestamp(now),
            "detail": detail,
            "data": {} if data is None else data,
        }
    )


def is_job_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a job id: 8 lowercase hex digits (the registry's
    ``secrets.token_hex(4)``). The one test of it, for events, audit logs and the CLI."""
    return isinstance(value, str) and _JOB_ID.fullmatch(value) is not None


def check_job_id(value: object) -> str:
    """``value`` if it is a job id (8 lowercase hex digits), else InvalidEvent."""
    if not is_job_id(value):
        raise InvalidEvent(f"job_id must be 8 lowercase hex digits, got {_one_line(repr(value))}")
    return value


def parse_event(raw: bytes | str) -> Event:
    """Parse one wire event. For ANY input this either returns a valid Event or
    raises InvalidEvent with a one-line reason; nothing else escapes."""
    if isinstance(raw, bytearray | memoryview):
        raw = bytes(raw)
    if isinstance(raw, bytes):
        if len(raw) > MAX_EVENT_BYTES:
            raise InvalidEvent(f"event is {len(raw)} bytes, over the {MAX_EVENT_BYTES}-byte limit")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidEvent(f"event is not UTF-8 (bad byte at offset {exc.start})") from None
    elif isinstance(raw, str):
        text = raw
        size = _utf8_size(text)
        if size > MAX_EVENT_BYTES:
            raise InvalidEvent(f"event is {size} bytes, over the {MAX_EVENT_BYTES}-byte limit")
    else:
        raise InvalidEvent(f"event must be bytes or str, not {type(raw).__name__}")
    obj = decode_json(
        text,
        "event",
        parse_constant=_refuse_constant,
        parse_float=_finite_float,
        object_pairs_hook=_unique_keys,
    )
    return event_from_dict(obj)


def decode_json(text: str, source: str, **hooks: Any) -> Any:
    """Parse JSON text that came from outside (the wire, a command line, a file).

    ``json.loads`` fails in more ways than ``JSONDecodeError``: an integer of
    more digits than CPython converts is a plain ValueError, deep nesting a
    RecursionError. Each becomes one InvalidEvent line naming ``source``, so
    no caller shows a traceback for bad input. ``hooks`` go to ``json.loads``;
    a ValueError they raise is reported the same way.

    Two things ``json.loads`` accepts are refused: a key given twice in one
    object (a signer and a verifier, or two readers, could each take a
    different one) and a ``\\udXXX`` escape that leaves a lone surrogate,
    which is no Unicode text and cannot be stored or shown.
    """
    hooks.setdefault("object_pairs_hook", _unique_keys)
    if not text.isascii() and not encodable(text):  # only a Python caller can pass this
        raise InvalidEvent(f"{source} holds text that is not valid Unicode (a lone surrogate)")
    try:
        value = json.loads(text, **hooks)
    except RecursionError:
        raise InvalidEvent(f"{source} is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, huge ints, the hooks
        if isinstance(exc, json.JSONDecodeError):
            # Some of json's messages end in "at" already ("Invalid control character at").
            reason = f"{exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}"
        elif "integer string conversion" in str(exc):  # CPython's text points at sys.*
            reason = f"a number has more than {sys.get_int_max_str_digits()} digits"
        else:
            reason = str(exc)
        raise InvalidEvent(f"{source} is not valid JSON: {_one_line(reason, 100)}") from None
    if _SURROGATE_ESCAPE.search(text) and not _all_text_encodable(value):
        raise InvalidEvent(f"{source} holds text that is not valid Unicode (a lone surrogate)")
    return value


def _all_text_encodable(value: Any) -> bool:
    """Every string and key in a decoded JSON value is UTF-8 encodable (iterative:
    the value may be as deep as the decoder allowed)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not encodable(item):
                return False
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return True


def event_from_dict(obj: object) -> Event:
    """Validate an already-decoded JSON value as a v1 event (e.g. a bus payload)."""
    if not isinstance(obj, dict):
        raise InvalidEvent(f"event must be a JSON object, not {_json_type(obj)}")
    missing = [name for name in FIELDS if name not in obj]
    if missing:
        raise InvalidEvent(f"event is missing field(s): {', '.join(missing)}")
    extra = sorted(str(name) for name in obj if name not in FIELDS)
    if extra:
        raise InvalidEvent(f"event has unknown field(s): {_one_line(', '.join(extra))}")

    version = obj["schema_version"]
    if not _is_int(version):
        raise InvalidEvent(f"schema_version must be an integer, not {_json_type(version)}")
    if version != SCHEMA_VERSION:
        raise InvalidEvent(
            f"schema_version {_one_line(repr(version))} is not supported "
            f"(expected {SCHEMA_VERSION})"
        )
    seq = obj["seq"]
    if not _is_int(seq):
        raise InvalidEvent(f"seq must be an integer, not {_json_type(seq)}")
    if not 1 <= seq <= MAX_SEQ:
        raise InvalidEvent(f"seq must be between 1 and {MAX_SEQ}, got {_one_line(repr(seq))}")
    job_id = check_job_id(obj["job_id"])
    name = obj["event"]
    if name not in EVENT_TYPES:
        raise InvalidEvent(
            f"unknown event {_one_line(repr(name))} (expected one of {', '.join(EVENT_TYPES)})"
        )
    timestamp = obj["timestamp"]
    _check_timestamp(timestamp)
    detail = obj["detail"]
    if not isinstance(detail, str):
        raise InvalidEvent(f"detail must be a string, not {_json_type(detail)}")
    check_detail(detail)
    data = obj["data"]
    _check_data(data)
    return Event(
        job_id=job_id,
        seq=seq,
        event=name,
        timestamp=timestamp,
        detail=detail,
        data=copy.deepcopy(data),
    )


# -- helpers -----------------------------------------------------------------


def _check_timestamp(value: object) -> None:
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        raise InvalidEvent(
            f"timestamp must be ISO-8601 UTC ending in Z, got {_one_line(repr(value))}"
        )
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise InvalidEvent(f"timestamp is not a real date: {_one_line(value)}") from None


def _check_data(data: object) -> None:
    if not isinstance(data, dict):
        raise InvalidEvent(f"data must be a JSON object, not {_json_type(data)}")
    _check_json_value(data, depth=0, where="data")
    if "auth_token" in data:
        raise InvalidEvent("data.auth_token must never travel on the wire (sign instead)")
    if SIGNATURE_FIELD in data and not isinstance(data[SIGNATURE_FIELD], str):
        raise InvalidEvent(f"data.{SIGNATURE_FIELD} must be a string")
    size = len(
        json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    )
    if size > MAX_DATA_BYTES:
        raise InvalidEvent(f"data is {size} bytes, over the {MAX_DATA_BYTES}-byte limit")


def _check_json_value(value: object, depth: int, where: str) -> None:
    """Walk ``value`` checking it is plain, finite, UTF-8-safe, shallow JSON."""
    if depth > MAX_DEPTH:
        raise InvalidEvent(f"{where} is nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SEQ:
            raise InvalidEvent(f"{where} holds an integer too large for JSON")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidEvent(f"{where} holds NaN or Infinity, which JSON does not allow")
        return
    if isinstance(value, str):
        if not encodable(value):
            raise InvalidEvent(f"{where} holds a string that is not valid Unicode")
        return
    if isinstance(value, list):
        for item in value:
            _check_json_value(item, depth + 1, where)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidEvent(f"{where} has a non-string key")
            if not encodable(key):
                raise InvalidEvent(f"{where} has a key that is not valid Unicode")
            _check_json_value(item, depth + 1, where)
        return
    raise InvalidEvent(f"{where} holds a {type(value).__name__}, which is not JSON")


def _is_int(value: object) -> bool:
    """Integers only: JSON true/false arrive as bool, a subclass of int."""
    return isinstance(value, int) and not isinstance(value, bool)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Refuse duplicate keys: signer and verifier could read different values."""
    result = dict(pairs)
    if len(result) != len(pairs):
        duplicated = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise ValueError(f"duplicate key {duplicated[:40]!r}")
    return result


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _one_line(text: str, limit: int = 60) -> str:
    """Keep error messages to one short line whatever the input held."""
    flat = " ".join(text.split())
    # Lone surrogates first, as readable escapes; then the other hidden characters.
    flat = replace_hidden(flat.encode("utf-8", "backslashreplace").decode("utf-8"), "?")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
