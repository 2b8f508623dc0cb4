"""What the server's client backends are waiting on, from pg_stat_activity (issue 22). Pure.

One sample is a count of active backends per wait event, "type:event", or RUNNING for an
active backend with no wait event (on a CPU, or waiting on something that reports none, such as
a spinlock). pg_stat_activity has wait_event_type and wait_event from PostgreSQL 9.6; 9.5 and
older had only a `waiting` flag for heavyweight locks, which says nothing about LWLocks.

The lab's own sessions (the cache sampler, this sampler) are left out: their waits are not
the load's. From PostgreSQL 10 pg_stat_activity also lists background processes: only client
backends count.
"""

from dataclasses import dataclass, field

WAIT_EVENTS_SINCE = 90600  # server_version_num
APPLICATION_PREFIX = "pgcachelab-"  # the lab's sessions: pgcachelab-sampler, pgcachelab-waits
WAIT_SAMPLER_APPLICATION_NAME = f"{APPLICATION_PREFIX}waits"
RUNNING = "running"  # active, no wait event
# The buffer-mapping partition locks, as each version names them: an LWLock tranche in 9.6
# ("LWLockTranche" type), plain LWLock type from 10, renamed BufferMapping in 13.
BUFFER_MAPPING_TYPES = {"LWLockTranche", "LWLock"}
BUFFER_MAPPING_EVENTS = {"buffer_mapping", "BufferMapping"}


@dataclass(frozen=True)
class WaitSample:
    taken_at: float  # Unix time
    backends: dict[str, int] = field(default_factory=dict)  # event name -> active backends


def wait_events_query(server_version_num: int) -> str | None:
    """The sampling query for a server, or None when it has no wait events (before 9.6)."""
    if server_version_num < WAIT_EVENTS_SINCE:
        return None
    client_backends = " and backend_type = 'client backend'" if server_version_num >= 100000 else ""
    return (
        "select wait_event_type, wait_event, count(*) from pg_stat_activity"
        " where state = 'active' and pid <> pg_backend_pid()"
        f" and coalesce(application_name, '') not like '{APPLICATION_PREFIX}%'"
        f"{client_backends} group by 1, 2"
    )


def event_name(wait_event_type: str | None, wait_event: str | None) -> str:
    if wait_event is None:
        return RUNNING
    return f"{wait_event_type}:{wait_event}"


def parse_sample(taken_at: float, rows: list[tuple]) -> WaitSample:
    """A sample from the query's (wait_event_type, wait_event, count) rows."""
    backends: dict[str, int] = {}
    for wait_event_type, wait_event, count in rows:
        name = event_name(wait_event_type, wait_event)
        backends[name] = backends.get(name, 0) + int(count)
    return WaitSample(taken_at, backends)


def is_buffer_mapping(name: str) -> bool:
    """Whether an event name is a wait for a buffer-mapping partition lock, in any version's
    spelling."""
    wait_event_type, _, wait_event = name.partition(":")
    return wait_event_type in BUFFER_MAPPING_TYPES and wait_event in BUFFER_MAPPING_EVENTS
