"""Room on a cluster the lab manages for a point's clients. Pure.

PostgreSQL's default max_connections is 100, and seed 003's load is 250 clients: a point on a
managed cluster gets max_connections raised to its clients plus the lab's own sessions (the
measurement's, the cache and wait samplers', a prewarm's) unless the spec sets it. An existing
server (--dsn) is never changed: its max_connections is what it is.
"""

# initdb's choice on any host with room for it
DEFAULT_MAX_CONNECTIONS = 100
# The lab's own sessions during a measurement (the measurement's, the samplers'), with room to
# spare: superuser_reserved_connections (3) are not for them.
ROOM_FOR_THE_LAB = 10
# The most the lab raises it to by itself: every client is a server process, and beyond a few
# thousand a 2-core machine measures its scheduler; a spec that wants more sets max_connections
# (experiments/preflight.py refuses clients beyond it before anything starts).
MOST_RAISED = 5000


def with_room_for_clients(settings: dict[str, str], clients: int | None) -> dict[str, str]:
    """`settings` with max_connections raised for `clients` when the default is too few, up
    to MOST_RAISED."""
    if not clients or "max_connections" in settings:
        return settings
    needed = int(clients) + ROOM_FOR_THE_LAB
    if needed <= DEFAULT_MAX_CONNECTIONS:
        return settings
    return {**settings, "max_connections": str(min(needed, MOST_RAISED))}
