"""Content-addressed storage for payloads too large to keep inline in the database."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from bus.errors import InvalidPayload

INLINE_LIMIT = 4096  # bytes of JSON kept in the messages table; larger goes to a blob
MAX_PAYLOAD = 16 * 1024 * 1024  # refuse anything larger than this outright


class BlobMissing(Exception):
    """A payload_ref whose file is gone (an operator cleaned blobs/ by hand)."""


class BlobCorrupt(BlobMissing):
    """A payload_ref whose file no longer holds the bytes its name hashes: edited or
    damaged, so its payload would be someone else's data."""


class BlobStore:
    """``blobs/sha256-<hex>`` files written atomically (temp + fsync + rename).

    Content addressing makes a retried write a no-op and lets readers never see
    a partial file.
    """

    def __init__(self, directory: Path):
        self.directory = directory

    def path_for(self, ref: str) -> Path:
        if not ref.startswith("sha256-") or not all(
            c in "0123456789abcdef" for c in ref[len("sha256-") :]
        ):
            raise BlobMissing(f"malformed blob ref {ref!r}")
        return self.directory / ref

    def save(self, data: bytes) -> str:
        """Store ``data`` and return its ref; idempotent."""
        ref = "sha256-" + hashlib.sha256(data).hexdigest()
        path = self.directory / ref
        if path.exists():
            return ref
        import tempfile  # only large payloads come here: keep it off the one-shot publish path

        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise
        return ref

    def load(self, ref: str) -> bytes:
        """The blob's bytes, checked against the hash in its name."""
        try:
            data = self.path_for(ref).read_bytes()
        except FileNotFoundError as exc:
            raise BlobMissing(ref) from exc
        if "sha256-" + hashlib.sha256(data).hexdigest() != ref:
            raise BlobCorrupt(ref)
        return data


def encode_payload(payload: Any) -> str:
    """Serialise a payload to JSON text, refusing what JSON cannot carry."""
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidPayload(f"payload is not JSON-serialisable: {exc}") from exc
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: from a "\udc80" escape or bad bytes
            raise InvalidPayload("payload holds a string that is not valid Unicode") from None
    if len(text) > MAX_PAYLOAD // 4 and len(text.encode("utf-8")) > MAX_PAYLOAD:
        raise InvalidPayload(f"payload is larger than {MAX_PAYLOAD // (1024 * 1024)} MiB")
    return text
