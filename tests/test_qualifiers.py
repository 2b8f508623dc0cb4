"""The articles' words as numbers (analysis/qualifiers.py): one band per word, the same on every
study's page, and no word weaker than issue 46 found it ("greatly" at 1%, "about 2×" at ×1,
"noticeably" at anything below 1)."""

import math

import pytest

from pgcachelab.analysis.claims import CONTRADICTED, NOISE, REPRODUCED, Figure
from pgcachelab.analysis.qualifiers import GREAT, NOTICEABLE, QUALIFIERS, judge, table_rows


def ratio(value, low, high, n=5) -> Figure:
    return Figure("r", value, low, high, n)


@pytest.mark.parametrize(
    ("qualifier", "n", "m", "figure", "outcome"),
    [
        # "greatly": a 1% sag (×1.01) no longer reproduces it (issue 46)
        ("greatly", None, None, ratio(1.01, 1.005, 1.02), CONTRADICTED),
        ("greatly", None, None, ratio(2.0, 1.6, 2.5), REPRODUCED),
        ("greatly", None, None, ratio(1.5, 1.3, 1.7), NOISE),
        # "about 2×": ×1.2 is not about twice (it was judged at ×1)
        ("about", 2.0, None, ratio(1.2, 1.1, 1.3), CONTRADICTED),
        ("about", 2.0, None, ratio(1.9, 1.6, 2.3), REPRODUCED),
        ("about", 2.0, None, ratio(5.0, 4.0, 6.0), CONTRADICTED),  # not about 2× either
        # about +10% faster
        ("about", 1.1, None, ratio(1.1, 1.06, 1.14), REPRODUCED),
        ("about", 1.1, None, ratio(1.6, 1.5, 1.7), CONTRADICTED),
        # "noticeably": anything below 1 was enough; now at least ×1.1
        ("noticeably", None, None, ratio(1.05, 1.02, 1.08), CONTRADICTED),
        ("noticeably", None, None, ratio(1.3, 1.15, 1.45), REPRODUCED),
        # "slightly": in the direction, and small
        ("slightly", None, None, ratio(1.1, 1.02, 1.2), REPRODUCED),
        ("slightly", None, None, ratio(1.8, 1.6, 2.0), CONTRADICTED),
        ("slightly", None, None, ratio(0.9, 0.85, 0.95), CONTRADICTED),
        ("same", None, None, ratio(1.0, 0.95, 1.05), REPRODUCED),
        ("same", None, None, ratio(1.3, 1.2, 1.4), CONTRADICTED),
        ("near", 100.0, None, ratio(95.0, 90.0, 100.0), REPRODUCED),
        ("near", 100.0, None, ratio(250.0, 240.0, 260.0), CONTRADICTED),
        ("up to", 3.0, None, ratio(0.5, 0.1, 0.9), REPRODUCED),
        ("up to", 3.0, None, ratio(3.5, 3.2, 3.8), CONTRADICTED),
        ("range", 85.0, 95.0, ratio(90.0, 88.0, 92.0), REPRODUCED),
        ("range", 85.0, 95.0, ratio(60.0, 55.0, 65.0), CONTRADICTED),
        ("direction", None, None, ratio(1.05, 1.01, 1.09), REPRODUCED),
    ],
)
def test_each_word_has_one_band(qualifier, n, m, figure, outcome):
    verdict = judge(figure, qualifier, "the claim", n, m)
    assert verdict.outcome == outcome
    assert verdict.reason.startswith(f'the claim: "{qualifier}" = the 95% interval')


def test_the_bands_keep_their_order():
    # "slightly" ends where "greatly" is far off; "noticeably" starts where "the same" ends
    assert QUALIFIERS["same"].band()[1] == NOTICEABLE == QUALIFIERS["noticeably"].band()[0]
    assert QUALIFIERS["slightly"].band()[1] < GREAT == QUALIFIERS["greatly"].band()[0]
    low, high = QUALIFIERS["about"].band(2.0)
    assert low == pytest.approx(math.sqrt(2)) and high == pytest.approx(2 * math.sqrt(2))


@pytest.mark.parametrize(("qualifier", "n"), [("about", None), ("near", -1.0), ("up to", math.nan)])
def test_a_word_that_needs_a_number_refuses_none(qualifier, n):
    with pytest.raises(ValueError, match="needs a positive number"):
        QUALIFIERS[qualifier].band(n)


def test_the_table_lists_every_word_with_why():
    rows = table_rows()
    assert {row[0] for row in rows} == set(QUALIFIERS)
    assert all(len(row) == 4 and all(row) for row in rows)
