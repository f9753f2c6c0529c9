"""The approvals room's refusal: a RegistryError, so the CLI prints it as one line (exit 1)."""

from __future__ import annotations

from registry.errors import RegistryError


class NotWaitingForPermission(RegistryError):
    """`answer` for a job whose last event is not permission_required, or whose pane shows no
    y/n prompt: typing y/n anywhere else could approve something nobody asked about."""


class UnrecognisedDialog(RegistryError):
    """The dialog on screen is not one orchestrate can answer by meaning: an option it
    cannot read, an answer no single option means, or a marker that did not move.
    Nothing was confirmed; a person answers it (attach)."""
