"""Seed 000's findings as `reproduce` grades them: the four verdicts of analysis/claims.py from
the rules of analysis/cache_split_claims.py, which the report's "seed's findings" list shows.

The report judges "reproduced / not reproduced / could not be shown" per huge pages value; here
each finding gets one of the four verdicts with the figure that decides it. The mapping keeps
the report's rule and its figures: a "not reproduced" whose 95% interval lies wholly on the
other side of the claim's margin is contradicted, one that reaches across it is noise; "could
not be shown" is noise when a figure exists but no interval decides (one repetition, an interval
across the margin), and cannot when the run did not measure what the claim needs. The report's
first finding (the scan washes the index out unless shared_buffers holds it) is two claims
here, as issue 37 lists them: its two halves can come out differently.

Pure rules over the survival rows and effects (analysis/cache_split.py) that tests feed
directly, and thin adapters from RunData.
"""

from collections.abc import Callable

from pgcachelab.analysis.cache_split import (
    SURVIVAL_TOLERANCE,
    Repetition,
    SurvivalRow,
    huge_pages_effect,
    point_groups,
    survival_table,
)
from pgcachelab.analysis.cache_split_claims import (
    KEPT_MARGIN,
    LOOKUP_PHASES,
    NOT_REPRODUCED,
    NOT_SHOWN,
    SEED_HUGE_PAGES_RATIO,
    Judgement,
    huge_pages_verdict,
    seq_scan_verdict,
)
from pgcachelab.analysis.cache_split_claims import (
    REPRODUCED as SPLIT_REPRODUCED,
)
from pgcachelab.analysis.claims import (
    CANNOT,
    CONTRADICTED,
    NOISE,
    REPRODUCED,
    Figure,
    Verdict,
    at_least,
    at_most,
    cannot,
)
from pgcachelab.analysis.run_data import RunData, repetitions
from pgcachelab.analysis.summary import Effect
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.units import format_bytes

# idx2 beyond 10% of idx1 by its whole 95% interval: the scan washed the index out. The report's
# survival table's rule (SURVIVAL_TOLERANCE), so the page and the report never disagree; the
# seed's washed-out lookups were several times slower, far beyond it.
WASHED_RATIO = SURVIVAL_TOLERANCE
# idx2 within 30% of idx1 where shared_buffers holds the index (KEPT_MARGIN, issue 31: a lookup
# of ~0.1 ms on a busy machine is not timed to 10% in a few repetitions).
KEPT_RATIO = KEPT_MARGIN
NO_HUGE_PAGES_ON = (
    "the run measured no point with huge pages on: huge pages need root (the lab sizes "
    "vm.nr_hugepages for each point), and the seed compares them with huge pages off"
)
NOT_BOTH_WAYS = "no shared_buffers was measured with huge pages both on and off"


# -- the pure rules ---------------------------------------------------------------------------


def effect_figure(what: str, effect: Effect | None) -> Figure | None:
    if effect is None:
        return None
    return Figure(what, effect.ratio, effect.ci_low, effect.ci_high, effect.pairs)


def row_figure(row: SurvivalRow) -> Figure | None:
    """idx2/idx1 at the row's point: the geometric mean of its repetitions with the interval."""
    what = f"idx2/idx1 at {format_bytes(row.shared_buffers_bytes)}"
    what += f", huge_pages={row.huge_pages}" if row.huge_pages else ""
    return effect_figure(what, row.geometric)


def washed_verdict(rows: list[SurvivalRow], index_bytes: int | None) -> Verdict:
    """With shared_buffers smaller than the index, idx2/idx1 at the smallest measured is at
    least WASHED_RATIO by its whole interval (per huge pages value, then combined)."""
    if not index_bytes:
        return cannot("the run stored no index size: no shared_buffers can be said to be small")
    parts = []
    for mode, mine in _by_mode(rows).items():
        below = [row for row in mine if row.shared_buffers_bytes < index_bytes]
        if not below:
            why = f"no shared_buffers smaller than the {format_bytes(index_bytes)} index"
            parts.append((mode, cannot(why)))
            continue
        figure = row_figure(below[0])
        rule = f"the scan washes the index out: idx2/idx1 at least ×{WASHED_RATIO:g}"
        verdict = at_least(figure, WASHED_RATIO, rule) if figure else cannot(_no_ratio(below[0]))
        parts.append((mode, verdict))
    return combine(parts)


def kept_verdict(rows: list[SurvivalRow], index_bytes: int | None) -> Verdict:
    """Where shared_buffers holds the index, idx2/idx1 at most KEPT_RATIO by its whole interval
    at every such shared_buffers; the figure quoted is the one that breaks the claim, else one
    that leaves it open, else the smallest that holds the index."""
    if not index_bytes:
        return cannot("the run stored no index size: no shared_buffers can be said to hold it")
    rule = f"idx2 ≈ idx1: idx2/idx1 at most ×{KEPT_RATIO:g} where shared_buffers holds the index"
    parts = []
    for mode, mine in _by_mode(rows).items():
        holding = [row for row in mine if row.shared_buffers_bytes > index_bytes]
        if not holding:
            why = f"no shared_buffers larger than the {format_bytes(index_bytes)} index"
            parts.append((mode, cannot(why)))
            continue
        verdicts = []
        for row in holding:
            figure = row_figure(row)
            if figure is None:
                verdicts.append(cannot(_no_ratio(row)))
            elif (
                figure.decisive
                and figure.ci_high is not None
                and figure.ci_high < 1 / SURVIVAL_TOLERANCE
            ):
                # cache_split_claims' "cold idx1": idx1 itself read the index from the disk
                why = (
                    "idx1 was slower than idx2 beyond the noise: idx1 did not find the index "
                    "warm, so the ratio says nothing of the scan"
                )
                verdicts.append(cannot(why, figure))
            else:
                verdicts.append(at_most(figure, KEPT_RATIO, rule))
        order = (CONTRADICTED, CANNOT, NOISE, REPRODUCED)
        parts.append((mode, min(verdicts, key=lambda v: order.index(v.outcome))))
    return combine(parts)


def mapped(judgement: Judgement, figure: Figure | None, beyond: Callable[[Figure], bool]):
    """A cache_split_claims judgement as one of the four verdicts, with its figure: "not
    reproduced" is contradicted when `beyond(figure)` (the interval wholly on the other side of
    the claim's margin), else noise; "could not be shown" is noise when there is a figure
    (no interval, or one across the margin), cannot when the run measured nothing to judge."""
    reason = judgement.evidence
    if judgement.outcome == SPLIT_REPRODUCED and figure is not None and figure.decisive:
        return Verdict(REPRODUCED, reason, figure)
    if judgement.outcome == NOT_REPRODUCED and figure is not None and figure.decisive:
        return Verdict(CONTRADICTED if beyond(figure) else NOISE, reason, figure)
    if judgement.outcome == NOT_SHOWN and figure is None:
        return cannot(reason)
    return Verdict(NOISE, reason, figure)


def huge_pages_lookups_verdict(
    judgements: dict[str, Judgement], effects: dict[str, Effect | None], size: str
) -> Verdict:
    """Lookups with huge pages on / off at `size`, the largest shared_buffers measured both
    ways (the report's rule): faster beyond the noise is reproduced; slower beyond it, or an
    interval wholly above the seed's ×0.67, contradicts it."""
    parts = []
    for phase, judgement in judgements.items():
        figure = effect_figure(f"{phase} on/off at {size}", effects.get(phase))
        parts.append((phase, mapped(judgement, figure, _beyond_seed_lookups)))
    return combine(parts)


def _beyond_seed_lookups(figure: Figure) -> bool:
    low = figure.ci_low if figure.ci_low is not None else 0.0
    return low > SEED_HUGE_PAGES_RATIO


def huge_pages_scan_verdict(figure: Figure | None) -> Verdict:
    """The scan with huge pages on / off at the largest shared_buffers measured both ways: at
    most 1 by its whole interval (the seed: a win "only at very large shared_buffers")."""
    if figure is None:
        return cannot(f"{NOT_BOTH_WAYS}, with a scan timed both ways")
    return at_most(figure, 1.0, "huge pages speed the scan at large shared_buffers: on/off < 1")


def seq_verdict(judgements: list[Judgement], figures: dict[str, Figure | None]) -> Verdict:
    """The scan's time at the largest shared_buffers over the smallest (the report's rule):
    faster beyond the noise is reproduced, slower beyond it contradicted, else noise."""
    parts = []
    for judgement in judgements:
        figure = figures.get(judgement.scope)
        parts.append((judgement.scope, mapped(judgement, figure, _slower)))
    return combine(parts)


def _slower(figure: Figure) -> bool:
    return figure.ci_low is not None and figure.ci_low > 1


def combine(parts: list[tuple[str, Verdict]]) -> Verdict:
    """One verdict from its parts (huge pages on and off; idx1 and idx2): contradicted when
    any part is, else reproduced when any is, else noise, else cannot; the deciding part's
    figure, and every other part's verdict in the reason."""
    if not parts:
        return cannot("the run measured no cache-wash repetition")
    order = (CONTRADICTED, REPRODUCED, NOISE, CANNOT)
    scope, decider = min(parts, key=lambda part: order.index(part[1].outcome))
    if len(parts) == 1:
        return decider
    others = "; ".join(f"{name or 'all'}: {v.text()}" for name, v in parts if v is not decider)
    reason = f"{scope}: {decider.reason} (also {others})"
    return Verdict(decider.outcome, reason, decider.figure)


def _by_mode(rows: list[SurvivalRow]) -> dict[str, list[SurvivalRow]]:
    """Rows per huge pages value, on first (the seed's order), each by shared_buffers."""
    found: dict[str, list[SurvivalRow]] = {}
    for row in sorted(rows, key=lambda r: (r.huge_pages != "on", r.shared_buffers_bytes)):
        found.setdefault(row.huge_pages, []).append(row)
    return found


def _no_ratio(row: SurvivalRow) -> str:
    return (
        f"no idx2/idx1 at {format_bytes(row.shared_buffers_bytes)}: its idx1 median is 0 "
        "(pgbench's log of an old run)"
    )


# -- from a run ---------------------------------------------------------------------------------


def index_bytes_of(data: RunData) -> int | None:
    """The workload's index size (cache_wash.data of any measurement)."""
    for result in data.points:
        for m in result.ok:
            sizes = (m.metrics.get("cache_wash") or {}).get("data") or {}
            if sizes.get("index_bytes"):
                return sizes["index_bytes"]
    return None


def scan_washes_index(data: RunData) -> Verdict:
    return washed_verdict(survival_table(repetitions(data)), index_bytes_of(data))


def shared_buffers_keeps_index(data: RunData) -> Verdict:
    return kept_verdict(survival_table(repetitions(data)), index_bytes_of(data))


def _largest_both_ways(reps: list[Repetition]) -> tuple[int, list[Repetition]] | None:
    groups = point_groups(reps)
    both = [sb for (mode, sb) in groups if mode == "on" and ("off", sb) in groups]
    if not both:
        return None
    largest = max(both)
    return largest, [r for r in reps if r.shared_buffers_bytes == largest]


def _why_not_both_ways(reps: list[Repetition]) -> str:
    if not reps:
        return "the run measured no cache-wash repetition"
    return NOT_BOTH_WAYS if any(r.huge_pages == "on" for r in reps) else NO_HUGE_PAGES_ON


def huge_pages_lookups(data: RunData) -> Verdict:
    reps = repetitions(data)
    found = _largest_both_ways(reps)
    if found is None:
        return cannot(_why_not_both_ways(reps))
    largest, at_largest = found
    judgements = {j.scope: j for j in huge_pages_verdict(reps).judgements}
    effects = {phase: huge_pages_effect(at_largest, phase) for phase in LOOKUP_PHASES}
    return huge_pages_lookups_verdict(judgements, effects, format_bytes(largest))


def huge_pages_scan(data: RunData) -> Verdict:
    reps = repetitions(data)
    found = _largest_both_ways(reps)
    if found is None:
        return cannot(_why_not_both_ways(reps))
    largest, at_largest = found
    what = f"seq on/off at {format_bytes(largest)}, the largest measured both ways"
    return huge_pages_scan_verdict(effect_figure(what, huge_pages_effect(at_largest, "seq")))


def larger_shared_buffers_speeds_scan(data: RunData) -> Verdict:
    reps = repetitions(data)
    report = seq_scan_verdict(reps)
    figures: dict[str, Figure | None] = {}
    for judgement in report.judgements:
        mode = judgement.scope.removeprefix("huge_pages=")
        scans = {
            sb: [t for r in group if (t := r.mean("seq")) > 0]
            for (hp, sb), group in point_groups(reps).items()
            if hp == mode
        }
        scans = {sb: times for sb, times in scans.items() if times}
        if len(scans) < 2:
            figures[judgement.scope] = None
            continue
        smallest, largest = min(scans), max(scans)
        ratio, low, high = welch_log_ratio(scans[smallest], scans[largest])
        what = f"seq at {format_bytes(largest)} / at {format_bytes(smallest)}"
        what += f", {judgement.scope}" if judgement.scope else ""
        n = min(len(scans[smallest]), len(scans[largest]))
        figures[judgement.scope] = Figure(what, ratio, low, high, n)
    return seq_verdict(list(report.judgements), figures)
