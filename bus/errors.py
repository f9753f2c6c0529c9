"""The bus's exception hierarchy: every failure a caller can act on has a type.

Each error's message is one readable line; ``exit_code`` is what a command
line tool should exit with when the error reaches it.
"""

from __future__ import annotations


class BusError(Exception):
    """Base of every error raised by ``bus``."""

    exit_code: int = 1


class StateDirError(BusError):
    """The state directory cannot be created or written (read-only, wrong owner)."""


class NotABusDatabase(BusError):
    """The database file exists but is not an SQLite database (or is damaged)."""


class SchemaTooNew(BusError):
    """The database was written by a newer orchestrate; opening it could damage it."""


class DatabaseLocked(BusError):
    """Another process held the write lock beyond busy_timeout."""


class ReadOnlyDatabase(BusError):
    """The database (or its directory) is not writable."""


class InvalidPayload(BusError):
    """A payload that is not JSON, or not JSON-serialisable, or too large."""


class ExportTargetMismatch(BusError):
    """The export's target file holds data the bus did not write there (or was
    edited since): appending or repairing it could destroy someone's file."""


class UnknownAgent(BusError):
    """A message addressed to an agent the bus has never seen."""


class ClaimError(BusError):
    """Base for task-claim failures."""


class TaskNotFound(ClaimError):
    """No task with that id was ever enqueued."""


class StaleClaim(ClaimError):
    """The caller's claim is no longer current: the lease expired and the task
    was claimed again (the attempt number moved on), or it was released."""


class MqttError(BusError):
    """Base for MQTT transport failures."""


class MqttConfigError(MqttError):
    """The MQTT settings (MQTT_* env or a job's broker block) are malformed:
    a port that is not a number in 1-65535, a TLS flag that is not a boolean,
    a CA file that does not exist."""


class InvalidTopic(MqttError):
    """A topic that MQTT refuses: empty, wildcards in a publish, NUL, over 65535 bytes."""


class BrokerUnavailable(MqttError):
    """The broker could not be reached (refused, unreachable, no CONNACK in time)
    after every attempt; retrying later may work."""


class BrokerAuthError(MqttError):
    """The broker refused the connection: bad username/password or not authorised.
    Retrying with the same credentials cannot help, so it is raised at once."""


class MqttTlsError(MqttError):
    """The TLS handshake failed (untrusted certificate, wrong host name, bad
    client key); raised at once, since retrying cannot fix a certificate."""


class PublishNotAcknowledged(MqttError):
    """No PUBACK arrived in time, or the broker answered it with a failure
    reason (for example an ACL refusal reported by an MQTT 5 broker)."""


class PublishRefused(PublishNotAcknowledged):
    """The broker's PUBACK reported a failure (MQTT 5 reason code, e.g. "Not
    authorized" for an ACL refusal); raised at once, never retried."""


class BrokerSetupError(MqttError):
    """``orchestrate broker`` cannot do what was asked: bad port, a directory
    it cannot write, ``mosquitto``/``openssl`` missing, a broker that will not start."""
