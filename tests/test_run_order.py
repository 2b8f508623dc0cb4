"""The report's line on the order a run measured its points in, and where a drift lands. Pure."""

import pytest

from pgcachelab.analysis.run_order import order_note

SIZES = ["256MB", "8MB", "1MB"]
# the points as a blocks run by huge_pages stores them: on from the largest down, then off
BLOCKS = [{"shared_buffers": s, "huge_pages": hp} for hp in ("on", "off") for s in SIZES]
# as an interleaved spec writes them: on and off side by side at each shared_buffers
SIDE_BY_SIDE = [{"shared_buffers": s, "huge_pages": hp} for s in SIZES for hp in ("on", "off")]


def test_blocks_by_huge_pages_is_the_seeds_order_and_says_where_a_drift_lands():
    schedule = {"order": "blocks", "block_by": "huge_pages", "repetitions": 5}
    assert order_note(schedule, BLOCKS) == (
        "Order: blocks by huge_pages (the seed's order: the on points, then the off points, in "
        "each round). The on points run from the largest shared_buffers down, so the huge "
        "pages pool shrinks step by step and is grown once a round, for the largest, instead "
        "of at every on point (the kernel may not find the memory to grow it). But each side "
        "is measured in its own part of each round, so a drift of the machine within a round "
        "falls on one side: the on/off comparison carries it. The 5 rounds repeat the blocks "
        "in the same order, so a drift that comes and goes within the run spreads over them, "
        "but a steady one puts each later block about a block's time further along it in "
        "every round: the on/off comparison carries that much of it."
    )


def test_blocks_say_only_what_the_points_show():
    one_round = {"order": "blocks", "block_by": "huge_pages", "repetitions": 1}
    assert order_note(one_round, BLOCKS).endswith(
        "With one round, a drift over the run falls on one side as well."
    )
    # shared_buffers ascending: no shrinking pool to speak of
    ascending = [{"shared_buffers": s, "huge_pages": hp}
                 for hp in ("on", "off") for s in reversed(SIZES)]  # fmt: skip
    text = order_note({**one_round, "repetitions": 3}, ascending)
    assert "the seed's order" in text and "pool" not in text
    # off first: not the seed's order
    off_first = ascending[3:] + ascending[:3]
    text = order_note({**one_round, "repetitions": 3}, off_first)
    assert text.startswith(
        "Order: blocks by huge_pages (the huge_pages=off points, then the huge_pages=on "
        "points, in each round). Each value is measured"
    )
    disks = [{"disk": "a"}, {"disk": "b"}, {"disk": "c"}]
    schedule = {"order": "blocks", "block_by": "disk", "repetitions": 2, "warmup_repetitions": 1}
    by_disk = order_note(schedule, disks)
    assert "the comparison between disk values carries it" in by_disk
    assert "The 3 rounds repeat the blocks in the same order" in by_disk
    assert by_disk.endswith("the comparison between disk values carries that much of it.")


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ({"order": "interleaved", "repetitions": 5, "warmup_repetitions": 1},
         "Order: interleaved: each of the 6 rounds measures every point once, in the spec's "
         "order, so a drift of the machine spreads over all points instead of landing on some."),
        ({"order": "random", "repetitions": 5, "seed": 7},
         "Order: random: each of the 5 rounds measures every point once, in an order shuffled "
         "per round (seed 7), so a drift of the machine spreads over all points instead of "
         "landing on some."),
        ({"order": "sequential", "repetitions": 5},
         "Order: sequential: all 5 repetitions of a point run together, one point after "
         "another, so a drift of the machine between points is confounded with the points (the "
         "on/off comparison too): no interval here can see it; order = \"interleaved\" would "
         "spread it over them."),
    ],
)  # fmt: skip
def test_interleaved_random_and_sequential(schedule, expected):
    assert order_note(schedule, SIDE_BY_SIDE) == expected


def test_a_sequential_run_without_huge_pages_on_and_off_names_no_on_off_comparison():
    off_only = [p for p in SIDE_BY_SIDE if p["huge_pages"] == "off"]
    text = order_note({"order": "sequential", "repetitions": 3}, off_only)
    assert "on/off" not in text and "confounded with the points:" in text
