"""The articles' words, turned into numbers once: every qualifier the seeds use ("slightly",
"noticeably", "greatly", "about N×", "up to N", "N–M"), the band its figure must lie in, and why
that band. Every study's claim judges through `judge` here, so "greatly" means the same on
every page, and a threshold weaker than the article's words cannot hide in one study.

Ratios are written in the claim's direction: a figure above 1 is the direction the article
states ("faster", "slower", "larger"), 1 is no change. A band is on the ratio; "about N" and
"the same" are symmetric on a log scale, because ratios multiply (×2 and ×0.5 are equally far
from 1).
"""

import math
from dataclasses import dataclass

from pgcachelab.analysis.claims import Figure, Verdict, at_least, at_most, within

# No one notices a difference under 10%: pgbench's own run-to-run spread on a quiet machine is
# a few percent, and the articles' authors (seed 000's box plots, 001's charts) do not comment
# on lines closer than that. "Noticeably" starts here, and "the same" ends here.
NOTICEABLE = 1.1
# "Greatly", "much", "badly": half again or more (a third off a rate). Five times "noticeable"
# on a log scale (1.1^4.25 ≈ 1.5), and beyond the 5-15% drift a shared 2-core machine shows
# between points minutes apart (analysis/steps.py), so drift alone never makes it.
GREAT = 1.5
# "Slightly": a real gain, in the article's direction, smaller than what "greatly" takes. Its
# lower end is 1 (the direction must hold beyond the noise); its upper end is the midpoint,
# on a log scale, between noticeable and great, ×1.25: a "slight" ×1.6 is not slight.
SLIGHT_MAX = 1.25
# "About N": the change on a log scale within half of N's either way: N^0.5 to N^1.5 (about ×2:
# ×1.41–×2.83, nearer 2 than 1 or 4; about ×10: ×3.2–×32; about +10%: +4.9% to +15.4%).
ABOUT_SPREAD = 0.5


@dataclass(frozen=True)
class Qualifier:
    key: str
    words: str  # the articles' words it stands for
    meaning: str  # the band, in words, with {n} and {m} where the claim gives numbers
    why: str

    def band(self, n: float | None = None, m: float | None = None) -> tuple[float, float]:
        """The band the figure must lie in: (low, high), either end infinite when open."""
        return _BANDS[self.key](n, m)

    def rule(self, claim: str, n: float | None = None, m: float | None = None) -> str:
        low, high = self.band(n, m)
        if math.isinf(high):
            band = f"at least {_x(low)}"
        elif low <= 0 or math.isinf(low):
            band = f"at most {_x(high)}"
        else:
            band = f"within {_x(low)}–{_x(high)}"
        return f'{claim}: "{self.key}" = the 95% interval {band}'


def _x(value: float) -> str:
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def _need(n: float | None, what: str) -> float:
    if n is None or not math.isfinite(n) or n <= 0:
        raise ValueError(f"the qualifier {what!r} needs a positive number, not {n!r}")
    return n


def _about(n: float | None, m: float | None) -> tuple[float, float]:
    ratio = _need(n, "about")
    if ratio == 1:
        return 1 / NOTICEABLE, NOTICEABLE
    low, high = sorted((ratio**ABOUT_SPREAD, ratio ** (1 + ABOUT_SPREAD)))
    return low, high


def _near(n: float | None, m: float | None) -> tuple[float, float]:
    value = _need(n, "near")
    return value / math.sqrt(2), value * math.sqrt(2)


def _range(n: float | None, m: float | None) -> tuple[float, float]:
    low, high = _need(n, "range"), _need(m, "range")
    if low > high:
        raise ValueError(f"the range {low}–{high} is inverted")
    return low, high


_BANDS = {
    "direction": lambda n, m: (1.0, math.inf),
    "same": lambda n, m: (1 / NOTICEABLE, NOTICEABLE),
    "slightly": lambda n, m: (1.0, SLIGHT_MAX),
    "noticeably": lambda n, m: (NOTICEABLE, math.inf),
    "greatly": lambda n, m: (GREAT, math.inf),
    "about": _about,
    "near": _near,
    "up to": lambda n, m: (-math.inf, _need(n, "up to")),
    "at least": lambda n, m: (_need(n, "at least"), math.inf),
    "range": _range,
}

QUALIFIERS = {
    q.key: q
    for q in (
        Qualifier(
            "direction",
            "faster, slower, improves, falls, a regression (no size given)",
            "the ratio in the article's direction at least ×1",
            "the article names a direction and no size: the whole interval on its side of 1",
        ),
        Qualifier(
            "same",
            "≈, about the same, similar, no difference, as fast as, does not noticeably affect, "
            "approaching",
            f"within ×{1 / NOTICEABLE:.3g}–×{NOTICEABLE:g}",
            f"no noticeable difference: closer than ×{NOTICEABLE:g} either way, the smallest "
            "difference the articles call noticeable",
        ),
        Qualifier(
            "slightly",
            "slightly, a little, somewhat",
            f"within ×1–×{SLIGHT_MAX:g} in the article's direction",
            "a real difference (the whole interval past 1) and a small one: above "
            f"×{SLIGHT_MAX:g}, halfway (log scale) from noticeable ×{NOTICEABLE:g} to great "
            f"×{GREAT:g}, it is not slight",
        ),
        Qualifier(
            "noticeably",
            "noticeably, visibly, clearly, much clearer, better",
            f"at least ×{NOTICEABLE:g}",
            "no one notices under 10%: pgbench's run-to-run spread is a few percent",
        ),
        Qualifier(
            "greatly",
            "greatly, much, badly, heavily, dramatically, huge, significant (not the "
            "statistical word)",
            f"at least ×{GREAT:g}",
            "half again or more (a third off a rate): more than this machine's 5-15% drift "
            "between points can make, and far more than 'noticeably'",
        ),
        Qualifier(
            "about",
            "about N×, ~N×, N times, by half (×1.5), N% more; a modest or moderate gain "
            "the article gives figures for (52k → 75k) is judged by its figures",
            "within N^0.5–N^1.5",
            "the change on a log scale within half of the article's either way (about ×2: "
            "×1.41–×2.83; about +10%: +4.9% to +15.4%): nearer N than 1 or N²",
        ),
        Qualifier(
            "near",
            "≈ X, about X (a quantity: 100 MB, 10,000 tpmC)",
            "within X/√2–X·√2",
            "nearer X than half or twice X (the geometric midpoints)",
        ),
        Qualifier(
            "up to",
            "up to N, below N, under N, < N",
            "at most N",
            "the article's bound itself: the whole interval at or below it",
        ),
        Qualifier(
            "at least",
            "at least N, over N, more than N",
            "at least N",
            "the article's bound itself: the whole interval at or above it",
        ),
        Qualifier(
            "range",
            "N–M (85-95% busy, 100-200 IOPS)",
            "within N–M",
            "the article's own range: the whole interval inside it",
        ),
    )
}


def judge(
    figure: Figure, qualifier: str, claim: str, n: float | None = None, m: float | None = None
) -> Verdict:
    """The claim judged by its qualifier's band: reproduced when the figure's whole 95% interval
    lies in the band, contradicted when it lies wholly outside, else noise."""
    found = QUALIFIERS[qualifier]
    low, high = found.band(n, m)
    rule = found.rule(claim, n, m)
    if math.isinf(high):
        return at_least(figure, low, rule)
    if math.isinf(low) or low <= 0:
        return at_most(figure, high, rule)
    return within(figure, low, high, rule)


def table_rows() -> list[list[str]]:
    """The table for the docs and the page: the words, the rule, why."""
    return [[q.key, q.words, q.meaning, q.why] for q in QUALIFIERS.values()]
