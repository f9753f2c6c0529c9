"""The fuzz tests' oracle and generated characters, owing nothing to the product.

What must never reach a widget or a terminal as such is judged by Unicode's own words
(``unicodedata``): the general categories of controls, format characters, line and
paragraph separators and surrogates, and the explicit bidi formatting classes.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

from hypothesis import strategies as st

HIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs")
EXPLICIT_BIDI = frozenset({"LRE", "LRO", "RLE", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


def hidden(text: str, keep: str = "") -> list[str]:
    """The characters of ``text`` (but those in ``keep``) that Unicode calls controls,
    format characters, separators or surrogates, or that set the bidi direction."""
    return [
        char
        for char in text
        if char not in keep
        and (
            unicodedata.category(char) in HIDDEN_CATEGORIES
            or unicodedata.bidirectional(char) in EXPLICIT_BIDI
        )
    ]


# The bidi controls: the explicit ones, and the marks (format characters of a strong
# direction: LRM, RLM, ALM), found by asking Unicode about the whole BMP.
BIDI_CONTROLS = sorted(
    char
    for char in map(chr, range(0x10000))
    if unicodedata.bidirectional(char) in EXPLICIT_BIDI
    or (unicodedata.category(char) == "Cf" and unicodedata.bidirectional(char) in ("L", "R", "AL"))
)
assert {"\u061c", "\u200e", "\u200f", "\u202e", "\u2066"} <= set(BIDI_CONTROLS)

# One generated code point: each hidden category on its own (so the rare ones, a line
# separator or a bidi control, come up as often as the thousands of controls), then any
# code point at all, surrogates and unassigned ones included, and plain ASCII.
hostile_char = st.one_of(
    *(st.characters(categories=[category]) for category in HIDDEN_CATEGORIES),
    st.sampled_from(BIDI_CONTROLS),
    st.characters(exclude_categories=()),
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
)
# A character Unicode does not call hidden, from anywhere in the code space.
shown_char = st.characters(exclude_categories=HIDDEN_CATEGORIES).filter(lambda c: not hidden(c))


def assert_both_ran(outcomes: Counter[str], *kinds: str, share: float = 0.1) -> None:
    """Each of ``kinds`` (say accepted and refused) came up for at least ``share`` of
    the inputs, so neither branch of the code under test went unexercised."""
    total = sum(outcomes.values())
    for kind in kinds:
        assert outcomes[kind] >= share * total, f"{kind}: {dict(outcomes)}"
