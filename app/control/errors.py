"""The control room's refusals; RegistryError subclasses, so the CLI prints them as one line."""

from __future__ import annotations

from registry.errors import RegistryError


class OrchestrationError(RegistryError):
    """Base of the refusals the orchestrator itself makes (exit 1)."""


class UnknownAgent(OrchestrationError):
    """An agent kind with no default command, and no --agent-cmd given."""


class NotWaitingForPermission(OrchestrationError):
    """`answer` for a job whose last event is not permission_required, or whose pane shows no
    y/n prompt: typing y/n anywhere else could approve something nobody asked about."""


class AgentNotStarted(OrchestrationError):
    """The agent pane could not be started; the job was moved to error with the reason."""
