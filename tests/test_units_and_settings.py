"""Units, the settings catalogue and value checks: pure functions on real server output."""

from pathlib import Path

import pytest

from pgcachelab.clusters.binaries import parse_version
from pgcachelab.clusters.guc import (
    SettingInfo,
    catalogue_from_pg_settings,
    check_setting_value,
    parse_describe_config,
)
from pgcachelab.units import format_bytes, normalise_setting, parse_bytes, parse_seconds

DATA = Path(__file__).parent / "data" / "server"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("64MB", 64 * 2**20), ("1GiB", 2**30), ("1.5GB", 3 * 2**29), ("128kB", 131072), (512, 512)],
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["12XB", "MB", "lots", "1 mb"])
def test_parse_bytes_rejects(text):
    with pytest.raises(ValueError):
        parse_bytes(text)


def test_parse_seconds():
    assert parse_seconds("20s") == 20
    assert parse_seconds("2min") == 120
    assert parse_seconds(5) == 5
    with pytest.raises(ValueError, match="unknown time unit"):
        parse_seconds("5 fortnights")


def test_format_bytes():
    assert format_bytes(32 * 2**20) == "32MB"
    assert format_bytes(1.5 * 2**30) == "1.5GB"
    assert format_bytes(100) == "100B"


def test_normalise_setting_to_bytes_and_seconds():
    assert normalise_setting("4096", "8kB", "integer") == 32 * 2**20
    assert normalise_setting("300", "s", "integer") == 300
    assert normalise_setting("200", "ms", "integer") == 0.2
    assert normalise_setting("on", None, "bool") == "on"


@pytest.mark.parametrize("version", ["15", "18"])
def test_describe_config_catalogue(version):
    catalogue = parse_describe_config((DATA / f"describe-config-{version}.txt").read_text())
    assert len(catalogue) > 300
    assert catalogue["shared_buffers"].context == "postmaster"
    assert catalogue["shared_buffers"].vartype == "integer"
    assert catalogue["shared_buffers"].min_value == 16
    assert catalogue["work_mem"].context == "user"
    assert catalogue["fsync"].vartype == "bool"
    assert catalogue["huge_pages"].vartype == "enum"


def test_values_checked_with_units_from_pg_settings():
    catalogue = catalogue_from_pg_settings(
        [
            ("shared_buffers", "postmaster", "integer", "8kB", "16", "1073741823", None),
            ("huge_pages", "postmaster", "enum", None, None, None, ["off", "on", "try"]),
            ("checkpoint_timeout", "sighup", "integer", "s", "30", "86400", None),
        ]
    )
    shared = catalogue["shared_buffers"]
    assert check_setting_value(shared, "64MB") is None
    assert check_setting_value(shared, 4096) is None
    assert "below its minimum" in check_setting_value(shared, "64kB")
    assert "memory size" in check_setting_value(shared, "5min")
    assert "unknown unit" in check_setting_value(shared, "12XB")
    assert check_setting_value(catalogue["huge_pages"], "on") is None
    assert "one of off, on, try" in check_setting_value(catalogue["huge_pages"], "always")
    assert check_setting_value(catalogue["checkpoint_timeout"], "30min") is None
    assert "duration" in check_setting_value(catalogue["checkpoint_timeout"], "1GB")


def test_bool_and_string():
    assert check_setting_value(SettingInfo("fsync", "sighup", "bool"), False) is None
    assert check_setting_value(SettingInfo("fsync", "sighup", "bool"), "maybe")
    assert check_setting_value(SettingInfo("search_path", "user", "string"), "a, b") is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("postgres (PostgreSQL) 18.6", ("18.6", 18)),
        ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)", ("15.18", 15)),
        ("postgres (PostgreSQL) 9.6.24", ("9.6", 9)),
        ("postgres (PostgreSQL) 19devel", ("19.0", 19)),
    ],
)
def test_parse_version(line, expected):
    assert parse_version(line) == expected


def test_huge_pages_come_out_of_the_machine_s_ram():
    from pgcachelab.errors import ClusterError
    from pgcachelab.machine.emulated import MIN_MEMORY_LEFT, cap_for_pool

    gib, mib = 1024**3, 1024**2
    assert cap_for_pool(gib, 0) == gib
    assert cap_for_pool(gib, 300 * mib) == gib - 300 * mib
    assert cap_for_pool(gib, gib - MIN_MEMORY_LEFT) == MIN_MEMORY_LEFT
    with pytest.raises(ClusterError, match=r"^hugepages_exceed_memory: .* pool of 1000MB leaves"):
        cap_for_pool(gib, 1000 * mib)


def test_a_huge_page_size_other_than_the_kernel_s_default_is_refused():
    from pgcachelab.errors import ClusterError
    from pgcachelab.machine.emulated import _check_huge_page_size
    from pgcachelab.machine.hugepages import page_size_bytes

    default_kb = page_size_bytes() // 1024
    for fine in (None, "", "0", f"{default_kb}kB", str(default_kb)):
        _check_huge_page_size(fine)
    with pytest.raises(ClusterError, match=r"^huge_page_size_unsupported: huge_page_size = 1GB"):
        _check_huge_page_size("1GB")
