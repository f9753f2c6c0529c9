"""Untrusted text made literal for tmux: `#` doubled where formats expand, a final `;` escaped.

tmux expands formats, `#(shell command)` included, in the session name (`new-session -s`),
window names (`-n`), start directories (`-c`) and `pipe-pane` commands, so a workdir or a
state dir named `x#(reboot)` would run `reboot`. Values read back through `#{...}` are
not expanded again, so only what is written into those arguments needs escaping.

Separately, tmux parses its own argv: an argument ending in `;` ends the command there
and the next arguments run as a new tmux command (`send-keys -l 'a;' run-shell ...`).
Every untrusted argument goes through `argument_literal`, and those tmux expands through
`format_literal` (which does both; checked against real tmux in tests/fuzz).
"""

from __future__ import annotations

import re

# A run of "#" not followed by "[": tmux reads "##" as "#". A run followed by "[" is a
# style (`#[fg=red]`) that tmux copies through as it stands, for the status line to
# draw: doubling it would change the text.
_HASHES = re.compile(r"#++(?!\[)")


def argument_literal(text: str) -> str:
    """``text`` as one tmux argument that tmux takes as written (not expanded).

    >>> argument_literal("yes;")
    'yes\\\\;'
    >>> argument_literal("plain")
    'plain'
    """
    # tmux drops a trailing ";" (a command separator) unless it is written "\;",
    # and then keeps ";" in place of the backslash.
    return f"{text[:-1]}\\;" if text.endswith(";") else text


def expanded_literal(text: str) -> str:
    """``text`` that tmux expands as a format but never parses as an argument: the
    output of a `#(command)` in the status line, which tmux expands again.

    >>> expanded_literal("#(reboot) ok;")
    '##(reboot) ok;'
    """
    return _HASHES.sub(lambda run: run.group() * 2, text)


def format_literal(text: str) -> str:
    """``text`` as an argument tmux expands as a format, so that it comes out as written.

    >>> format_literal("/work/x#(touch y)")
    '/work/x##(touch y)'
    >>> format_literal("#[fg=red] ##[b]")
    '#[fg=red] ##[b]'
    """
    return argument_literal(expanded_literal(text))
