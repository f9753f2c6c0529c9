"""Generated hostile input for the bus guard: JSON text, bus messages, reserved names.

Each property feeds thousands of inputs through one reader and allows only
its documented outcome: a value, or the one error type it documents (never
a UnicodeEncodeError from SQLite, a KeyError, a RecursionError...).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bus.db import BusDB
from bus.errors import InvalidPayload
from bus.messages import Bus, Message, Outgoing
from registry.bus_types import check_sendable, is_reserved_type
from registry.errors import RegistryError, ReservedMessage
from registry.event_trust import WatchedJob, verify_bus_message, verify_payload
from registry.events import build_event, decode_json
from registry.signing import sign

JOB, OTHER, TOKEN = "abcd1234", "0badc0de", "t" * 43
JOBS = {
    JOB: WatchedJob(JOB, f"jobs/{JOB}/events", TOKEN, None),
    OTHER: WatchedJob(OTHER, f"jobs/{OTHER}/events", None, None),
}
# Text as hostile callers make it: any code point, lone surrogates included
# (what undecodable bytes on a command line become), escapes, dashes, dots.
hostile_text = st.text(
    st.one_of(
        st.characters(codec=None),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.sampled_from(list('\\"{}[]:,.-\x1b\x00 \t\nu')),
    ),
    max_size=40,
)
FRAGMENTS = [
    '{"a":', '"a"', "1", ",", "}", "[", "]", '"\\ud800"', '"\\udc00"', '"\\ud83d\\ude00"',
    '"x"', ":", "null", '{"a":1,"a":2}', "-0", "1e5", '"\udcff"', '"\u00e9"',
]  # fmt: skip
json_fragments = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)


@settings(max_examples=3000)
@given(st.one_of(hostile_text, json_fragments))
def test_decode_json_returns_storable_json_or_one_error(text: str) -> None:
    """Whatever it returns can be stored and signed: UTF-8 encodable, keys unique."""
    try:
        value = decode_json(text, "payload")
    except RegistryError as exc:
        assert "\n" not in str(exc)
        return
    json.dumps(value, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a":"\x1b"}', "Invalid control character at line 1 column 7"),
        ('{"a":', "Expecting value at line 1 column 6"),
        ("[1,]", "Expecting value at line 1 column 4"),
    ],
)
def test_a_json_error_says_where_once(text: str, reason: str) -> None:
    """json's own message is kept, its position said once ("... at at line 1" before)."""
    with pytest.raises(RegistryError) as refused:
        decode_json(text, "payload")
    assert str(refused.value) == f"payload is not valid JSON: {reason}"


@settings(max_examples=2000)
@given(kind=hostile_text, msg_id=hostile_text)
def test_reserved_names_are_refused_with_one_line(kind: str, msg_id: str) -> None:
    message = Outgoing(type=kind, from_agent="w", id=msg_id or "x")
    try:
        check_sendable(message)
    except ReservedMessage as exc:
        assert "\n" not in str(exc) and "\x1b" not in str(exc)
        return
    assert not is_reserved_type(kind)


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Bus:
    return Bus(BusDB(Path(tmp_path_factory.mktemp("bus"))))


@settings(max_examples=1500, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=hostile_text,
    sender=hostile_text,
    correlation=st.none() | hostile_text,
    payload=st.recursive(
        st.none() | st.booleans() | st.integers() | hostile_text,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3)
        ),
        max_leaves=8,
    ),
)
def test_the_bus_stores_a_message_or_refuses_it_as_invalid(
    bus: Bus, kind: str, sender: str, correlation: str | None, payload: object
) -> None:
    """Lone surrogates and blank types used to reach SQLite as UnicodeEncodeError."""
    message = Outgoing(type=kind, from_agent=sender, payload=payload, correlation_id=correlation)
    try:
        published = bus.publish(message)
    except InvalidPayload as exc:
        assert "\n" not in str(exc)
        return
    (stored,) = bus.read_after(published.seq - 1, limit=1)
    assert stored.type == kind and stored.payload == payload


signed = sign(build_event(JOB, 3, "completed", "done"), TOKEN).to_dict()


@settings(max_examples=2000)
@given(
    correlation=st.sampled_from([JOB, OTHER, None, "x"]),
    kind=st.sampled_from(["job.event", "status"]),
    edits=st.dictionaries(
        st.sampled_from(["seq", "job_id", "event", "detail", "data", "timestamp", "extra"]),
        st.none() | st.integers(-2, 2**60) | hostile_text | st.just({"hmac_sig": "0" * 64}),
        max_size=3,
    ),
)
def test_only_the_signed_event_filed_under_its_job_is_believed(
    correlation: str | None, kind: str, edits: dict[str, object]
) -> None:
    """Any change to a signed event, or filing it elsewhere, and it is refused."""
    payload = {**signed, **edits}
    message = Message(1, "id", 0, "w", None, kind, correlation, None, payload)
    try:
        event = verify_bus_message(message, JOBS)
    except RegistryError as exc:
        assert "\n" not in str(exc)
        return
    assert (kind, correlation, event.to_dict()) == ("job.event", JOB, signed)
    assert not edits or all(signed.get(k) == v for k, v in edits.items())


@settings(max_examples=1500)
@given(topic=st.sampled_from([f"jobs/{JOB}/events", f"jobs/{OTHER}/events", "x"]),
       raw=st.binary(max_size=200) | st.just(json.dumps(signed).encode()))  # fmt: skip
def test_mqtt_payloads_are_believed_only_on_their_own_topic(topic: str, raw: bytes) -> None:
    try:
        event = verify_payload(raw, JOBS, topic=topic)
    except RegistryError as exc:
        assert "\n" not in str(exc)
        return
    assert topic == f"jobs/{JOB}/events" and event.to_dict() == signed
