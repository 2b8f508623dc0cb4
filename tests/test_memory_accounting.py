"""Whether huge pages on and off had machines of the same size (metrics
machine.memory_accounting, recorded once a point's pool is charged to the emulated RAM). Pure."""

from pgcachelab.analysis.memory_accounting import MeasuredMemory, same_ram_check

MB = 2**20
GB = 2**30
ACCOUNTING = "cap = RAM − huge pages pool"


def measured(huge_pages, shared_buffers_mb, ram=GB, pool=None):
    """A measurement as the emulated machine records it: the pool sized from shared_buffers."""
    if pool is None:
        pool = 0 if huge_pages == "off" else (shared_buffers_mb + 31) * MB
    cap = None if ram is None else ram - pool
    accounting = {"ram_bytes": ram, "huge_pages_pool_bytes": pool, "cap_bytes": cap,
                  "accounting": ACCOUNTING, "os_cache_room_bytes": cap}  # fmt: skip
    return MeasuredMemory(huge_pages, shared_buffers_mb * MB, accounting)


def sweep(sizes_mb, **changes) -> list[MeasuredMemory]:
    """Two repetitions of every point of an on/off sweep."""
    return [measured(hp, sb, **changes) for hp in ("on", "off") for sb in sizes_mb for _ in "ab"]


def test_the_same_ram_on_both_sides_is_said_with_the_cap_and_pool_of_each_on_point():
    check = same_ram_check(sweep([256, 8, 1]), memory_limited=True)
    assert check.same
    assert check.text == (
        "Both sides had the same RAM: 1GB (huge pages on: cap 737MB + pool 287MB at 256MB; "
        "cap 985MB + pool 39MB at 8MB; cap 992MB + pool 32MB at 1MB; off: cap 1GB, no pool); "
        "cap = RAM − huge pages pool."
    )


def test_a_long_sweep_shows_its_largest_and_smallest_pools():
    text = same_ram_check(sweep([512, 256, 64, 8, 1]), memory_limited=True).text
    assert "at 512MB; cap 737MB + pool 287MB at 256MB; …; cap 992MB + pool 32MB at 1MB;" in text


def test_no_memory_limit_is_the_hosts_ram_on_both_sides():
    check = same_ram_check(sweep([256, 8], ram=None), memory_limited=False)
    assert check.same
    assert check.text.startswith(
        "Both sides had the same RAM: the host's, with no memory limit (huge pages on: pool "
        "287MB at 256MB; pool 39MB at 8MB; off: no pool)"
    )


def test_different_ram_is_a_warning_that_names_the_points():
    bigger_on = [measured("on", sb, ram=GB + 287 * MB) for sb in (256, 8)]
    check = same_ram_check(bigger_on + sweep([256, 8])[4:], memory_limited=True)
    assert not check.same
    assert check.text == (
        "The sides did not have the same RAM: 1.28GB: huge pages on at 256MB, 8MB; 1GB: huge "
        "pages off at 256MB, 8MB. The on/off comparison is between machines of different sizes."
    )


def test_a_run_stored_before_the_accounting_is_warned_of():
    old = [MeasuredMemory(hp, 256 * MB, None) for hp in ("on", "off")]
    check = same_ram_check(old, memory_limited=True)
    assert not check.same
    assert check.text == (
        "This run was measured before huge pages were charged to the emulated RAM: the on "
        "points had their pool on top of the memory limit; the on/off comparison is between "
        "machines of different sizes."
    )
    partly = same_ram_check([old[0], measured("off", 256)], memory_limited=True)
    assert not partly.same and "RAM (1 of its 2 measurements):" in partly.text
    # without a memory limit the pool always came out of the host's RAM
    unlimited = same_ram_check(old, memory_limited=False)
    assert unlimited.same and unlimited.text.startswith("Both sides had the same RAM: the host's")


def test_a_run_that_does_not_compare_huge_pages_has_no_line():
    assert same_ram_check([measured("off", 256), measured("off", 8)], True) is None
    assert same_ram_check([], True) is None


def test_a_ladder_s_huge_pages_step_is_checked_against_the_steps_without_a_pool():
    from pgcachelab.analysis.memory_accounting import ladder_ram_check

    steps = [measured("try", 128, ram=2 * GB, pool=0), measured("", 1024, ram=2 * GB, pool=0),
             measured("on", 1024, ram=2 * GB)]  # fmt: skip
    check = ladder_ram_check(steps, memory_limited=True)
    assert check.same
    assert check.text == (
        "Every step had the same RAM: 2GB (huge pages on: cap 993MB + pool 1.03GB at 1GB; "
        "off: cap 2GB, no pool); cap = RAM − huge pages pool."
    )
    old = [MeasuredMemory("", 128 * MB, None), MeasuredMemory("on", 1024 * MB, None)]
    assert not ladder_ram_check(old, memory_limited=True).same
    assert ladder_ram_check([measured("try", 128, pool=0)], memory_limited=True) is None


def test_a_cap_that_is_not_the_ram_less_the_pool_is_said_plainly():
    points = sweep([256, 8])
    wrong = measured("on", 64)
    wrong.accounting["cap_bytes"] = GB  # the pool on top of the cap: the old arithmetic
    check = same_ram_check([*points, wrong], memory_limited=True)
    assert not check.same
    assert check.text.startswith(
        "The sides did not have the RAM they were said to have: at huge_pages=on, "
        "shared_buffers=64MB the RAM was 1GB, the pool 95MB, the cap 1GB"
    )
    held_otherwise = measured("off", 8)
    held_otherwise.accounting["cap_read_back_bytes"] = GB - 10 * MB
    assert not same_ram_check([*points, held_otherwise], memory_limited=True).same
