"""The control room's notices (toasts): never markup, control characters shown as
such, and a notice about a passing state (a job waiting on a person) can be taken
off the screen once that state has passed, instead of lingering for its timeout."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.notifications import Notification, Notify, SeverityLevel

from app.tui.safe_text import visible


def toast(
    app: App[Any],
    message: str,
    *,
    title: str = "",
    severity: SeverityLevel = "information",
    timeout: float | None = None,
) -> Notification:
    """Show a notice (as `App.notify` does) and hand it back, for `withdraw`. Every
    notice carries data (labels, job ids, errors, pane text): none is ever markup."""
    notification = Notification(
        visible(message, one_line=False),
        visible(title),
        severity,
        app.NOTIFICATION_TIMEOUT if timeout is None else timeout,
        markup=False,
    )
    app.post_message(Notify(notification))
    return notification


def withdraw(app: App[Any], notification: Notification) -> None:
    """Take a notice off the screen before its time (gone already: nothing happens).
    Textual offers no public call for this; `_unnotify` is what its own expiry uses."""
    app._unnotify(notification)
