"""The Review screen's file list: kind, path and +/- counts of every changed file."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from app.git.diff import FileDiff
from app.tui.widgets.diff_view import visible
from app.tui.widgets.theme import theme_style

KIND_COLOURS = {"A": "success", "D": "error", "R": "accent", "C": "accent"}


class ReviewFiles(DataTable[Text]):
    """One row per changed file; paths are agent data, so every cell is a `Text`."""

    DEFAULT_CSS = """
    ReviewFiles { background: $surface; }
    """

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_column("", key="kind")
        self.add_column("file", key="file")
        self.add_column("+", key="added")
        self.add_column("\u2212", key="deleted")

    def show_files(self, files: Sequence[FileDiff], *, keep_cursor: bool = False) -> None:
        """Replace the rows with these files, in the diff's order (``keep_cursor``: on
        the same row as before, the same review read again)."""
        row = self.cursor_row if keep_cursor else 0
        self.clear()
        rows: list[tuple[Text, Text, Text, Text]] = []
        styles = {kind: theme_style(self.app, colour) for kind, colour in KIND_COLOURS.items()}
        plus, minus = theme_style(self.app, "success"), theme_style(self.app, "error")
        for item in files:
            name = f"{item.old_path} \u2192 {item.path}" if item.old_path else item.path
            kind = Text(item.change, style=styles.get(item.change, ""))
            if item.binary:
                added, deleted = Text("bin"), Text("")
            else:
                added = Text(f"+{item.added}", style=plus)
                deleted = Text(f"\u2212{item.deleted}", style=minus)
            rows.append((kind, Text(visible(name), no_wrap=True), added, deleted))
        self.add_rows(rows)  # row keys are generated: the cursor row is the file's index
        if 0 < row < len(rows):
            self.move_cursor(row=row, scroll=False)
