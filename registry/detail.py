"""Safe detail text (seed 000 §2): an event's ``detail`` holds no absolute path, nothing
that looks like a secret and no control character, checked on both sides of the wire.

The checks refuse rather than rewrite, so a leak is fixed at its source;
``scrub_detail`` is for callers that want to redact text before building an event.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Final

from bus.text import find_hidden, replace_hidden
from registry.errors import InvalidEvent

MAX_DETAIL_CHARS: Final = 2000
KEPT: Final = "\t\n"
"""The hidden characters (``bus/text.py``) a detail may hold: tab and newline. The rest
(terminal controls that would repaint the control room and be answered by the
operator's terminal as key presses; bidi and other format characters that reorder or
hide what is shown; line and paragraph separators) are refused, not stripped: the event
is signed as sent, and a stored copy that differs from what was signed could never be
verified again."""

_UNIX_ROOTS = (
    "home|Users|root|etc|var|tmp|opt|usr|srv|mnt|media|private|Volumes|proc|sys|dev|workspace|nix"
)
# The detail patterns are kept as strings: ``re`` compiles each on first use
# and caches it, and a pattern whose keyword is absent is never compiled, so
# a one-shot `orchestrate publish` does not pay to compile all of them.
_PATH_PATTERNS: Final = (  # each one holds a slash or a backslash
    # /home/alice, /etc/passwd, /Users/bob: a well-known root, even alone.
    rf"(?<![\w.~/\\-])/(?:{_UNIX_ROOTS})(?![\w.-])",
    # any other /a/b: two or more absolute components.
    r"(?<![\w.~/\\:-])/[\w.-]+/[\w.-]+",
    # ~/projects, ~alice/x: home-relative, absolute once expanded.
    r"(?<![\w.~/-])~[\w.-]*/",
    # C:\Users, d:/work
    r"(?<![\w])[A-Za-z]:[\\/]",
    # \\server\share
    r"\\\\[\w.-]+\\",
)

# (label, keywords, pattern): every match holds one of the keywords (compared
# with the text lowercased), so a text without any of them skips the pattern.
_SECRET_PATTERNS: Final = (
    ("API key", ("sk-",), r"\bsk-[A-Za-z0-9_-]{16,}"),
    ("GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    ("GitHub token", ("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    ("AWS access key", ("akia", "asia"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("Slack token", ("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("private key", ("-----begin",), r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    ("JSON web token", ("eyj",), r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}"),
    ("bearer token", ("bearer",), r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    (
        "credential assignment",
        ("=", ":"),
        r"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|auth[_-]?token|"
        r"access[_-]?key|client[_-]?secret)\s*[=:]\s*\S+",
    ),
    ("credentials in a URL", ("://",), r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"),
)
# Long random-looking runs: only a text of at least _MIN_RUN characters can hold one.
_MIN_RUN: Final = 32
# 48+ hex digits: longer than a git SHA-1 (40), as long as token_hex(24+).
_LONG_HEX: Final = r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{48,}(?![0-9A-Fa-f])"
_BASE64_RUN: Final = r"[A-Za-z0-9+/_-]{32,}={0,2}"
_LOWER_RUN: Final = r"[a-z]+"


def unsafe_detail_reason(text: str) -> str | None:
    """Why ``text`` is not safe to publish as a detail, or None when it is.

    The reason never quotes the offending text: repeating a secret in an
    error message would leak it into logs.
    """
    if len(text) > MAX_DETAIL_CHARS:
        return f"detail is {len(text)} characters, over the {MAX_DETAIL_CHARS} limit"
    if not encodable(text):
        return "detail is not valid Unicode (lone surrogate)"
    control = find_hidden(text, keep=KEPT)
    if control is not None:
        return f"detail contains a control character at position {control}"
    if "/" in text or "\\" in text:
        for pattern in _PATH_PATTERNS:
            match = re.search(pattern, text)
            if match:
                return f"detail contains an absolute path at position {match.start()}"
    secret = _find_secret(text)
    if secret is not None:
        label, start = secret
        return f"detail contains what looks like a secret ({label}) at position {start}"
    return None


def check_detail(text: str) -> None:
    """Raise InvalidEvent unless ``text`` is safe: no absolute path, nothing
    secret-looking, no control characters, at most MAX_DETAIL_CHARS."""
    reason = unsafe_detail_reason(text)
    if reason is not None:
        raise InvalidEvent(reason)


def scrub_detail(text: str) -> str:
    """``text`` with paths and secret-looking strings replaced by placeholders,
    control characters dropped and the length capped: always passes check_detail."""
    text = replace_hidden(text.encode("utf-8", "replace").decode("utf-8"), "", keep=KEPT)
    for label, _, pattern in _SECRET_PATTERNS:
        text = re.sub(pattern, f"<{label.replace(' ', '-')}>", text)
    text = re.sub(_LONG_HEX, "<long-hex-string>", text)
    text = re.sub(
        _BASE64_RUN, lambda m: "<redacted>" if _looks_random(m.group()) else m.group(), text
    )
    text = _scrub_paths(text)
    if len(text) > MAX_DETAIL_CHARS:
        text = text[: MAX_DETAIL_CHARS - 1] + "…"
    # A replacement can, rarely, join text into a new match; fall back hard.
    return text if unsafe_detail_reason(text) is None else "<redacted>"


def _find_secret(text: str) -> tuple[str, int] | None:
    """(label, position) of the first secret-looking thing in ``text``, if any."""
    lowered = text.lower()
    for label, keywords, pattern in _SECRET_PATTERNS:
        if any(keyword in lowered for keyword in keywords):
            match = re.search(pattern, text)
            if match:
                return label, match.start()
    if len(text) >= _MIN_RUN:
        match = re.search(_LONG_HEX, text)
        if match:
            return "long hex string", match.start()
        for match in re.finditer(_BASE64_RUN, text):
            if _looks_random(match.group()):
                return "long random string", match.start()
    return None


def _scrub_paths(text: str) -> str:
    """Replace each whitespace-delimited word holding an absolute path by ``<path>``."""
    for _ in range(MAX_DETAIL_CHARS):
        starts = [m.start() for p in _PATH_PATTERNS if (m := re.search(p, text))]
        if not starts:
            break
        start = end = min(starts)
        while end < len(text) and not text[end].isspace():
            end += 1
        text = text[:start] + "<path>" + text[end:]
    return text


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _looks_random(run: str) -> bool:
    """A token-like run: mixed case and digits, high per-character entropy, and
    short lowercase runs. Words (CamelCase names, relative paths) have long
    lowercase runs ("UserProfile2/Avatar": ser, rofile, vatar); random base64
    averages under two lowercase letters in a row."""
    core = run.rstrip("=")
    if len(core) < 32:
        return False
    classes = (
        any(c.islower() for c in core),
        any(c.isupper() for c in core),
        any(c.isdigit() for c in core),
    )
    if not all(classes):
        return False
    lower_runs = re.findall(_LOWER_RUN, core)
    if sum(map(len, lower_runs)) / len(lower_runs) >= 3.0:
        return False
    counts = Counter(core)
    entropy = -sum(n / len(core) * math.log2(n / len(core)) for n in counts.values())
    return entropy >= 4.0
