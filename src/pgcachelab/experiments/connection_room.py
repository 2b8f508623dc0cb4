"""Room on a cluster the lab manages for a point's clients. Pure.

PostgreSQL's default max_connections is 100, and seed 003's load is 250 clients: a point on a
managed cluster gets max_connections raised to its clients plus the lab's own sessions (the
measurement's, the cache and wait samplers', a prewarm's) unless the spec sets it. An existing
server (--dsn) is never changed: its max_connections is what it is.
"""

DEFAULT_MAX_CONNECTIONS = 100
# The lab's own sessions during a measurement, with room to spare: superuser_reserved_connections
# (3) are not for them, as the lab's role need not be a superuser on every server.
LAB_SESSIONS = 10


def with_room_for_clients(settings: dict[str, str], clients: int | None) -> dict[str, str]:
    """`settings` with max_connections raised for `clients` when the default is too few."""
    if not clients or "max_connections" in settings:
        return settings
    needed = int(clients) + LAB_SESSIONS
    if needed <= DEFAULT_MAX_CONNECTIONS:
        return settings
    return {**settings, "max_connections": str(needed)}
