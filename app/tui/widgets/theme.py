"""Rich styles taken from the running theme, so cell colours follow the theme."""

from __future__ import annotations

from rich.style import Style
from textual.app import App

STATUS_COLOURS = {
    "pending": "warning",
    "running": "primary-lighten-2",
    "completed": "success",
    "error": "error-lighten-1",
    "cancelled": "foreground-darken-2",
    "interrupted": "error",  # running, its agent pane gone: R brings it back
}
LIVENESS_COLOURS = {
    "ok": "success",
    "WARN": "warning",
    "STALE": "error-lighten-2",
    "DEAD": "error-lighten-1",
    "unknown": "foreground-darken-2",
    "idle": "foreground-darken-2",
}


def theme_style(app: App[object], variable: str, *, bold: bool = False) -> Style:
    """The Rich style for a theme variable such as `success` (plain if unknown)."""
    colour = app.theme_variables.get(variable) or app.get_css_variables().get(variable)
    return Style(color=colour, bold=bold) if colour else Style(bold=bold)
