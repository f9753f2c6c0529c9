"""The one way data becomes screen text in the control room: `Text`, never markup, with
every control character made visible.

Labels, prompts, event details, error messages and pane text are untrusted. As markup,
`[/]` crashes a render and `[@click=app.quit]` becomes a clickable action; passed raw, an
ESC starts a sequence that the operator's terminal obeys (and answers, as phantom key
presses). So data reaches a widget only as `as_text(...)` (or through `visible`), and
notifications, which Textual parses as markup by default, go through the app's `notify`,
which calls `visible` and turns markup off.
"""

from __future__ import annotations

import re
from typing import Final

from rich.style import StyleType
from rich.text import Text

from bus.text import replace_hidden

_NEWLINE: Final = re.compile("\r?\n")
REPLACEMENT: Final = "\ufffd"
NEWLINE_MARK: Final = "⏎"


def _stand_in(char: str) -> str:
    """A visible stand-in for a hidden character (``bus/text.py``): C0 by its Unicode
    control picture (ESC is ␛), DEL by ␡, a tab by a space, anything else by U+FFFD."""
    code = ord(char)
    if code == 0x09:
        return " "
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return REPLACEMENT


def visible(text: str, *, one_line: bool = True) -> str:
    """``text`` with nothing hidden in it: control characters shown as stand-ins (so a
    hostile detail is seen for what it is), newlines as ⏎ when it must stay on one line.

    >>> visible("ok\\x1b]0;pwned\\x07 [b]x[/b]")
    'ok␛]0;pwned␇ [b]x[/b]'
    >>> visible("two\\nlines"), visible("two\\r\\nlines", one_line=False)
    ('two⏎lines', 'two\\nlines')
    """
    text = _NEWLINE.sub(NEWLINE_MARK if one_line else "\n", text)
    if one_line:
        return replace_hidden(text, _stand_in)
    return "\n".join(replace_hidden(line, _stand_in) for line in text.split("\n"))


def as_text(text: str, style: StyleType = "", *, one_line: bool = True) -> Text:
    """``text`` as a `Text` drawn exactly as written (no markup is ever parsed from it).

    >>> as_text("[@click=app.quit]quit[/]").plain
    '[@click=app.quit]quit[/]'
    """
    return Text(visible(text, one_line=one_line), style=style, no_wrap=one_line, end="")
