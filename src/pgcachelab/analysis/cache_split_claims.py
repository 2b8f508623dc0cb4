"""Seed 000's three findings, judged on a run: reproduced, not reproduced, or could not be shown.

Pure functions over the repetitions (analysis/cache_split.py), each reusing the statistics the
report's tables show, so that a verdict can be checked against them: idx2/idx1 by the survival
table's rule, huge pages on/off as the paired ratio, the scan's time across shared_buffers as a
ratio of geometric means with Welch's interval on the logs (analysis/versions.py). Each verdict
quotes the figures it rests on, or says what the run lacks.
"""

from dataclasses import dataclass

from pgcachelab.analysis.cache_split import (
    SURVIVAL_TOLERANCE,
    Repetition,
    SurvivalRow,
    huge_pages_effect,
    point_groups,
    survival_table,
)
from pgcachelab.analysis.summary import Effect
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.units import format_bytes

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_SHOWN = "could not be shown"

# The seed's findings, in its words (translated from the Russian of seed 000's results).
INDEX_KEPT = "PostgreSQL's cache keeps the index through a sequential scan; the OS cache does not"
HUGE_PAGES_WIN = "with huge pages PostgreSQL's cache beats the OS cache at large shared_buffers"
SEQ_SPEEDS_UP = "a larger shared_buffers speeds up the sequential scan"

NO_EFFECT = "no effect beyond the noise on this machine"
# idx2 within 30% of idx1 counts as kept where shared_buffers holds the index (issue 31): a
# lookup of ~0.1 ms on a busy machine is not timed to 10% in a few repetitions
KEPT_MARGIN = 1.3
# The seed's huge pages effect on the lookups at large shared_buffers: ~0.08 ms on, 0.12 off
SEED_HUGE_PAGES_RATIO = 0.08 / 0.12
LOOKUP_PHASES = ("idx1", "idx2")  # the lookups, which the seed's huge pages finding is about


@dataclass(frozen=True)
class Judgement:
    """One part of a verdict: its outcome and the figures it rests on (or why not shown)."""

    outcome: str  # REPRODUCED, NOT_REPRODUCED or NOT_SHOWN
    evidence: str
    scope: str = ""  # the part of the run judged: "huge_pages=on", "idx1"; "" the whole run


@dataclass(frozen=True)
class ClaimVerdict:
    claim: str  # the seed's finding
    judgements: tuple[Judgement, ...]

    @property
    def outcome(self) -> str:
        """The one outcome of every part, or "mixed" when the parts differ."""
        outcomes = {j.outcome for j in self.judgements}
        return outcomes.pop() if len(outcomes) == 1 else "mixed"


def seed_verdicts(reps: list[Repetition], index_bytes: int | None) -> list[ClaimVerdict]:
    """The seed's three findings in its order; `index_bytes`: the index's size, if stored."""
    return [
        index_kept_verdict(reps, index_bytes),
        huge_pages_verdict(reps),
        seq_scan_verdict(reps),
    ]


def _number(value: float) -> str:
    """5.20, 1.02; three significant digits from 10 up (13.6, 437), whole from 1000 up (.3g
    would write 1.23e+03)."""
    if abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.3g}"


def _times(value: float) -> str:
    return f"×{_number(value)}"


def _interval(low: float, high: float) -> str:
    return f"95% CI {_number(low)}–{_number(high)}"


def _effect_text(effect: Effect) -> str:
    if effect.ci_low is None or effect.ci_high is None:
        return f"{_times(effect.ratio)} (one repetition: no interval)"
    return f"{_times(effect.ratio)} ({_interval(effect.ci_low, effect.ci_high)})"


def _modes(reps: list[Repetition]) -> list[str]:
    """Huge pages values, on first: the seed's order."""
    return sorted({r.huge_pages for r in reps}, key=lambda mode: (mode != "on", mode))


def _scope(mode: str) -> str:
    return f"huge_pages={mode}" if mode else ""


# -- 1. the index through the scan ----------------------------------------------------------


def index_kept_verdict(reps: list[Repetition], index_bytes: int | None) -> ClaimVerdict:
    """Reproduced when idx2/idx1 is beyond the survival tolerance at the smallest shared_buffers
    (the index then lives in the OS cache) and within it at every shared_buffers larger than
    the index; judged per huge pages value by the survival table's 95% rule."""
    if not index_bytes:
        why = "the run stored no index size, so no shared_buffers can be said to hold the index"
        return ClaimVerdict(INDEX_KEPT, (Judgement(NOT_SHOWN, why),))
    rows = survival_table(reps)
    return ClaimVerdict(
        INDEX_KEPT,
        tuple(
            _index_kept([row for row in rows if row.huge_pages == mode], index_bytes, _scope(mode))
            for mode in _modes(reps)
        ),
    )


def _ratio_at(row: SurvivalRow) -> str:
    size = format_bytes(row.shared_buffers_bytes)
    if row.geometric is None:
        return f"no idx2/idx1 at {size} (its idx1 median is 0)"
    return f"{_effect_text(row.geometric)} at {size}"


def _index_kept(rows: list[SurvivalRow], index_bytes: int, scope: str) -> Judgement:
    index = format_bytes(index_bytes)
    below = [row for row in rows if row.shared_buffers_bytes < index_bytes]
    holding = [row for row in rows if row.shared_buffers_bytes > index_bytes]
    if not below or not holding:
        missing = "smaller" if not below else "larger"
        why = f"no shared_buffers {missing} than the {index} index was measured"
        return Judgement(NOT_SHOWN, why, scope)
    small = below[0]  # the smallest: the index then lives in the OS cache almost wholly
    kept = {row.shared_buffers_bytes: _kept(row) for row in holding}
    # quoted: the holding point that breaks the finding, else one that leaves it open, else
    # the smallest that holds the index
    quoted = next(
        (row for answer in ("no", "cold idx1", None) for row in holding
         if kept[row.shared_buffers_bytes] == answer),
        holding[0],
    )  # fmt: skip
    figures = f"idx2/idx1 {_ratio_at(small)}; {_ratio_at(quoted)}, which holds the {index} index"
    answers = set(kept.values())
    if small.verdict == "yes":
        return Judgement(
            NOT_REPRODUCED, f"{figures}: the OS cache kept the index through the scan too", scope
        )
    if "no" in answers:
        return Judgement(NOT_REPRODUCED, f"{figures}: shared_buffers did not keep the index", scope)
    if "cold idx1" in answers:
        why = (
            "idx1 was slower than idx2 beyond the noise there, so idx1 did not find the index "
            "warm and the ratio says nothing of the scan"
        )
        return Judgement(NOT_SHOWN, f"{figures}: {why}", scope)
    if small.verdict == "no" and answers == {"yes"}:
        return Judgement(REPRODUCED, figures, scope)
    return Judgement(NOT_SHOWN, f"{figures}: {_undecided([small, quoted])}", scope)


def _kept(row: SurvivalRow) -> str | None:
    """Whether idx2 stayed within KEPT_MARGIN of idx1 at a size that holds the index, by the
    95% interval of the geometric mean ratio: "yes", "no", "cold idx1" (the whole interval
    below 1/1.1: idx1 itself was slow), or None (undecided)."""
    effect = row.geometric
    if effect is None or effect.ci_low is None or effect.ci_high is None:
        return None
    if effect.ci_high < 1 / SURVIVAL_TOLERANCE:
        return "cold idx1"
    if effect.ci_high <= KEPT_MARGIN:
        return "yes"
    if effect.ci_low > KEPT_MARGIN:
        return "no"
    return None


def _undecided(rows: list[SurvivalRow]) -> str:
    if any(row.geometric is None or row.geometric.ci_low is None for row in rows):
        return "a point has one repetition or no ratio, and no interval to judge by"
    washed, kept = (f"{(limit - 1) * 100:.0f}%" for limit in (SURVIVAL_TOLERANCE, KEPT_MARGIN))
    return (
        f"a 95% interval reaches across the margin (idx2 beyond {washed} of idx1 where the index "
        f"is washed out, within {kept} where shared_buffers holds it)"
    )


# -- 2. huge pages at large shared_buffers ---------------------------------------------------


def huge_pages_verdict(reps: list[Repetition]) -> ClaimVerdict:
    """On/off latency of the lookups at the largest shared_buffers measured both ways, paired
    by repetition: reproduced where huge pages are faster and the 95% interval excludes 1."""
    groups = point_groups(reps)
    both = [sb for (mode, sb) in groups if mode == "on" and ("off", sb) in groups]
    if not both:
        why = "no shared_buffers was measured with huge pages both on and off"
        return ClaimVerdict(HUGE_PAGES_WIN, (Judgement(NOT_SHOWN, why),))
    largest = max(both)
    at_largest = [r for r in reps if r.shared_buffers_bytes == largest]
    size = format_bytes(largest)
    return ClaimVerdict(
        HUGE_PAGES_WIN,
        tuple(
            _huge_pages(huge_pages_effect(at_largest, phase), size, phase)
            for phase in LOOKUP_PHASES
        ),
    )


def _huge_pages(effect: Effect | None, size: str, phase: str) -> Judgement:
    if effect is None:
        why = f"at {size} no repetition was measured both on and off with a lookup above 0"
        return Judgement(NOT_SHOWN, why, phase)
    figures = f"on/off {_effect_text(effect)} at {size}, the largest measured both ways"
    if effect.ci_low is None:
        return Judgement(NOT_SHOWN, f"{figures}: one pair gives no interval", phase)
    if effect.significant and effect.ratio < 1:
        return Judgement(REPRODUCED, f"{figures}: faster with huge pages", phase)
    if effect.significant:
        return Judgement(NOT_REPRODUCED, f"{figures}: slower with huge pages", phase)
    if effect.ci_low > SEED_HUGE_PAGES_RATIO:
        seed = f"the seed's {_times(SEED_HUGE_PAGES_RATIO)} is below the interval"
        return Judgement(NOT_REPRODUCED, f"{figures}: {NO_EFFECT}; {seed}", phase)
    return Judgement(NOT_SHOWN, f"{figures}: {NO_EFFECT}, nor one as large as the seed's", phase)


# -- 3. the scan against shared_buffers ------------------------------------------------------


def seq_scan_verdict(reps: list[Repetition]) -> ClaimVerdict:
    """The scan's time at the largest shared_buffers over its time at the smallest, per huge
    pages value: a ratio of geometric means with Welch's 95% interval on the log times."""
    return ClaimVerdict(
        SEQ_SPEEDS_UP,
        tuple(_seq_scan(reps, mode) for mode in _modes(reps)),
    )


def _seq_scan(reps: list[Repetition], mode: str) -> Judgement:
    scope = _scope(mode)
    scans = {
        sb: [t for r in group if (t := r.mean("seq")) > 0]
        for (hp, sb), group in point_groups(reps).items()
        if hp == mode
    }
    scans = {sb: times for sb, times in scans.items() if times}
    if len(scans) < 2:
        return Judgement(NOT_SHOWN, "only one shared_buffers was measured", scope)
    smallest, largest = min(scans), max(scans)
    ratio, low, high = welch_log_ratio(scans[smallest], scans[largest])
    figures = (
        f"seq {_times(ratio)}"
        + ("" if low is None or high is None else f" ({_interval(low, high)})")
        + f" at {format_bytes(largest)} against {format_bytes(smallest)}"
    )
    if low is None or high is None:
        return Judgement(NOT_SHOWN, f"{figures}: one repetition a side gives no interval", scope)
    if high < 1:
        return Judgement(REPRODUCED, f"{figures}: faster", scope)
    if low > 1:
        return Judgement(NOT_REPRODUCED, f"{figures}: slower", scope)
    return Judgement(NOT_REPRODUCED, f"{figures}: {NO_EFFECT}", scope)
