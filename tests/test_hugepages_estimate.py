"""The huge pages estimate of `run --plan` against what real servers said (postgres -C).

tests/data/hugepages/capture.sh captured shared_memory_size and shared_memory_size_in_huge_pages
from PostgreSQL 15.20 and 18.6; fit.py fits the constants on part of them, the rest is held out.
"""

import importlib.util
import math
from pathlib import Path

import pytest

from pgcachelab.machine.hugepages_estimate import (
    CALIBRATIONS,
    calibration_for,
    estimate_huge_pages,
    shared_memory_bytes,
    wal_buffers_bytes,
)

DATA = Path(__file__).parent / "data" / "hugepages"
CAPTURES = sorted(DATA.glob("pg*-shared-memory-size.txt"))
PAGE = 2 * 1024**2
MB = 1024**2


def _fit_module():
    spec = importlib.util.spec_from_file_location("hugepages_fit", DATA / "fit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIT = _fit_module()


def _captured_lines():
    for path in CAPTURES:
        rows, version = FIT.read_capture(path)
        for shared_buffers, connections, size, pages, held_out in rows:
            label = f"{version}-{shared_buffers // 1024}kB-{connections}"
            yield pytest.param(
                version, shared_buffers, connections, size, pages, held_out, id=label
            )


def test_both_captures_are_there_with_the_values_the_brief_names():
    assert [p.name for p in CAPTURES] == [
        "pg15-shared-memory-size.txt",
        "pg18-shared-memory-size.txt",
    ]
    for path in CAPTURES:
        sizes = {row[0] for row in FIT.read_capture(path)[0] if row[1] == 100}
        for text in ("128kB", "1MB", "8MB", "64MB", "256MB", "1GB", "4GB", "14GB"):
            assert FIT.parse_bytes(text) in sizes, (path.name, text)


@pytest.mark.parametrize(
    ("version", "shared_buffers", "connections", "size", "pages", "held_out"),
    list(_captured_lines()),
)
def test_the_estimate_is_within_2_percent_or_2_pages_of_every_captured_value(
    version, shared_buffers, connections, size, pages, held_out
):
    major = int(version.split(".")[0])
    settings = {"shared_buffers": f"{shared_buffers // 1024}kB"}
    if connections != 100:
        settings["max_connections"] = str(connections)
    estimate = estimate_huge_pages(settings, major, PAGE)
    error_pages = abs(estimate.pages - pages)
    assert error_pages <= 2 or error_pages <= 0.02 * pages, (estimate, pages)
    # shared_memory_size is rounded up to a whole MB: the estimate is within 2MB of its
    # middle, or 0.2% (held-out values the fit never saw)
    error_bytes = abs(estimate.shared_memory_bytes - (size - MB / 2))
    assert error_bytes <= 2 * MB or error_bytes <= 0.002 * size
    if not held_out:  # the values the constants were fitted on: every page count exact
        assert estimate.pages == pages


@pytest.mark.parametrize("path", CAPTURES, ids=lambda path: path.name)
def test_the_constants_are_what_fit_py_finds_in_the_captures(path):
    rows, version = FIT.read_capture(path)
    fitted = FIT.fit(rows, version)
    kept = CALIBRATIONS[int(version.split(".")[0])]
    assert kept.calibrated_on == fitted.calibrated_on
    assert kept.slru_cap_buffers == fitted.slru_cap_buffers
    for name in (
        "base_bytes",
        "per_buffer_bytes",
        "slru_per_buffer_bytes",
        "per_connection_bytes",
        "aio_handle_bytes",
    ):
        assert getattr(kept, name) == pytest.approx(getattr(fitted, name), rel=1e-3), name


@pytest.mark.parametrize(
    ("shared_buffers", "setting", "expected"),
    [
        (128 * 1024, None, 64 * 1024),  # at least 8 pages
        (128 * MB, None, 4 * MB),  # shared_buffers / 32
        (512 * MB, "-1", 16 * MB),  # a WAL segment at most
        (14 * 1024 * MB, None, 16 * MB),
        (128 * MB, "32MB", 32 * MB),
        (128 * MB, "512", 4 * MB),  # a number without a unit counts 8kB pages
    ],
)
def test_wal_buffers_as_the_server_sizes_them(shared_buffers, setting, expected):
    assert wal_buffers_bytes(shared_buffers, setting) == expected


def test_versions_get_the_nearest_calibration():
    assert calibration_for(None).calibrated_on == "18.6"  # the embedded wheel's
    assert calibration_for(19).calibrated_on == "18.6"
    assert calibration_for(17).calibrated_on == "15.20"
    assert calibration_for(9).calibrated_on == "15.20"


def test_settings_as_a_spec_writes_them():
    in_kb = estimate_huge_pages({"shared_buffers": "16384kB"}, 18)
    assert estimate_huge_pages({"shared_buffers": "16MB"}, 18) == in_kb
    assert estimate_huge_pages({"shared_buffers": "2048"}, 18) == in_kb  # 8kB buffers
    default = estimate_huge_pages({}, 18)  # 128MB, as the server's default
    assert default == estimate_huge_pages({"shared_buffers": "128MB"}, 18)
    assert default.bytes == default.pages * PAGE >= default.shared_memory_bytes
    assert default.pages == math.ceil(shared_memory_bytes(128 * MB, 18) / PAGE)
    more = estimate_huge_pages({"shared_buffers": "128MB", "max_connections": "300"}, 18)
    assert more.pages > default.pages
    with pytest.raises(ValueError):
        estimate_huge_pages({"shared_buffers": "25% of memory"}, 18)
