"""Event protocol v1: building, parsing, limits, detail safety, and fuzzing the parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.detail import check_detail, scrub_detail, unsafe_detail_reason
from registry.errors import InvalidEvent
from registry.events import (
    EVENT_TYPES,
    MAX_DATA_BYTES,
    MAX_DEPTH,
    MAX_EVENT_BYTES,
    TERMINAL_EVENTS,
    Event,
    build_event,
    decode_json,
    event_from_dict,
    is_terminal,
    parse_event,
)

NOW = datetime(2026, 6, 20, 14, 48, 58, tzinfo=UTC)


def valid_dict(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": 1,
        "seq": 2,
        "job_id": "918b0612",
        "event": "progress",
        "timestamp": "2026-06-20T14:48:58Z",
        "detail": "Section 1: MQTT Broker Architecture completed",
        "data": {"custom_metric": 42},
    }
    base.update(overrides)
    return base


def raw(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def reason_of(raw_input: bytes | str) -> str:
    with pytest.raises(InvalidEvent) as info:
        parse_event(raw_input)
    message = str(info.value)
    assert "\n" not in message and message
    return message


# -- building ------------------------------------------------------------------


def test_build_stamps_utc_z_and_round_trips() -> None:
    """A built event is exactly what the parser reads back from its bytes."""
    event = build_event("abc12345", 1, "started", "Job abc12345 started", {"n": 1}, now=NOW)
    assert event.timestamp == "2026-06-20T14:48:58Z"
    assert parse_event(event.to_bytes()) == event
    assert json.loads(event.to_bytes()) == event.to_dict()
    assert list(event.to_dict()) == [
        "schema_version",
        "seq",
        "job_id",
        "event",
        "timestamp",
        "detail",
        "data",
    ]


def test_build_converts_other_timezones_to_utc() -> None:
    tokyo = timezone(timedelta(hours=9))
    event = build_event("abc12345", 1, "started", now=datetime(2026, 6, 20, 23, 0, tzinfo=tokyo))
    assert event.timestamp == "2026-06-20T14:00:00Z"


def test_build_defaults_now_and_empty_data() -> None:
    event = build_event("abc12345", 3, "progress")
    assert event.data == {} and event.detail == ""
    assert event.timestamp.endswith("Z")


def test_to_dict_is_a_copy() -> None:
    """Mutating a to_dict() result never changes the (frozen) event."""
    event = build_event("abc12345", 1, "progress", data={"nested": {"a": 1}}, now=NOW)
    body = event.to_dict()
    body["data"]["nested"]["a"] = 2
    assert event.data == {"nested": {"a": 1}}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"job_id": "ABC12345"}, "job_id"),
        ({"job_id": "abc1234"}, "job_id"),
        ({"job_id": "abc12345\n"}, "job_id"),
        ({"seq": 0}, "seq"),
        ({"seq": True}, "seq"),
        ({"seq": 2**53}, "seq"),
        ({"event": "finished"}, "unknown event"),
        ({"detail": "wrote /home/alice/report.md"}, "absolute path"),
        ({"data": {"x": float("nan")}}, "NaN"),
        ({"data": {"auth_token": "abc"}}, "auth_token"),
        ({"data": {"blob": "x" * MAX_DATA_BYTES}}, "data is"),
        ({"data": {1: "x"}}, "non-string key"),
        ({"data": {"when": datetime.now()}}, "not JSON"),
    ],
)
def test_build_refuses_what_a_subscriber_would_drop(kwargs: dict[str, Any], fragment: str) -> None:
    args: dict[str, Any] = {"job_id": "abc12345", "seq": 1, "event": "progress", "now": NOW}
    args.update(kwargs)
    with pytest.raises(InvalidEvent, match=fragment):
        build_event(**args)


def test_terminal_events() -> None:
    assert {"completed", "error"} == TERMINAL_EVENTS
    assert is_terminal("completed") and is_terminal("error") and not is_terminal("progress")
    event = build_event("abc12345", 9, "error", "validation failed", now=NOW)
    assert event.is_terminal and is_terminal(event)


# -- parsing bad input -----------------------------------------------------------


def test_parse_accepts_the_seed_example_without_auth_token() -> None:
    event = parse_event(raw(valid_dict()))
    assert event == Event(
        job_id="918b0612",
        seq=2,
        event="progress",
        timestamp="2026-06-20T14:48:58Z",
        detail="Section 1: MQTT Broker Architecture completed",
        data={"custom_metric": 42},
    )


def test_parse_accepts_str_and_fractional_seconds() -> None:
    text = json.dumps(valid_dict(timestamp="2026-06-20T14:48:58.123456Z"))
    assert parse_event(text).timestamp == "2026-06-20T14:48:58.123456Z"


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        (b"", "not valid JSON"),
        (b"{", "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[]", "must be a JSON object"),
        (b"null", "must be a JSON object"),
        (raw(valid_dict(schema_version=2)), "schema_version 2 is not supported"),
        (raw(valid_dict(schema_version="1")), "schema_version must be an integer"),
        (raw(valid_dict(schema_version=True)), "schema_version must be an integer"),
        (raw(valid_dict(seq=1.0)), "seq must be an integer"),
        (raw(valid_dict(seq=False)), "seq must be an integer"),
        (raw(valid_dict(seq=-1)), "seq must be between"),
        (raw(valid_dict(job_id="../../etc")), "job_id"),
        (raw(valid_dict(job_id=12345678)), "job_id"),
        (raw(valid_dict(event="PROGRESS")), "unknown event"),
        (raw(valid_dict(timestamp="2026-06-20T14:48:58")), "timestamp"),
        (raw(valid_dict(timestamp="2026-06-20T14:48:58+00:00")), "timestamp"),
        (raw(valid_dict(timestamp="2026-02-30T14:48:58Z")), "not a real date"),
        (raw(valid_dict(detail=None)), "detail must be a string"),
        (raw(valid_dict(data=[])), "data must be a JSON object"),
        (raw(valid_dict(data={"hmac_sig": 5})), "hmac_sig must be a string"),
        (raw(valid_dict(extra=1)), "unknown field"),
        (b'{"schema_version":1,"schema_version":1}', "duplicate key"),
        (raw(valid_dict()).replace(b"42", b"NaN"), "NaN is not allowed"),
        (raw(valid_dict()).replace(b"42", b"-Infinity"), "not allowed"),
        (raw(valid_dict()).replace(b"42", b"1e999"), "out of range"),
        (raw(valid_dict()).replace(b"42", b"9" * 5000), "not valid JSON"),
        (raw(valid_dict(data={"deep": json.loads("[" * 40 + "]" * 40)})), "nested deeper"),
        (b"[" * 100_000, "event is"),
        (b"[" * 60_000, "nested too deeply"),
        (raw(valid_dict(detail="\x1b[2J cleared")), "control character"),
        (raw(valid_dict(detail="\x9b6n asks the terminal")), "control character"),
        (raw(valid_dict(detail="ok \u202efdp.exe")), "control character"),  # bidi override
        (raw(valid_dict(detail="one\u2028two")), "control character"),
        (b'{"detail": "\\ud800"}', "lone surrogate"),
    ],
)
def test_parse_refuses_with_one_line_reason(payload: bytes, fragment: str) -> None:
    assert fragment in reason_of(payload)


@pytest.mark.parametrize("missing", ["schema_version", "seq", "job_id", "event", "data"])
def test_parse_names_missing_fields(missing: str) -> None:
    body = valid_dict()
    del body[missing]
    assert missing in reason_of(raw(body))


def test_parse_refuses_oversized_raw_and_data() -> None:
    huge = raw(valid_dict(data={"blob": "x" * MAX_EVENT_BYTES}))
    assert "over the 65536-byte limit" in reason_of(huge)
    assert "over the 65536-byte limit" in reason_of(huge.decode())
    big_data = raw(valid_dict(data={"blob": "x" * (MAX_DATA_BYTES + 1)}))
    assert "data is" in reason_of(big_data)


def test_parse_refuses_lone_surrogates_that_could_not_be_re_encoded() -> None:
    payload = json.dumps(valid_dict(detail="a\ud800b"))
    assert "not valid Unicode" in reason_of(payload)
    payload = json.dumps(valid_dict(data={"k\udfff": 1}))
    assert "not valid Unicode" in reason_of(payload)


def test_parse_refuses_non_bytes_types() -> None:
    for value in (None, 5, ["x"], {"a": 1}):
        with pytest.raises(InvalidEvent, match="must be bytes or str"):
            parse_event(value)  # type: ignore[arg-type]


def test_depth_limit_is_inclusive() -> None:
    nested: Any = 1
    for _ in range(MAX_DEPTH - 1):
        nested = [nested]
    assert parse_event(raw(valid_dict(data={"d": nested}))).data["d"] == nested
    assert "nested deeper" in reason_of(raw(valid_dict(data={"d": [[nested]]})))


def test_event_from_dict_validates_decoded_values() -> None:
    assert event_from_dict(valid_dict()).seq == 2
    with pytest.raises(InvalidEvent, match="must be a JSON object"):
        event_from_dict("nope")


# -- detail safety ---------------------------------------------------------------

UNSAFE_DETAILS = [
    ("wrote /home/alice/project/report.md", "absolute path"),
    ("see /Users/bob", "absolute path"),
    ("read /etc/passwd", "absolute path"),
    ("output in /srv/build/out", "absolute path"),
    ("cd ~/projects/x", "absolute path"),
    ("saved C:\\Users\\carol\\x.txt", "absolute path"),
    ("saved d:/work/x", "absolute path"),
    ("share \\\\server\\share\\x", "absolute path"),
    ("file:/etc/hosts", "absolute path"),
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "API key"),
    ("token ghp_" + "A1b2" * 9, "GitHub token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijk", "GitHub token"),
    ("aws AKIAIOSFODNN7EXAMPLE in env", "AWS access key"),
    ("slack xoxb-123456789012-abcdef", "Slack token"),
    ("-----BEGIN RSA PRIVATE KEY-----", "private key"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "JSON web"),
    ("Authorization: Bearer abcdef0123456789abcdef", "bearer token"),
    ("login with password=hunter2", "credential assignment"),
    ("API_KEY: 12345", "credential assignment"),
    ("mqtt://worker:s3cret@broker", "credentials in a URL"),
    ("sha256 " + "ab" * 32, "long hex string"),
    # shaped like secrets.token_urlsafe(32); fixed, so test ids are the same every run
    ("token Ugu4itRh0DeEviIRLyDQ8v01AsgaB2MRZ4QtL2PBzGE", "secret"),
    ("x" * 2001, "over the 2000 limit"),
]


@pytest.mark.parametrize(("detail", "label"), UNSAFE_DETAILS)
def test_unsafe_detail_is_refused_on_both_sides(detail: str, label: str) -> None:
    """Publisher and subscriber refuse the same text, and never echo it."""
    with pytest.raises(InvalidEvent, match=label) as built:
        build_event("abc12345", 1, "progress", detail, now=NOW)
    message = reason_of(raw(valid_dict(detail=detail)))
    assert message == str(built.value)
    assert detail[-6:] not in message  # the secret is not repeated in the error


@pytest.mark.parametrize(
    "detail",
    [
        "",
        "Job 918b0612 started",
        "needs write permission to MESSAGING.md",
        "edited src/registry/events.py and tests/",
        "3/4 sections done, and/or more; 50% (2/4)",
        "see https://example.com/docs/a/b for details",
        "committed 0123456789abcdef0123456789abcdef01234567",
        "deep report written and committed to git",
        "renamed some_very_long_snake_case_function_name_for_clarity",
        "multi-line\nwith a\ttab",
        "unicode ok: 정렬 문제 10개 ✓",
        "permission: run rm on build/",
    ],
)
def test_safe_detail_passes(detail: str) -> None:
    check_detail(detail)
    assert build_event("abc12345", 1, "progress", detail, now=NOW).detail == detail


@pytest.mark.parametrize(("detail", "label"), UNSAFE_DETAILS)
def test_scrub_detail_makes_any_text_safe(detail: str, label: str) -> None:
    scrubbed = scrub_detail(detail)
    assert unsafe_detail_reason(scrubbed) is None


@given(st.text(max_size=300))
def test_scrub_detail_output_is_always_safe(text: str) -> None:
    assert unsafe_detail_reason(scrub_detail(text)) is None


# -- fuzzing the parser ------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def assert_parses_or_invalid(payload: bytes | str) -> None:
    try:
        event = parse_event(payload)
    except InvalidEvent as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert parse_event(event.to_bytes()) == event


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_fuzz_arbitrary_bytes(payload: bytes) -> None:
    assert_parses_or_invalid(payload)


@settings(max_examples=300)
@given(json_values)
def test_fuzz_arbitrary_json(value: Any) -> None:
    assert_parses_or_invalid(json.dumps(value).encode())


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([*valid_dict().keys(), "extra"]),
    st.one_of(json_values, st.sampled_from(EVENT_TYPES), st.just(None)),
    st.booleans(),
)
def test_fuzz_mutated_valid_events(name: str, value: Any, delete: bool) -> None:
    body = valid_dict()
    if delete and name in body:
        del body[name]
    else:
        body[name] = value
    assert_parses_or_invalid(json.dumps(body).encode())


@settings(max_examples=300)
@given(st.data())
def test_fuzz_byte_flips_of_a_valid_event(data: st.DataObject) -> None:
    payload = bytearray(raw(valid_dict()))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(payload) - 1))
        payload[index] = data.draw(st.integers(0, 255))
    assert_parses_or_invalid(bytes(payload))


@settings(max_examples=200)
@given(
    st.integers(1, 2**53 - 1),
    st.sampled_from(EVENT_TYPES),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cc"]), max_size=80),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
)
def test_fuzz_build_round_trip(seq: int, name: str, detail: str, data: dict[str, Any]) -> None:
    """Whatever the builder accepts, the parser accepts unchanged."""
    try:
        event = build_event("0a1b2c3d", seq, name, detail, data, now=NOW)
    except InvalidEvent:
        return
    assert parse_event(event.to_bytes()) == event


def test_pure_modules_import_only_stdlib() -> None:
    """events, signing, states and audit stay importable without app, bus or any UI: of
    bus, only the stdlib-only hidden-character class (bus/text.py) that every sink uses."""
    import subprocess
    import sys

    code = (
        "import sys, registry.events, registry.signing, registry.states, registry.audit\n"
        "roots = {m.split('.')[0] for m in sys.modules if m not in ('bus', 'bus.text')}\n"
        "print(sorted(roots & {'app', 'bus', 'textual', 'libtmux', 'paho', 'pyspark', 'rich'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{bad", "note is not valid JSON: Expecting property name"),
        ("[" + "9" * 5000 + "]", "note is not valid JSON: a number has more than 4300 digits"),
        ("[" * 100_000, "note is nested too deeply"),
    ],
    ids=["syntax", "huge-int", "deep"],
)
def test_decode_json_turns_every_failure_into_one_line(text: str, message: str) -> None:
    """Not only JSONDecodeError: huge integers (a ValueError) and deep nesting (a
    RecursionError) too; `publish --data` and `msg send` read their JSON with it."""
    with pytest.raises(InvalidEvent) as caught:
        decode_json(text, "note")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
