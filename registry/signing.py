"""HMAC-SHA256 event signatures keyed by a job's auth_token (SPEC §4).

The signature covers the canonical payload: the whole event with
``data.hmac_sig`` removed, serialised as
``json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
in UTF-8. It travels as lowercase hex in ``data.hmac_sig``; the token never
travels. The canonical form is recomputed from the parsed values, so key
order and whitespace on the wire do not matter.
"""

from __future__ import annotations

import hashlib
import hmac
import json

from registry.errors import InvalidEvent, SignatureError
from registry.events import SIGNATURE_FIELD, Event, event_from_dict


def canonical_payload(event: Event) -> bytes:
    """The exact bytes that are signed: the event minus ``data.hmac_sig``."""
    body = event.to_dict()
    body["data"].pop(SIGNATURE_FIELD, None)
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def compute_signature(event: Event, token: str) -> str:
    """Lowercase hex HMAC-SHA256 of :func:`canonical_payload`, keyed by ``token``."""
    if not token:
        raise SignatureError("auth_token is empty: cannot sign or verify")
    return hmac.new(token.encode("utf-8"), canonical_payload(event), hashlib.sha256).hexdigest()


def sign(event: Event, token: str) -> Event:
    """A copy of ``event`` carrying its signature in ``data.hmac_sig``
    (any previous signature is replaced). Raises InvalidEvent if the event
    holds the token itself, or if the signature would push data over its limit."""
    signature = compute_signature(event, token)
    # The heuristics in detail.check_detail can miss a random token; this cannot.
    # (Tokens under 8 characters would match ordinary text; real ones are 43.)
    if len(token) >= 8 and token in event.to_bytes().decode("utf-8"):
        raise InvalidEvent("event contains its own auth_token: refusing to sign (it never travels)")
    body = event.to_dict()
    body["data"][SIGNATURE_FIELD] = signature
    # Re-validate: the signature adds bytes and must not push data over its limit.
    return event_from_dict(body)


def verify(event: Event, token: str) -> None:
    """Return if ``event`` is signed with ``token``; raise SignatureError
    ("missing signature" / "signature mismatch") otherwise."""
    carried = event.signature
    if carried is None:
        raise SignatureError(f"job {event.job_id} seq {event.seq}: missing signature")
    expected = compute_signature(event, token)
    if not hmac.compare_digest(carried.encode("utf-8", "replace"), expected.encode("ascii")):
        raise SignatureError(f"job {event.job_id} seq {event.seq}: signature mismatch")
