"""The one hidden-character class: what no sink may pass on to a terminal as it stands.

Prompts, labels, event details, pane text and error messages can come from a
prompt-injected agent. Every sink (the CLI's output, the control room's `Text`, the
registry's detail check and stored activity, label validation, the broker's
config lines) makes them harmless in its own way, but all of them judge a character
with `is_hidden`, so one sink cannot let through what another stops. The class is
Unicode's own, by general category, not a hand list that drifts:

* ``Cc`` controls: C0 (ESC starts a sequence the terminal obeys), DEL and C1 (``\\x9b``
  is a one-byte CSI);
* ``Cf`` format characters: the bidi marks, embeddings, overrides and isolates (U+061C,
  U+200E/F, U+202A-E, U+2066-9) that show a command in another order than it runs, the
  zero-width characters and the tag characters (U+E0000-E007F) that hide text in plain
  sight;
* ``Zl``/``Zp``, the line and paragraph separators, which split what is shown;
* ``Cs``, lone surrogates, which no terminal can be sent (the write would fail).

Tab and newline are ``Cc`` too: a sink that keeps them says so (``keep="\\t\\n"``).

The class lives in ``bus`` because that is the lowest layer: every sink can import it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Final

HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""The Unicode general categories of hidden characters (see the module docstring)."""


_ASCII_HIDDEN: Final = tuple(
    char for char in map(chr, range(128)) if unicodedata.category(char) in HIDDEN_CATEGORIES
)
"""The hidden ASCII characters (C0 controls and DEL), asked of `unicodedata` too."""


# Python calls no hidden character printable (``str.isprintable`` is false for the
# categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs but the space), so a text is cut (by a
# regex, in C) into its hidden ASCII characters and the runs between them (lines,
# mostly): a run that ``isprintable`` passes whole, and only the others are looked up
# character by character. Pure ASCII text needs only the first regex. One character
# class of the 2,000-odd hidden code points would instead mean asking `unicodedata`
# about all 1.1 million at import (a second of CPU on a busy machine, paid by every
# CLI command).
_ALL_ASCII_HIDDEN: Final = "".join(map(re.escape, _ASCII_HIDDEN))


@functools.lru_cache(maxsize=16)
def _patterns(keep: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The hidden ASCII characters but ``keep``; and those or a run between any two
    hidden ASCII characters (a kept one, such as a newline, is matched by neither, so
    the scan passes it without a call)."""
    hidden = "[" + "".join(re.escape(char) for char in _ASCII_HIDDEN if char not in keep) + "]"
    return re.compile(hidden), re.compile(f"{hidden}|[^{_ALL_ASCII_HIDDEN}]+")


def is_hidden(char: str) -> bool:
    """Whether the one character ``char`` is in the hidden class.

    >>> [is_hidden(c) for c in ("a", "\\x1b", "\\u061c", "\\u2028", "\\ud800", "é")]
    [False, True, True, True, True, False]
    """
    return unicodedata.category(char) in HIDDEN_CATEGORIES


def find_hidden(text: str, *, keep: str = "") -> int | None:
    """The position of the first hidden character in ``text`` not in ``keep``, or None.

    >>> find_hidden("ok\\u202eko"), find_hidden("a\\tb", keep="\\t"), find_hidden("plain")
    (2, None, None)
    """
    if text.isprintable():
        return None
    for match in _patterns(keep)[1].finditer(text):
        piece = match.group()
        if piece.isprintable():
            continue
        for offset, char in enumerate(piece):
            if char not in keep and is_hidden(char):
                return match.start() + offset
    return None


def replace_hidden(text: str, stand_in: Callable[[str], str] | str, *, keep: str = "") -> str:
    """``text`` with each hidden character not in ``keep`` replaced by ``stand_in`` (a
    string, or a function of the character); every other character is left as it is.

    >>> replace_hidden("a\\x1b[31mb\\u2066c", "\\ufffd")
    'a\\ufffd[31mb\\ufffdc'
    >>> replace_hidden("x\\ty\\x07", lambda char: f"<{ord(char)}>", keep="\\t")
    'x\\ty<7>'
    """
    if text.isprintable():
        return text

    def one(char: str) -> str:
        if char in keep or not is_hidden(char):
            return char
        return stand_in(char) if callable(stand_in) else stand_in

    ascii_hidden, pieces = _patterns(keep)
    if text.isascii():
        return ascii_hidden.sub(lambda match: one(match.group()), text)

    def piece(match: re.Match[str]) -> str:
        found = match.group()
        return found if found.isprintable() else "".join(map(one, found))

    return pieces.sub(piece, text)
