"""The registry's exception hierarchy; each message is one line a person can act on.

``exit_code`` follows seed 001: 1 not found / bad status, 3 nothing to pick,
and seed 000's subscriber: 2 timeout.
"""

from __future__ import annotations


class RegistryError(Exception):
    """Base of every error raised by ``registry``."""

    exit_code: int = 1


class JobNotFound(RegistryError):
    """No job with that id is registered."""


class SessionNotFound(RegistryError):
    """No session with that label is recorded."""


class InvalidJobInput(RegistryError):
    """A job field failed validation (empty prompt, bad timeout, bad label...)."""


class UnknownStatus(RegistryError):
    """A status name that is not part of the state machine."""


class IllegalTransition(RegistryError):
    """The state machine does not allow this move (e.g. completed -> running)."""


class NoPendingJob(RegistryError):
    """`pick` found no pending job for that agent_session."""

    exit_code = 3


class InvalidEvent(RegistryError):
    """Bytes that are not a valid v1 event: bad JSON, wrong schema_version,
    missing or mistyped fields, unsafe detail text, oversized data."""


class SignatureError(InvalidEvent):
    """A missing or forged HMAC signature on a job that requires signing."""


class EventRejected(RegistryError):
    """A valid event the registry will not apply: duplicate seq, or after a terminal event."""


class RegistryTimeout(RegistryError):
    """Waiting for a job's terminal event ran past its timeout."""

    exit_code = 2


class DuplicateEvent(EventRejected):
    """An event whose (job_id, seq) is already recorded: a retry or a QoS 1 redelivery."""


class EventAfterTerminal(EventRejected):
    """An event for a job that already ended (completed, error or cancelled), or
    one left over from an attempt before the job was resumed."""


class ReservedMessage(RegistryError):
    """A message a sender may not put on the bus: a type or id only the registry writes."""


class TopicMismatch(EventRejected):
    """An event that arrived where its job does not publish: on another job's MQTT
    topic, or filed under another job on the bus. The broker's ACL says who may
    write each topic: for a job that does not sign it is the only proof of who
    spoke, and for one that does it stops a signed event being replayed elsewhere."""
