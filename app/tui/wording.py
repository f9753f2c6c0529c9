"""Words the control room shows, shaped by their numbers."""

from __future__ import annotations

from registry.wording import counted as counted  # one rule for the CLI and the screens
