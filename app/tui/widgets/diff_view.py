"""A diff, drawn line by line: only the lines on screen are ever styled.

`DiffDocument.build` (run in a worker) splits the patch into lines, makes each
one safe to draw (controls shown as symbols, tabs expanded) and notes what
kind of line it is. `DiffView` then renders a line only when it scrolls into
view, colouring the code in it with the Pygments lexer of its file, so a diff
of ten thousand lines opens and scrolls as fast as one of ten.

Every line is data an agent wrote: it becomes a `rich.text.Text`, never markup.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from rich.cells import cell_len
from rich.style import Style
from rich.syntax import Syntax, SyntaxTheme
from rich.text import Text
from textual.cache import LRUCache
from textual.color import Color
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from app.git.diff import FileDiff
from app.tui.safe_text import visible as safe_visible

TAB_SIZE = 4
MAX_LINE_CHARS = 2000  # past this a line is cut: nobody reads it, and it must not stall a frame
SYNTAX_THEME = "ansi_dark"
HEADER, HUNK, ADDED, REMOVED, CONTEXT, NOTE = "h", "@", "+", "-", " ", "\\"


_LINE_KINDS = frozenset((ADDED, REMOVED, NOTE))


def _visible_text(text: str) -> str:
    """``visible`` over many lines at once (newlines kept): tabs expand per line, then
    the control room's one sanitiser, bidi controls included."""
    return safe_visible(text.expandtabs(TAB_SIZE), one_line=False)


def visible(line: str) -> str:
    """A line as it can be drawn: tabs expanded, then the control room's own `visible`
    (control characters as their Unicode pictures, ESC as ␛; bidi controls, which would
    reorder the code under review, as U+FFFD), cut at MAX_LINE_CHARS."""
    shown = safe_visible(line.expandtabs(TAB_SIZE))
    return shown if len(shown) <= MAX_LINE_CHARS else shown[:MAX_LINE_CHARS] + "\u2026"


@dataclass(frozen=True)
class DiffDocument:
    """A whole diff as drawable lines, with the kind of each and where files start."""

    lines: tuple[str, ...]
    kinds: str  # one character per line: h header, @ hunk, + - space, \\ note
    starts: tuple[int, ...]  # the first line of each file
    paths: tuple[str, ...]
    width: int

    @classmethod
    def build(cls, files: Sequence[FileDiff]) -> DiffDocument:
        """Lines and kinds for every file's patch (run in a worker: a 10,000-line diff
        takes some milliseconds). Each file's text is made visible in one pass (tabs
        expanded, controls replaced), then cut into lines."""
        lines: list[str] = []
        kinds: list[str] = []
        starts: list[int] = []
        for item in files:
            starts.append(len(lines))
            text = item.text if item.patch else f"diff --git a/{item.path} b/{item.path}\n"
            shown = _visible_text(text).split("\n")
            while len(shown) > 1 and not shown[-1]:
                shown.pop()  # the patch's last newline ends a line, it does not start one
            hunks = next((n for n, line in enumerate(shown) if line.startswith("@@")), len(shown))
            header = [line for line in shown[:hunks] if line]
            kinds.extend(HEADER * len(header))
            kinds.extend(
                line[:1] if line[:1] in _LINE_KINDS else HUNK if line[:2] == "@@" else CONTEXT
                for line in shown[hunks:]
            )
            lines.extend(header)
            lines.extend(shown[hunks:])
        for index, line in enumerate(lines):
            if len(line) > MAX_LINE_CHARS:
                lines[index] = line[:MAX_LINE_CHARS] + "\u2026"
        width = max((len(line) if line.isascii() else cell_len(line) for line in lines), default=0)
        return cls(tuple(lines), "".join(kinds), tuple(starts), tuple(f.path for f in files), width)

    def file_at(self, line: int) -> int:
        """The index of the file a line belongs to."""
        return max(0, bisect.bisect_right(self.starts, line) - 1)


EMPTY = DiffDocument((), "", (), (), 0)


@lru_cache(maxsize=256)
def _lexer(path: str) -> Lexer | None:
    """The Pygments lexer for a file name (None: plain text)."""
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ValueError:  # pygments' ClassNotFound: no lexer for that name
        return None


class DiffView(ScrollView, can_focus=True):
    """The diff, scrollable both ways, coloured by kind and by the code's language."""

    DEFAULT_CSS = """
    DiffView { background: $surface; color: $foreground; }
    DiffView:focus { background-tint: $foreground 3%; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.document = EMPTY
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        self._theme: SyntaxTheme = Syntax.get_theme(SYNTAX_THEME)
        self._styles: dict[str, Style] = {}
        self._frame_style = Style()

    def show(self, document: DiffDocument, *, keep_position: bool = False) -> None:
        """Show a new diff from its top, or (``keep_position``: the same review read
        again) where the reader was. The document is built off the event loop."""
        self.document = document
        self._cache.clear()
        self.virtual_size = Size(document.width + 1, len(document.lines))
        if not keep_position and self.scroll_offset != (0, 0):
            self.scroll_to(0, 0, animate=False)
        self.refresh()

    def scroll_to_file(self, index: int) -> None:
        """Bring a file's first line to the top."""
        if 0 <= index < len(self.document.starts):
            self.scroll_to(0, self.document.starts[index], animate=False)

    @property
    def top_file(self) -> int:
        """The file whose line is at the top of the view."""
        return self.document.file_at(int(self.scroll_y))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._cache.clear()

    def _kind_styles(self) -> dict[str, Style]:
        """Styles per line kind from the running theme (no hard-coded colours)."""
        if not self._styles:
            theme = self.app.theme_variables
            background = self.styles.background
            if background.a == 0:
                background = Color.parse(theme.get("surface", "#1e1e1e"))

            def tint(variable: str, amount: float) -> Style:
                colour = Color.parse(theme.get(variable, "#808080"))
                return Style(bgcolor=background.blend(colour, amount).rich_color)

            def ink(variable: str, *, bold: bool = False) -> Style:
                colour = theme.get(variable)
                return Style(color=Color.parse(colour).rich_color if colour else None, bold=bold)

            self._styles = {
                HEADER: ink("foreground", bold=True),
                HUNK: ink("accent"),
                ADDED: tint("success", 0.22),
                REMOVED: tint("error", 0.22),
                CONTEXT: Style(),
                NOTE: ink("foreground-darken-2"),
                "+marker": ink("success", bold=True),
                "-marker": ink("error", bold=True),
            }
        return self._styles

    def render_lines(self, crop: Region) -> list[Strip]:
        """Every line of one frame with one look-up of the widget's style (walking the
        DOM for it per line cost more than drawing the line)."""
        self._frame_style = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        style = self._frame_style
        if index >= len(self.document.lines):
            return Strip.blank(width, style)
        strip = self._cache.get(index)
        if strip is None:
            strip = self._render_diff_line(index, style)
            self._cache[index] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)

    def _render_diff_line(self, index: int, base: Style) -> Strip:
        line = self.document.lines[index]
        kind = self.document.kinds[index]
        styles = self._kind_styles()
        if kind in (ADDED, REMOVED, CONTEXT) and line:
            text = Text(line[:1], style=styles.get(f"{kind}marker", Style()), no_wrap=True)
            text.append_text(self._code(line[1:], self.document.file_at(index)))
        else:
            text = Text(line, no_wrap=True)
        text.stylize_before(styles[kind])
        text.stylize_before(base)
        return Strip(text.render(self.app.console), cell_len(line))

    def _code(self, code: str, file_index: int) -> Text:
        """One line of code, coloured by its file's language."""
        lexer = _lexer(self.document.paths[file_index]) if self.document.paths else None
        if lexer is None or not code:
            return Text(code)
        text = Text()
        for token_type, value in lexer.get_tokens(code):
            text.append(value.rstrip("\n"), self._theme.get_style_for_token(token_type))
        return text
