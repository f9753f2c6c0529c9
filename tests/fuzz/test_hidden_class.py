"""The one hidden-character class (bus/text.py), checked against Unicode over the whole
code space: every code point, not a sample, judged by `unicodedata` categories and bidi
classes (the oracle owes nothing to the product's code)."""

from __future__ import annotations

import subprocess
import sys

from bus.text import find_hidden, is_hidden, replace_hidden
from tests.fuzz.oracle import hidden

EVERY = "".join(map(chr, range(0x110000)))


def oracle(char: str) -> bool:
    return bool(hidden(char))


def test_every_code_point_is_judged_as_unicode_says() -> None:
    wrong = [f"U+{ord(char):04X}" for char in EVERY if is_hidden(char) != oracle(char)]
    assert wrong == []


def test_the_drifted_characters_are_in_the_one_class() -> None:
    """U+061C was missing from the CLI's copy, U+2028/9 from the labels' (issue 32)."""
    for char in "\u061c\u200e\u200f\u202a\u202e\u2066\u2069\u2028\u2029\x85\x9b\ud800":
        assert is_hidden(char), f"U+{ord(char):04X}"


def test_replacing_over_the_whole_code_space() -> None:
    """Every hidden code point replaced, every other one kept, in one text."""
    replaced = replace_hidden(EVERY, lambda char: f"<{ord(char):x}>")
    expected = "".join(f"<{ord(char):x}>" if oracle(char) else char for char in EVERY)
    assert replaced == expected
    kept = replace_hidden(EVERY, "", keep="\t\n")
    assert kept == "".join(char for char in EVERY if char in "\t\n" or not oracle(char))


def test_finding_the_first_one() -> None:
    shown = "".join(char for char in EVERY if not oracle(char))
    assert find_hidden(shown) is None
    for char in ("\x1b", "\u061c", "\U000e0041", "\u2029", "\udfff"):
        assert find_hidden(f"{shown[:5000]}é{char}x") == 5001
    assert find_hidden("a\tb\nc", keep="\t\n") is None and find_hidden("a\tb") == 1


def test_the_class_needs_nothing_but_the_standard_library() -> None:
    code = (
        "import sys, bus.text\n"
        "print(sorted(m for m in sys.modules if m.startswith(('bus', 'registry', 'app'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "['bus', 'bus.text']"
