"""Seed 003's overhead test: what polling shared_buffers once a second costs. Pure functions.

Points differ by `inspect_method` (none = the baseline) and shared_buffers. The tps sag of a
method is paired by repetition: with interleaved order, repetition r of every method ran in the
same round, close in time, so the round's drift cancels in tps(method, r) / tps(none, r). The
sag is 1 minus the mean of those ratios, with the 95% t-interval over the rounds.
"""

from dataclasses import dataclass

from pgcachelab.analysis.summary import Summary, summarise

BASELINE = "none"
# Relations this small are left out of "largest relative error (>= 1%)": one buffer of a
# two-buffer relation is 50%, which says nothing about the method.
MATERIAL_SHARE = 0.01


@dataclass(frozen=True)
class Sag:
    method: str
    ratios: Summary  # tps(method) / tps(baseline), per round
    sag_percent: float
    sag_ci_percent: tuple[float, float] | None  # 95%: from the ratios' interval


def paired_sag(baseline: dict[int, float], measured: dict[int, float], method: str) -> Sag | None:
    """The sag of `measured` against `baseline`, both keyed by repetition (round)."""
    rounds = sorted(set(baseline) & set(measured))
    ratios = summarise([measured[r] / baseline[r] for r in rounds if baseline[r]])
    if ratios is None:
        return None
    interval = None
    if ratios.ci_low is not None:
        interval = ((1 - ratios.ci_high) * 100, (1 - ratios.ci_low) * 100)
    return Sag(method, ratios, (1 - ratios.mean) * 100, interval)


@dataclass(frozen=True)
class PairError:
    """fast against consistent in one pair: the largest relative error over relations."""

    largest: float
    relation: str | None
    largest_material: float  # over relations holding >= MATERIAL_SHARE of the used buffers
    relation_material: str | None
    relations: int


def pair_error(fast: dict, consistent: dict) -> PairError:
    """Compare two compacted snapshots (analysis.cache_composition.compact) by relation.

    consistent is the reference; a relation missing from one side counts 0 buffers there,
    which is exact when both kept every relation (the overhead spec sets a large `top`)."""
    fast_buffers = {r["name"]: r["buffers"] for r in fast["relations"]}
    consistent_buffers = {r["name"]: r["buffers"] for r in consistent["relations"]}
    used = max(1, consistent["buffers_used"])
    largest, relation, largest_material, relation_material = 0.0, None, 0.0, None
    for name in sorted(set(fast_buffers) | set(consistent_buffers)):
        reference = consistent_buffers.get(name, 0)
        error = abs(fast_buffers.get(name, 0) - reference) / max(reference, 1)
        if error > largest:
            largest, relation = error, name
        if reference >= MATERIAL_SHARE * used and error > largest_material:
            largest_material, relation_material = error, name
    return PairError(largest, relation, largest_material, relation_material,
                     len(consistent_buffers))  # fmt: skip


def pairs(snapshots: list) -> list[tuple[dict, dict]]:
    """(fast, consistent) data of the accuracy pairs, in the order taken: a "pair-fast"
    snapshot followed directly by its "pair-consistent" one, both successful."""
    found = []
    ordered = sorted(snapshots, key=lambda s: (s.point_index, s.repetition, s.seq))
    for first, second in zip(ordered, ordered[1:], strict=False):
        if (first.label, second.label) == ("pair-fast", "pair-consistent") and (
            first.data is not None and second.data is not None
        ):
            found.append((first.data, second.data))
    return found
