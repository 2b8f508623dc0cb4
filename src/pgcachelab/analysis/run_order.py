"""What the order a run measured its points in means for a drift of the machine. Pure.

The runner records the order with the run (analysis/run_data.py schedule_of): sequential (all
repetitions of a point together), interleaved (every point once per round), random (each round
shuffled with the seed) or blocks (each round runs the points of one value of `block_by`, then
those of the next: seed 000 ran every huge pages on point, then every off point).
"""

from collections.abc import Mapping, Sequence

from pgcachelab.store.run_types import RunSchedule
from pgcachelab.units import shared_buffers_bytes


def order_note(schedule: RunSchedule, point_settings: Sequence[Mapping[str, object]]) -> str:
    """One line: the order, and where a drift of the machine during the run lands.
    `point_settings`: each point's settings, in point order (the order a round runs them)."""
    order = schedule.get("order", "sequential")
    rounds = _rounds(schedule)
    each_round = f"each of the {rounds} rounds" if rounds else "each round"
    if order == "blocks":
        return _blocks_note(schedule.get("block_by"), rounds, point_settings)
    if order in ("interleaved", "random"):
        how = (
            "in the spec's order"
            if order == "interleaved"
            else f"in an order shuffled per round (seed {schedule.get('seed')})"
        )
        return (
            f"Order: {order}: {each_round} measures every point once, {how}, so a drift of the "
            "machine spreads over all points instead of landing on some."
        )
    if order == "sequential":
        compared = " (the on/off comparison too)" if _compares_huge_pages(point_settings) else ""
        repetitions = schedule.get("repetitions")
        all_of = f"all {repetitions} repetitions" if isinstance(repetitions, int) else "all"
        return (
            f"Order: sequential: {all_of} of a point run together, one point after another, so "
            f"a drift of the machine between points is confounded with the points{compared}: "
            'no interval here can see it; order = "interleaved" would spread it over them.'
        )
    return f"Order: {order}."


def _rounds(schedule: RunSchedule) -> int | None:
    """Every point once per round, warm-up rounds included; None for repetitions = "auto"."""
    repetitions = schedule.get("repetitions")
    if not isinstance(repetitions, int):
        return None
    return repetitions + (schedule.get("warmup_repetitions") or 0)


def _values(key: str, point_settings: Sequence[Mapping[str, object]]) -> list[str]:
    """The key's values in the order the points first have them: the order of the blocks."""
    return list(dict.fromkeys(str(settings.get(key, "")).lower() for settings in point_settings))


def _compares_huge_pages(point_settings: Sequence[Mapping[str, object]]) -> bool:
    return {"on", "off"} <= set(_values("huge_pages", point_settings))


def _blocks_note(
    block_by: str | None, rounds: int | None, point_settings: Sequence[Mapping[str, object]]
) -> str:
    if not block_by:
        return "Order: blocks."
    values = _values(block_by, point_settings)
    if block_by == "huge_pages" and values == ["on", "off"]:
        parts = [
            "Order: blocks by huge_pages (the seed's order: the on points, then the off "
            "points, in each round)."
        ]
        on_sizes = [
            shared_buffers_bytes(None if (text := s.get("shared_buffers")) is None else str(text))
            for s in point_settings
            if str(s.get("huge_pages", "")).lower() == "on"
        ]
        if len(set(on_sizes)) > 1 and on_sizes == sorted(on_sizes, reverse=True):
            parts.append(
                "The on points run from the largest shared_buffers down, so the huge pages "
                "pool shrinks step by step and is grown once a round, for the largest, instead "
                "of at every on point (the kernel may not find the memory to grow it)."
            )
        sides, comparison = "side", "the on/off comparison"
    else:
        blocks = ", then ".join(f"the {block_by}={value} points" for value in values)
        parts = [f"Order: blocks by {block_by} ({blocks}, in each round)."]
        sides, comparison = "value", f"the comparison between {block_by} values"
    but = "But each" if len(parts) > 1 else "Each"  # after the pool's gain, its cost
    parts.append(
        f"{but} {sides} is measured in its own part of each round, so a drift of the machine "
        f"within a round falls on one {sides}: {comparison} carries it."
    )
    if rounds and rounds > 1:
        parts.append(
            f"The {rounds} rounds repeat the blocks in the same order, so a drift that comes "
            "and goes within the run spreads over them, but a steady one puts each later "
            f"block about a block's time further along it in every round: {comparison} "
            "carries that much of it."
        )
    elif rounds == 1:
        parts.append(f"With one round, a drift over the run falls on one {sides} as well.")
    return " ".join(parts)
