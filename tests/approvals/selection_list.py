"""A selection list drawn like Claude Code 2.1.332's trust dialog, for the real-tmux
test of answers by meaning: the arrow keys move the marker, Enter chooses and
leaves the list (printing ``chosen: <option>``). ``--stuck``: the marker never
moves (a dialog that ignores the arrows).

Usage: python selection_list.py [--stuck] [--as AGENT] OPTION OPTION… [--anything-else …]
(the words from the first other ``--`` on are ignored: an adapter's own arguments).
The question is Claude Code's trust question, so that its screen rule sees a trust
dialog; ``--as codex`` or ``--as gemini`` draws that agent's command dialog instead
(its question, numbered options, its marker; Gemini's in a box).
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


STYLES = {
    # agent: (question, marker, numbered, boxed)
    "claude": (" Quick safety check: Is this a project you created or one you trust?",
               MARKER, False, False),
    "codex": ("  Would you like to run the following command?", "\u203a", True, False),
    "gemini": ("Allow execution of [Shell]?", "\u25cf", True, True),
}  # fmt: skip


def draw(options: list[str], selected: int, style: str = "claude") -> None:
    """The whole dialog."""
    question, marker, numbered, boxed = STYLES[style]
    texts = [f"{i + 1}. {text}" if numbered else text for i, text in enumerate(options)]
    marked = [(f" {marker} " if i == selected else "   ") + text for i, text in enumerate(texts)]
    lines = [question, "", *marked, "", " Enter to confirm · Esc to cancel"]
    if boxed:
        top, bottom = "\u256d" + "\u2500" * 70 + "\u256e", "\u2570" + "\u2500" * 70 + "\u256f"
        lines = [top, *(f"\u2502 {line:<68} \u2502" for line in lines), bottom]
    paint(lines)


def main(argv: list[str]) -> None:
    stuck = "--stuck" in argv
    argv = [word for word in argv if word != "--stuck"]
    style = "claude"
    if argv[:1] == ["--as"]:
        style, argv = argv[1], argv[2:]
    options: list[str] = []
    for word in argv:
        if word.startswith("--"):
            break
        options.append(word)
    selected = 0
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        draw(options, selected, style)
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
                draw(options, selected, style)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    paint([f"chosen: {options[selected]}", *[""] * (len(options) + 8)])
    sys.stdin.read()  # stay, so the pane shows what was chosen


if __name__ == "__main__":
    main(sys.argv[1:])
