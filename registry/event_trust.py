"""Which job events a follower believes: the same checks for MQTT payloads and bus messages.

A follower (`subscribe`, `submit`'s wait) acts on what it reads: a terminal
event ends the wait and sets the exit code. So an event read from MQTT *or*
from the SQLite bus is believed only when it is a v1 event for a job being
followed, arrived where that job publishes (its MQTT topic; filed under its
id on the bus), carries that job's signature when the job signs, and is not
from an attempt before a resume. Anything else is refused with a one-line
reason for the caller to log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bus.messages import Message
from registry.bus_types import JOB_EVENT
from registry.errors import EventRejected, InvalidEvent, TopicMismatch
from registry.events import Event, event_from_dict, parse_event
from registry.jobstore import JobStore
from registry.signing import verify

if TYPE_CHECKING:
    from bus.mqtt import BrokerConfig


class UnexpectedJob(EventRejected):
    """A well-formed event for a job nobody asked to follow (it cannot be verified)."""


@dataclass(frozen=True)
class WatchedJob:
    """One job to follow and what it takes to trust its events.

    ``token`` None means the job does not sign (registered with ``--no-sign``);
    ``broker`` None means it lives on the SQLite bus alone. Events with a seq
    at or below ``seq_floor`` belong to an attempt before a resume (a retained
    terminal event of that attempt must not end the new one).
    """

    job_id: str
    topic: str
    token: str | None
    broker: BrokerConfig | None
    seq_floor: int = 0


def watched_on_bus(store: JobStore, job_ids: Iterable[str]) -> dict[str, WatchedJob]:
    """How to trust the bus events of local jobs, from their records (JobNotFound
    for an id the registry does not hold: nothing could verify its events)."""
    watched = {}
    for job_id in job_ids:
        job = store.get(job_id)
        watched[job_id] = WatchedJob(job_id, job.events_topic, job.auth_token, None, job.seq_floor)
    return watched


def verify_payload(payload: bytes, jobs: Mapping[str, WatchedJob], *, topic: str) -> Event:
    """The event in an MQTT ``payload`` that arrived on ``topic``, if it is
    believable (see the module doc); else InvalidEvent / SignatureError /
    UnexpectedJob / TopicMismatch / EventRejected with a one-line reason."""
    event = parse_event(payload)
    job = _followed(event, jobs)
    if topic != job.topic:
        raise TopicMismatch(
            f"event for job {event.job_id} (seq {event.seq}) arrived on {topic}, "
            f"not on its own topic {job.topic}"
        )
    return _checked(event, job)


def verify_bus_message(message: Message, jobs: Mapping[str, WatchedJob]) -> Event:
    """The event in a `job.event` bus ``message``, if it is believable: the bus's
    filing of a message under a job (its correlation_id) stands for the topic."""
    if message.type != JOB_EVENT:
        raise InvalidEvent(f"bus message {message.seq} is a {message.type!r}, not a job event")
    event = event_from_dict(message.payload)
    job = _followed(event, jobs)
    if message.correlation_id != event.job_id:
        raise TopicMismatch(
            f"event for job {event.job_id} (seq {event.seq}) is filed under job "
            f"{message.correlation_id} on the bus"
        )
    return _checked(event, job)


def _followed(event: Event, jobs: Mapping[str, WatchedJob]) -> WatchedJob:
    job = jobs.get(event.job_id)
    if job is None:
        raise UnexpectedJob(f"event for unexpected job {event.job_id} (seq {event.seq})")
    return job


def _checked(event: Event, job: WatchedJob) -> Event:
    if job.token is not None:
        verify(event, job.token)
    if event.seq <= job.seq_floor:
        raise EventRejected(
            f"job {event.job_id} seq {event.seq} belongs to an attempt before the resume"
        )
    return event
