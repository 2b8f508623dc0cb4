"""What every probe is, and the pure arithmetic of before/after snapshots."""

from typing import Protocol

import psycopg


class Probe(Protocol):
    """A named source of numbers around a measurement."""

    name: str

    def available(self, conn: psycopg.Connection) -> bool: ...

    def collect(self, conn: psycopg.Connection) -> dict: ...


def snapshot(conn: psycopg.Connection, probes: list[Probe]) -> dict:
    """Collect every probe; an unavailable one is recorded as absent instead of raising."""
    result = {}
    for probe in probes:
        if probe.available(conn):
            result[probe.name] = probe.collect(conn)
        else:
            result[probe.name] = {"absent": True}
    return result


def delta(before, after):
    """after - before for every number in two same-shaped nested dicts; other values from after.

    Counters that went backwards (a stats reset, a restart) give None, not a negative delta.
    """
    if isinstance(after, dict):
        before = before if isinstance(before, dict) else {}
        return {key: delta(before.get(key), value) for key, value in after.items()}
    if isinstance(after, bool) or not isinstance(after, int | float):
        return after
    if not isinstance(before, int | float) or isinstance(before, bool):
        return None
    difference = after - before
    return difference if difference >= 0 else None
