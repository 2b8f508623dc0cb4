"""Seed 004's regimes: where the data lives decides the throughput. Pure.

A point's database is within shared_buffers, within the memory left for the OS page cache, or
beyond memory, where the disk decides. Points are placed by their measured database size against
the run's shared_buffers and memory (the emulated machine's limit, or the host's RAM); each
regime's figure is the median of its points' median tps, and the drop past memory is told
against the OS-cache plateau, the regime the seed calls "the database is a big cache".
"""

import statistics
from dataclasses import dataclass

SHARED_BUFFERS, OS_CACHE, DISK = "shared_buffers", "OS cache", "disk"


@dataclass(frozen=True)
class Regime:
    name: str
    points: tuple[str, ...]  # labels, in size order
    smallest_bytes: float
    largest_bytes: float
    median_tps: float  # the median of the points' median tps


def regime_of(size_bytes: float, shared_buffers_bytes: float, memory_bytes: float) -> str:
    if size_bytes <= shared_buffers_bytes:
        return SHARED_BUFFERS
    if size_bytes <= memory_bytes:
        return OS_CACHE
    return DISK


def regimes(
    points: list[tuple[str, float, float]], shared_buffers_bytes: float, memory_bytes: float
) -> list[Regime]:
    """(label, database size, median tps) per point -> the regimes that have points, in order."""
    members: dict[str, list[tuple[str, float, float]]] = {}
    for label, size, tps in sorted(points, key=lambda p: p[1]):
        members.setdefault(regime_of(size, shared_buffers_bytes, memory_bytes), []).append(
            (label, size, tps)
        )
    return [
        Regime(
            name,
            tuple(label for label, _, _ in group),
            group[0][1],
            group[-1][1],
            statistics.median(tps for _, _, tps in group),
        )
        for name in (SHARED_BUFFERS, OS_CACHE, DISK)
        if (group := members.get(name))
    ]


def drop_past_memory(found: list[Regime]) -> float | None:
    """How many times fewer tps past the memory limit than on the in-memory plateau (the
    OS-cache regime, else shared_buffers); None without points on both sides."""
    by_name = {regime.name: regime for regime in found}
    plateau = by_name.get(OS_CACHE) or by_name.get(SHARED_BUFFERS)
    disk = by_name.get(DISK)
    if plateau is None or disk is None or disk.median_tps <= 0:
        return None
    return plateau.median_tps / disk.median_tps
