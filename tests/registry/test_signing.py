"""HMAC-SHA256 signing: the canonical form is pinned, forgeries and gaps are refused."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest

from registry.errors import InvalidEvent, SignatureError
from registry.events import MAX_DATA_BYTES, build_event, parse_event
from registry.signing import canonical_payload, compute_signature, sign, verify

TOKEN = "test-token-ü"
FIXED = build_event(
    "abc12345",
    2,
    "progress",
    "Section 1 done — ✓",
    {"b": 1, "a": [1, "x"]},
    now=datetime(2026, 6, 20, 14, 48, 58, tzinfo=UTC),
)
CANONICAL = (
    '{"data":{"a":[1,"x"],"b":1},"detail":"Section 1 done — ✓","event":"progress",'
    '"job_id":"abc12345","schema_version":1,"seq":2,"timestamp":"2026-06-20T14:48:58Z"}'
).encode()
# Computed outside Python: printf '%s' "$CANONICAL" | openssl dgst -sha256 -hmac 'test-token-ü'
PINNED_SIGNATURE = "067035b18cd3ea0578f7de6dadf59a689136cc80ce3081922edd6ea756377fe2"


def test_canonical_form_is_pinned() -> None:
    """Sorted keys, compact separators, raw UTF-8, no hmac_sig: any drift breaks peers."""
    assert canonical_payload(FIXED) == CANONICAL
    assert canonical_payload(sign(FIXED, TOKEN)) == CANONICAL
    independent = hmac.new(TOKEN.encode(), CANONICAL, hashlib.sha256).hexdigest()
    assert independent == PINNED_SIGNATURE
    assert sign(FIXED, TOKEN).signature == PINNED_SIGNATURE
    assert compute_signature(FIXED, TOKEN) == PINNED_SIGNATURE


def test_signed_event_verifies_after_the_wire() -> None:
    signed = sign(FIXED, TOKEN)
    wire = signed.to_bytes()
    assert TOKEN.encode() not in wire
    verify(parse_event(wire), TOKEN)


def test_wire_key_order_and_whitespace_do_not_matter() -> None:
    body = sign(FIXED, TOKEN).to_dict()
    shuffled = json.dumps(dict(reversed(list(body.items()))), indent=4, ensure_ascii=True)
    verify(parse_event(shuffled), TOKEN)


def test_missing_signature_is_refused() -> None:
    with pytest.raises(SignatureError, match="missing signature"):
        verify(FIXED, TOKEN)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda body: body.update(detail="Section 2 done"),
        lambda body: body.update(seq=3),
        lambda body: body.update(event="completed"),
        lambda body: body["data"].update(b=2),
        lambda body: body["data"].update(extra=True),
        lambda body: body["data"].update(hmac_sig="0" * 64),
        lambda body: body["data"].update(hmac_sig="not hex"),
    ],
)
def test_forged_or_tampered_events_are_refused(tamper: object) -> None:
    body = sign(FIXED, TOKEN).to_dict()
    tamper(body)  # type: ignore[operator]
    with pytest.raises(SignatureError, match="signature mismatch"):
        verify(parse_event(json.dumps(body)), TOKEN)


def test_wrong_token_is_refused_and_error_is_an_invalid_event() -> None:
    signed = sign(FIXED, TOKEN)
    with pytest.raises(InvalidEvent, match="signature mismatch"):
        verify(signed, "another-token")


def test_empty_token_cannot_sign_or_verify() -> None:
    with pytest.raises(SignatureError, match="empty"):
        sign(FIXED, "")
    with pytest.raises(SignatureError, match="empty"):
        verify(sign(FIXED, TOKEN), "")


def test_resigning_replaces_the_old_signature() -> None:
    twice = sign(sign(FIXED, "old-token"), TOKEN)
    assert twice.signature == PINNED_SIGNATURE
    verify(twice, TOKEN)


def test_signature_cannot_push_data_over_its_limit() -> None:
    filler = "x" * (MAX_DATA_BYTES - len('{"f":""}'))
    event = build_event("abc12345", 1, "progress", data={"f": filler})
    with pytest.raises(InvalidEvent, match="data is"):
        sign(event, TOKEN)


def test_an_event_holding_its_own_token_is_never_signed() -> None:
    """Whatever the detail heuristics miss, the token itself cannot ride along."""
    token = "Abcdefghijklmnopqrstuvwxyzabcdefghijklmnopq"  # lowercase runs fool heuristics
    event = build_event("abc12345", 1, "progress", f"token {token}", {"note": "x"})
    with pytest.raises(InvalidEvent, match="its own auth_token"):
        sign(event, token)
    event = build_event("abc12345", 1, "progress", data={"copy": token})
    with pytest.raises(InvalidEvent, match="its own auth_token"):
        sign(event, token)
