"""A selection list drawn like Claude Code 2.1.332's trust dialog, for the real-tmux
test of answers by meaning: the arrow keys move the marker, Enter chooses and
leaves the list (printing ``chosen: <option>``). ``--stuck``: the marker never
moves (a dialog that ignores the arrows).

Usage: python selection_list.py [--stuck] OPTION OPTION… [--anything-else …]
(the words from the first other ``--`` on are ignored: an adapter's own arguments).
The question is Claude Code's, so that its screen rule sees a trust dialog.
"""

from __future__ import annotations

import sys
import termios
import tty

MARKER = "\u276f"


def paint(lines: list[str]) -> None:
    """``lines`` over the screen's top rows, each erased first: in place, as a TUI
    redraws (a clear would push the old frame into tmux's history)."""
    sys.stdout.write("\x1b[H" + "".join(f"\x1b[2K{line}\r\n" for line in lines))
    sys.stdout.flush()


def draw(options: list[str], selected: int) -> None:
    """The whole dialog."""
    marked = [(f" {MARKER} " if i == selected else "   ") + text for i, text in enumerate(options)]
    paint(
        [
            " Quick safety check: Is this a project you created or one you trust?",
            "",
            *marked,
            "",
            " Enter to confirm · Esc to cancel",
        ]
    )


def main(argv: list[str]) -> None:
    stuck = "--stuck" in argv
    options: list[str] = []
    for word in (word for word in argv if word != "--stuck"):
        if word.startswith("--"):
            break
        options.append(word)
    selected = 0
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        draw(options, selected)
        while True:
            key = sys.stdin.read(1)
            if key in ("\r", "\n"):
                break
            if key == "\x1b" and sys.stdin.read(1) == "[":
                arrow = sys.stdin.read(1)
                if not stuck and arrow == "B":
                    selected = min(selected + 1, len(options) - 1)
                elif not stuck and arrow == "A":
                    selected = max(selected - 1, 0)
                draw(options, selected)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    paint([f"chosen: {options[selected]}", *[""] * (len(options) + 4)])
    sys.stdin.read()  # stay, so the pane shows what was chosen


if __name__ == "__main__":
    main(sys.argv[1:])
