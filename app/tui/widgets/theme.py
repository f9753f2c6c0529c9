"""Rich styles taken from the running theme, so cell colours follow the theme, and the
look (a glyph and a colour) of every job state and agent activity."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.style import Style
from textual.app import App
from textual.color import Color, ColorParseError

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
# "-lighten-N" reads as "more contrast" on a dark theme: on a light one it is turned into
# "-darken-N" (a light blue on a light background is unreadable), and the foreground's
# "-darken-N" (muted text on a dark theme) into a blend towards the background.
_SHADE = re.compile(r"^(?P<base>[a-z-]+?)-(?P<way>lighten|darken)-(?P<step>[123])$")
MUTED_BLEND = 0.4  # how far muted text moves from the foreground towards the background


@dataclass(frozen=True)
class Look:
    """How one state is drawn everywhere (jobs table, sessions panel, header)."""

    glyph: str  # one terminal cell wide, in the fonts terminals ship
    colour: str  # a theme variable, never a hex colour
    bold: bool = False


# The statuses of the registry and the activities of a running job's agent (SPEC §3).
LOOKS: dict[str, Look] = {
    "pending": Look("○", "warning"),
    "starting": Look("◌", "primary-lighten-2"),
    "working": Look("●", "primary-lighten-2"),
    "running": Look("●", "primary-lighten-2"),  # a running job whose activity is unknown
    "waiting": Look("⚠", "warning", bold=True),
    "blocked": Look("⊗", "warning", bold=True),  # stopped after auto mode refused it
    "paused": Look("⏸", "warning", bold=True),  # orchestrate stopped its turn (budget)
    "idle": Look("◇", "secondary-lighten-2"),
    "stalled": Look("◐", "error-lighten-2", bold=True),
    "exited": Look("■", "foreground-darken-2"),
    "interrupted": Look("↯", "error", bold=True),
    "unknown": Look("?", "warning", bold=True),  # no screen rule explains its screen
    "completed": Look("✓", "success"),
    "error": Look("✗", "error-lighten-1"),
    "cancelled": Look("⊘", "foreground-darken-2"),
}
UNKNOWN_LOOK = Look("?", "foreground")
# The order the header counts activities in: what needs a person first.
ACTIVITY_ORDER = (
    "waiting",
    "blocked",
    "paused",
    "stalled",
    "interrupted",
    "unknown",
    "idle",
    "working",
    "starting",
    "exited",
)


def look_of(state: str) -> Look:
    return LOOKS.get(state, UNKNOWN_LOOK)


def _resolved(app: App[object], variable: str) -> Color | None:
    """The colour of a theme variable, adapted to a light theme (see _SHADE)."""
    variables = app.theme_variables or app.get_css_variables()
    dark = app.current_theme.dark if app.current_theme is not None else True
    shade = _SHADE.match(variable)
    if shade is not None and not dark:
        base, way, step = shade["base"], shade["way"], shade["step"]
        if base == "foreground" and way == "darken":
            foreground = _parse(variables.get(base))
            background = _parse(variables.get("background"))
            if foreground is not None and background is not None:
                return foreground.blend(background, MUTED_BLEND)
        elif way == "lighten":
            variable = f"{base}-darken-{step}"
    return _parse(variables.get(variable))


def _parse(value: str | None) -> Color | None:
    """Textual's colour syntax (`#hex`, `ansi_green`, …); None for what is no colour
    on its own (`auto 60%`)."""
    if not value:
        return None
    try:
        return Color.parse(value)
    except ColorParseError:
        return None


def theme_style(app: App[object], variable: str, *, bold: bool = False) -> Style:
    """The Rich style for a theme variable such as `success` (plain if unknown, or
    empty: asking the app about "" regenerates its every variable, a few ms).

    Parsed with Textual's colour parser: the ANSI themes name colours `ansi_green`,
    which Rich does not read (ansi-dark crashed the control room), and come out as the
    terminal's own palette colours."""
    if not variable:
        return Style(bold=bold)
    colour = _resolved(app, variable)
    return Style(color=colour.rich_color, bold=bold) if colour is not None else Style(bold=bold)


def look_style(app: App[object], state: str) -> Style:
    look = look_of(state)
    return theme_style(app, look.colour, bold=look.bold)
