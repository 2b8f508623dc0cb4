"""The figures that decide seed 000's claims, from a run's repetitions (issue 46).

Pure functions over the repetitions (analysis/cache_split.py), each a ratio in the direction
the seed states (above 1: what the seed says happens), so that one table of the seed's words
(analysis/qualifiers.py) judges every claim the same way (studies/cache_wash/claims.py).

- A ratio at one point (idx2/idx1, idx0/idx1) is the geometric mean of the repetitions' ratios
  of median lookups, with Student's interval on the logs (claims.ratio_figure).
- Two points of one huge pages value (the scan at 1MB against 768MB) are a ratio of geometric
  means with Welch's interval on the logs (analysis/versions.py): a repetition at one
  shared_buffers is not the same sample as the one at another.
- Huge pages on against off are paired by shared_buffers and repetition (the same round).
A repetition whose figure is 0 (an old run's pgbench-logged lookup) is refused (BadFigure),
never dropped.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.analysis.cache_split import Repetition, point_groups
from pgcachelab.analysis.claims import BadFigure, Figure, ratio_figure
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.units import format_bytes

LOOKUP_PHASES = ("idx1", "idx2")
# The seed's lookups once the index is kept: "about 0.08 ms with HugePages and 0.12 ms without".
SEED_HUGE_PAGES_RATIO = 0.08 / 0.12
# The seed's warm-up against its index: pgbench ran the lookup for 100 s at ~0.1 ms a lookup
# (the latencies its charts show), ~1M lookups, on a btree of 75M reals (~1.6 GB, ~200,000
# pages): about 5 lookups per index page. How often the warm-up reads each leaf decides
# whether the OS cache keeps the index through the scan (a leaf read twice is on the kernel's
# active list; docs/study-000-cache-split.md), so the wash-out is judged at this proportion.
SEED_WARMUP_LOOKUPS = 1_000_000
SEED_INDEX_PAGES = 200_000
SEED_WARMUP_PER_INDEX_PAGE = SEED_WARMUP_LOOKUPS / SEED_INDEX_PAGES
BLOCK_BYTES = 8192


def modes(reps: list[Repetition]) -> list[str]:
    """Huge pages values, on first: the seed's order."""
    return sorted({r.huge_pages for r in reps}, key=lambda mode: (mode != "on", mode))


def sizes(reps: list[Repetition], mode: str) -> list[int]:
    """The shared_buffers measured with huge pages `mode`, ascending."""
    return sorted({r.shared_buffers_bytes for r in reps if r.huge_pages == mode})


def both_ways(reps: list[Repetition]) -> list[int]:
    """The shared_buffers measured with huge pages both on and off, ascending."""
    return sorted(set(sizes(reps, "on")) & set(sizes(reps, "off")))


def _scope(mode: str) -> str:
    return f", huge_pages={mode}" if mode else ""


def _ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator; a denominator of 0 gives inf, which ratio_figure refuses."""
    return numerator / denominator if denominator > 0 else math.inf


def survival_figure(reps: list[Repetition], mode: str, size: int) -> Figure | None:
    """idx2/idx1 at one point: the scan washed the index out when above 1."""
    at = [r for r in reps if r.huge_pages == mode and r.shared_buffers_bytes == size]
    what = f"idx2/idx1 at {format_bytes(size)}{_scope(mode)}"
    return ratio_figure(what, [_ratio(r.median("idx2"), r.median("idx1")) for r in at])


def whole_test_ms(rep: Repetition) -> float:
    """The seed's whole test: the two sets of lookups and the scan, as one time."""
    return sum(sum(samples) for samples in rep.samples_ms.values())


def _phase_median(phase: str) -> Callable[[Repetition], float]:
    return lambda rep: rep.median(phase)


def across_sizes_figure(
    reps: list[Repetition],
    mode: str,
    numerator: int,
    denominator: int,
    what: str,
    value: Callable[[Repetition], float],
) -> Figure | None:
    """value at `numerator` / value at `denominator` (shared_buffers, huge pages `mode`): a
    ratio of geometric means with Welch's 95% interval on the logs; None when either side has
    no repetition."""
    groups = point_groups(reps)
    top = [value(r) for r in groups.get((mode, numerator), [])]
    bottom = [value(r) for r in groups.get((mode, denominator), [])]
    if not top or not bottom:
        return None
    for side in (top, bottom):
        for figure in side:
            if not (math.isfinite(figure) and figure > 0):
                raise BadFigure(f"{what}: a repetition measured {figure!r}, not a positive time")
    ratio, low, high = welch_log_ratio(bottom, top)
    return Figure(what, ratio, low, high, min(len(top), len(bottom)))


def phase_across_sizes(
    reps: list[Repetition], mode: str, phase: str, numerator: int, denominator: int
) -> Figure | None:
    """A phase's median time at one shared_buffers over another's (the seed's chart of it)."""
    what = f"{phase} at {format_bytes(numerator)} / at {format_bytes(denominator)}{_scope(mode)}"
    return across_sizes_figure(reps, mode, numerator, denominator, what, _phase_median(phase))


def whole_test_across_sizes(
    reps: list[Repetition], mode: str, numerator: int, denominator: int
) -> Figure | None:
    """The whole test's time (idx1 + seq + idx2) at one shared_buffers over another's."""
    what = (
        f"idx1 + seq + idx2 at {format_bytes(numerator)} / at {format_bytes(denominator)}"
        f"{_scope(mode)}"
    )
    return across_sizes_figure(reps, mode, numerator, denominator, what, whole_test_ms)


def on_off_figure(
    reps: list[Repetition], phase: str, at_sizes: list[int], numerator: str, what: str
) -> Figure | None:
    """A phase's median with huge pages `numerator` over the other value, paired by
    shared_buffers and repetition, over `at_sizes`; None without a pair."""
    other = "off" if numerator == "on" else "on"
    by_key = {(r.huge_pages, r.shared_buffers_bytes, r.repetition): r for r in reps}
    ratios = [
        _ratio(top.median(phase), bottom.median(phase))
        for (mode, size, repetition), top in sorted(by_key.items())
        if mode == numerator
        and size in at_sizes
        and (bottom := by_key.get((other, size, repetition))) is not None
    ]
    return ratio_figure(what, ratios)


def nearest_quarter(measured: list[int], ram_bytes: float | None) -> int | None:
    """The measured shared_buffers that stands for the documentation's "a quarter of RAM":
    the nearest to RAM/4 on a log scale, if within ×√2 of it (the qualifiers' "near")."""
    if not ram_bytes or not measured:
        return None
    quarter = ram_bytes / 4
    nearest = min(measured, key=lambda size: abs(math.log(size / quarter)))
    return nearest if abs(math.log(nearest / quarter)) <= math.log(math.sqrt(2)) else None


@dataclass(frozen=True)
class PrewarmRepetition:
    """Lookups timed right after pg_prewarm (idx0, before the warm-up) and after it (idx1),
    with the index blocks pg_prewarm read."""

    huge_pages: str
    shared_buffers_bytes: int
    repetition: int
    idx0_ms: list[float]
    idx1_ms: list[float]
    prewarmed_index_blocks: int | None = None


def prewarm_figure(found: list[PrewarmRepetition], mode: str, size: int) -> Figure | None:
    """idx0/idx1 at one point: pg_prewarm alone left the lookups slower when above 1."""
    at = [p for p in found if p.huge_pages == mode and p.shared_buffers_bytes == size]
    what = f"idx0/idx1 at {format_bytes(size)}{_scope(mode)}"
    return ratio_figure(
        what, [_ratio(statistics.median(p.idx0_ms), statistics.median(p.idx1_ms)) for p in at]
    )


def warmup_per_index_page(lookups: int | None, index_bytes: int | None) -> float | None:
    """The warm-up's lookups per page of the index; None when either is unknown."""
    if not lookups or not index_bytes:
        return None
    return lookups / (index_bytes / BLOCK_BYTES)
