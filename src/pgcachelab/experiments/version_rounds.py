"""The schedule of a version sweep (seed 001, issue 19): versions interleaved round by round.

Pure functions. Measuring one version's points, then the next version's, confounds the version
with the hour: in the first archaeology run part of "15 -> 18 faster" was the machine getting
quiet when 18 started. Here every round visits every data group (scale class and the like),
and within a group every version in turn, in an order shuffled per round and group (from the
spec's seed, and recorded with the run). So each version of a cell is measured minutes apart
from the others, in every round, in no fixed order.

Read-write points change the data they run on (pgbench -N updates rows in place and appends
to pgbench_history), and the data of a version and group is initialised once and kept: within
a version's turn the read-only points run first, so that they always see the data as the
previous rounds' read-write points left it, never a mix that depends on where in the round
they fell. The drift of the read-write points themselves is spread over the rounds evenly for
every version, since every version gets the same number of turns with the same points.
"""

import random

from pgcachelab.spec import DATA_KEYS, Point


def group_of(point: Point) -> tuple:
    """What a point needs built besides its server version: its data (scale class, ...)."""
    # A workload without one of the keys (cache-wash has no scale) counts it as None.
    return tuple(str(getattr(point.workload, key, None)) for key in DATA_KEYS if key != "version")


def group_text(point: Point) -> str:
    return (
        ", ".join(
            f"{key}={point.swept[key]}"
            for key in DATA_KEYS
            if key in point.swept and key != "version"
        )
        or "all"
    )


def _writes_last(indexes: list[int], points: list[Point]) -> list[int]:
    """Read-only points first, keeping the order given within each kind."""
    return sorted(indexes, key=lambda p: not points[p].workload.read_only)


def version_rounds(
    points: list[Point], rounds: int, order: str, seed: int
) -> tuple[list[tuple[int, int]], list[dict]]:
    """(point index, repetition) pairs in the order they run, and per round and data group the
    order the versions ran in: {"round", "group", "versions"}.

    `order` applies within a version's turn ("random": shuffled each round; "interleaved" and
    "sequential": as listed, since a round holds one repetition of each point).
    """
    members: dict[tuple, dict[str, list[int]]] = {}
    names: dict[tuple, str] = {}
    for point in points:
        group = group_of(point)
        names.setdefault(group, group_text(point))
        members.setdefault(group, {}).setdefault(str(point.workload.version), []).append(
            point.index
        )
    rng = random.Random(seed)
    planned, record = [], []
    for repetition in range(rounds):
        for group, by_version in members.items():
            versions = list(by_version)
            rng.shuffle(versions)
            record.append({"round": repetition, "group": names[group], "versions": versions})
            for version in versions:
                indexes = list(by_version[version])
                if order == "random":
                    rng.shuffle(indexes)
                planned += [(p, repetition) for p in _writes_last(indexes, points)]
    return planned, record
