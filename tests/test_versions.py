"""Seed 001's pure parts: scale classes, version sweeps in specs, grouped schedules, Maven's
failures in one line, and the version-to-version ratios with their intervals."""

import math
import re
from pathlib import Path

import pytest
from test_spec import error_of, spec

from pgcachelab.analysis.versions import (
    differing_settings,
    version_changes,
    version_order,
    welch_log_ratio,
)
from pgcachelab.clusters.installs import maven_failure
from pgcachelab.clusters.managed import initdb_checksum_args
from pgcachelab.spec import parse_spec
from pgcachelab.workloads.pgbench import threads_for
from pgcachelab.workloads.scale_class import (
    BYTES_PER_SCALE,
    ScaleClassError,
    scale_for_class,
    target_bytes,
)

MB, GB = 1024**2, 1024**3
REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "maven"


# -- scale classes -------------------------------------------------------------------------------


def test_scale_classes_sit_between_the_boundaries():
    small, medium, large = (target_bytes(c, 128 * MB, GB) for c in ("small", "medium", "large"))
    assert small < 128 * MB < medium < GB < large
    assert medium == int(math.sqrt(128 * MB * GB))
    assert scale_for_class("small", 128 * MB, GB) == round(64 * MB / BYTES_PER_SCALE) == 4
    assert scale_for_class("large", 128 * MB, GB) == 105
    assert scale_for_class("small", 1 * MB, GB) == 1  # never below pgbench's smallest scale


def test_scale_class_needs_room_between_shared_buffers_and_memory():
    with pytest.raises(ScaleClassError, match=r"over a quarter of the memory"):
        target_bytes("medium", 512 * MB, GB)
    with pytest.raises(ScaleClassError, match=r"unknown scale class 'huge'"):
        target_bytes("huge", 128 * MB, GB)


# -- specs ---------------------------------------------------------------------------------------


def test_version_sweep_in_a_spec():
    parsed = spec('[sweep]\nversion = [9.6, "13", 18]\nscale_class = ["small", "large"]\n'
                  'clients = [1, 4]\n[pgbench]\nthreads = "auto"\n')  # fmt: skip
    assert parsed.versions == ["9.6", "13", "18"]
    points = parsed.points()
    assert len(points) == 12
    assert points[0].workload.version == "9.6"
    assert points[0].workload.scale_class == "small"
    assert points[0].workload.threads == "auto"


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("[sweep]\nversion = [7.4]", r'sweep.version: invalid value 7.4: not a PostgreSQL major',
         r"8.3, 8.4, 9.0 .. 9.6, 10"),
        ('[sweep]\nscale_class = ["tiny"]', r'sweep.scale_class: invalid value "tiny"',
         r"small, medium, large"),
        ('[sweep]\nscale_class = ["small"]\nscale = [1]', r"both a scale and a scale class",
         r"use one of them"),
        ('[server]\npg_bin = "/x"\n[sweep]\nversion = ["13"]', r"server.pg_bin: the spec sweeps",
         r"remove server.pg_bin"),
        ('[pgbench]\nthreads = "many"', r'pgbench.threads: invalid value "many"', r"1 or more"),
    ],
)  # fmt: skip
def test_bad_version_specs(text, message, hint):
    error = error_of(text)
    assert re.search(message, error.message), error.message
    assert re.search(hint, error.hint), error.hint


def test_points_that_share_data_run_together_whatever_the_order():
    # (a version sweep runs in rounds over the versions instead: test_version_rounds.py)
    parsed = spec(
        'repetitions = 2\norder = "interleaved"\n'
        '[sweep]\nscale = [1, 2]\nmode = ["select-only", "simple-update"]\n'
    )
    order = parsed.schedule()
    scales = [parsed.points()[p].workload.scale for p, _ in order]
    assert scales == [1] * 4 + [2] * 4  # the data of a scale is built once
    assert order[:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]  # interleaved within the scale


def test_threads_auto_follows_clients_up_to_the_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert threads_for("auto", 1) == 1
    assert threads_for("auto", 16) == 2
    assert threads_for(8, 4) == 4  # pgbench refuses more threads than clients


@pytest.mark.parametrize("name", ["archaeology.toml", "archaeology-quick.toml"])
def test_shipped_archaeology_experiments(name):
    path = REPO / "experiments" / name
    parsed = parse_spec(path.read_text(), path)
    # 9.5 and 11: seed 001's "regression between 9.5 and 11"; 9.3 → 9.5: its read-only gain
    assert {"9.3", "9.5", "9.6", "11", "13", "18"} <= set(parsed.versions)
    assert parsed.settings.get("max_wal_size") == "1GB"  # checkpoint_segments before 9.5
    assert parsed.sweep_workload["scale_class"] == ["small", "medium", "large"]
    assert parsed.sweep_workload["mode"] == ["select-only", "simple-update"]
    assert parsed.data_checksums is False  # 18 would turn them on, the others not
    assert parsed.versions[-1] == "18 control"  # the A/A control (issue 19)
    assert parsed.parameters.checkpoint_before_run  # the article's CHECKPOINT before each run
    if name == "archaeology.toml":  # as the article ran it: every version, both storage types
        assert parsed.versions[:-1] == [
            "8.3", "8.4", *(f"9.{minor}" for minor in range(7)), *map(str, range(10, 19))
        ]  # fmt: skip
        assert parsed.sweep_workload["disk"] == ["nvme", "sata-raid0-3x7200"]
        assert parsed.sweep_workload["protocol"] == ["simple", "prepared"]
    else:  # seven versions and the control at 16 clients fit reproduce's hour (its comment)
        assert parsed.versions == ["9.3", "9.5", "9.6", "10", "11", "13", "18", "18 control"]
        assert parsed.sweep_workload["clients"] == [16]
        assert "disk" not in parsed.sweep_workload  # the SATA RAID claims: the full spec


def test_data_checksums_the_same_on_every_version():
    assert initdb_checksum_args(None, 18) == []
    assert initdb_checksum_args(False, 18) == ["--no-data-checksums"]
    assert initdb_checksum_args(False, 9) == []  # off is the default before 18
    assert initdb_checksum_args(True, 13) == ["--data-checksums"]
    assert error_of('[server]\ndata_checksums = "yes"').message.endswith(
        'server.data_checksums: invalid value "yes": not a boolean'
    )


# -- Maven's failures, from its real output ------------------------------------------------------


@pytest.mark.parametrize(
    ("capture", "message"),
    [
        ("offline.txt", r"cannot reach the Maven repository \(no network\?\)"),
        ("unreachable-mirror.txt", r"cannot reach the Maven repository"),
        ("not-published.txt", r"no such zonky build"),
    ],
)
def test_maven_failures_in_one_line(capture, message):
    error = maven_failure("12.99.0", (DATA / capture).read_text())
    assert "\n" not in error.message
    assert re.search(message, error.message), error.message


# -- version to version --------------------------------------------------------------------------


def test_versions_in_release_order():
    assert version_order(["18", "9.6", "13", "10"]) == ["9.6", "10", "13", "18"]


def test_welch_ratio_of_geometric_means():
    ratio, low, high = welch_log_ratio([100, 100, 100], [200, 200, 200])
    assert ratio == pytest.approx(2.0) and low == high == pytest.approx(2.0)
    ratio, low, high = welch_log_ratio([95, 100, 105], [190, 200, 210])
    assert ratio == pytest.approx(2.0, rel=1e-3)
    assert 1 < low < 2 < high
    assert welch_log_ratio([100], [200])[1:] == (None, None)


def test_a_clear_regression_is_significant_and_noise_is_not():
    cell = (("mode", "select-only"),)
    changes = version_changes(
        {cell: {"9.6": [1000, 1010, 990], "13": [500, 505, 495], "18": [520, 480, 600]}}
    )
    assert [(c.previous, c.version) for c in changes] == [("9.6", "13"), ("13", "18")]
    regression, noise = changes
    assert regression.significant and regression.ratio == pytest.approx(0.5, rel=1e-3)
    assert not noise.significant


def test_equal_repetitions_are_never_significant():
    # issue 46: two equal repetitions a version give a zero-width interval at ×2, which says
    # nothing of the spread: not a significant change, nor a failed A/A control
    cell = (("mode", "select-only"),)
    [change] = version_changes({cell: {"9.6": [100.0, 100.0], "18": [200.0, 200.0]}})
    assert change.ci_low == change.ci_high == pytest.approx(2.0)
    assert not change.significant


def test_changed_defaults_are_listed_and_incidental_differences_are_not():
    differing = differing_settings({
        "18": {"checkpoint_completion_target": "0.9", "port": "5433", "io_method": "worker",
               "work_mem": "4MB"},
        "9.6": {"checkpoint_completion_target": "0.5", "port": "5432", "work_mem": "4MB"},
    })  # fmt: skip
    assert differing == {"checkpoint_completion_target": {"9.6": "0.5", "18": "0.9"}}
