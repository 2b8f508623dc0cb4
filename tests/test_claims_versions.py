"""Seed 001's claims (studies/versions/claims.py): each claim's rule on constructed samples for
every verdict it can give, the SATA RAID disk preset, and the study's judges on the fixture
store's tiny versions run."""

import pytest

from pgcachelab.analysis.claims import CANNOT, CONTRADICTED, NOISE, REPRODUCED
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.machine.disk_profiles import PRESETS, canonical_disk, resolve_disk
from pgcachelab.studies.versions.claims import (
    LARGE_REGRESSION,
    READ_ONLY,
    READ_ONLY_SCALED,
    READ_WRITE,
    READ_WRITE_OUTGREW,
    READ_WRITE_ROSE,
    SATA_FELL,
    SATA_GROUP_COMMIT,
    SATA_RAID,
    judge,
    ratio_of_ratios,
)
from pgcachelab.studies.versions.study import Versions


def cell(mode: str, scale_class: str, clients: int = 16, **more) -> tuple:
    """A cell as version_samples keys it: the swept values other than the version."""
    return (("clients", clients), ("mode", mode), ("scale_class", scale_class), *more.items())


def reps(tps: float, spread: float = 0.01) -> list[float]:
    return [tps * (1 - spread), tps, tps * (1 + spread)]


def samples_for(mode, scale_class, by_version, **more) -> dict:
    return {cell(mode, scale_class, **more): {v: list(t) for v, t in by_version.items()}}


def test_older_versions_cannot_be_shown_here():
    for claim in (READ_ONLY_SCALED, SATA_GROUP_COMMIT):
        verdict = judge(claim, samples_for(READ_ONLY, "medium", {"9.6": reps(100)}))
        assert verdict.outcome == CANNOT and "older than 9.6" in verdict.reason


@pytest.mark.parametrize(
    ("newest_tps", "spread", "outcome"),
    [(150, 0.01, REPRODUCED), (70, 0.01, CONTRADICTED), (100, 0.3, NOISE)],
)
def test_read_write_rose(newest_tps, spread, outcome):
    samples = samples_for(
        READ_WRITE, "medium", {"9.6": reps(100), "13": reps(120), "18": reps(newest_tps, spread)}
    )
    verdict = judge(READ_WRITE_ROSE, samples)
    assert verdict.outcome == outcome
    assert verdict.figure is not None and "18/9.6" in verdict.figure.what
    assert "95% CI" in verdict.text()


def test_read_write_rose_at_the_most_clients():
    samples = {
        **samples_for(READ_WRITE, "medium", {"9.6": reps(100), "18": reps(60)}, clients=1),
        **samples_for(READ_WRITE, "medium", {"9.6": reps(100), "18": reps(150)}, clients=64),
    }
    verdict = judge(READ_WRITE_ROSE, samples)
    assert verdict.outcome == REPRODUCED and "64 clients" in verdict.figure.what


def test_read_write_rose_cannot_and_one_repetition():
    only_read_only = samples_for(READ_ONLY, "medium", {"9.6": reps(100), "18": reps(150)})
    assert judge(READ_WRITE_ROSE, only_read_only).outcome == CANNOT
    one_version = samples_for(READ_WRITE, "medium", {"18": reps(150)})
    assert judge(READ_WRITE_ROSE, one_version).outcome == CANNOT
    single = samples_for(READ_WRITE, "medium", {"9.6": [100.0], "18": [200.0]})
    verdict = judge(READ_WRITE_ROSE, single)
    assert verdict.outcome == NOISE and "one repetition" in verdict.reason  # never reproduced


@pytest.mark.parametrize(
    ("write_after", "read_after", "outcome"),
    [(150, 100, REPRODUCED), (100, 150, CONTRADICTED), (130, 120, NOISE)],
)
def test_read_write_outgrew_read_only(write_after, read_after, outcome):
    spread = 0.2 if outcome == NOISE else 0.01
    samples = {
        **samples_for(READ_WRITE, "medium", {"9.6": reps(100), "18": reps(write_after, spread)}),
        **samples_for(READ_ONLY, "medium", {"9.6": reps(100), "18": reps(read_after, spread)}),
    }
    verdict = judge(READ_WRITE_OUTGREW, samples)
    assert verdict.outcome == outcome
    assert verdict.figure is not None and verdict.figure.repetitions == 3


def test_read_write_outgrew_read_only_cannot_without_both_modes():
    samples = samples_for(READ_WRITE, "medium", {"9.6": reps(100), "18": reps(150)})
    assert judge(READ_WRITE_OUTGREW, samples).outcome == CANNOT


def test_ratio_of_ratios():
    a_before, a_after = [100.0, 104.0, 96.0], [200.0, 190.0, 210.0]
    b_before, b_after = [50.0, 51.0, 49.0], [50.0, 52.0, 48.0]
    ratio, low, high = ratio_of_ratios(a_before, a_after, b_before, b_after)
    a_ratio, a_low, a_high = welch_log_ratio(a_before, a_after)
    b_ratio, _, _ = welch_log_ratio(b_before, b_after)
    assert ratio == pytest.approx(a_ratio / b_ratio)
    assert low < a_low and high > a_high  # b's noise widens the interval
    assert ratio_of_ratios([1.0], [2.0], [1.0, 1.1], [1.0, 1.1])[1] is None


@pytest.mark.parametrize(
    ("tps_11", "outcome"), [(80, REPRODUCED), (120, CONTRADICTED), (None, NOISE)]
)
def test_large_read_write_regression_to_11(tps_11, outcome):
    values = reps(tps_11) if tps_11 else [60.0, 140.0]
    # 13 is faster again: the claim is about 9.5 → 11, so 13 must not decide
    samples = samples_for(
        READ_WRITE, "large", {"9.6": reps(100), "10": reps(95), "11": values, "13": reps(200)}
    )
    verdict = judge(LARGE_REGRESSION, samples)
    assert verdict.outcome == outcome
    assert "11/9.6" in verdict.figure.what


def test_large_read_write_regression_needs_a_version_up_to_11():
    samples = samples_for(READ_WRITE, "large", {"9.6": reps(100), "13": reps(80), "18": reps(70)})
    verdict = judge(LARGE_REGRESSION, samples)
    assert verdict.outcome == CANNOT and "9.5 and 11" in verdict.reason


@pytest.mark.parametrize(
    ("newest_tps", "spread", "outcome"),
    [(60, 0.01, REPRODUCED), (140, 0.01, CONTRADICTED), (100, 0.4, NOISE)],
)
def test_sata_read_only_fell(newest_tps, spread, outcome):
    by_version = {"9.6": reps(100), "18": reps(newest_tps, spread)}
    samples = {
        # the NVMe cell rises: only the SATA RAID cell may decide
        **samples_for(READ_ONLY, "large", {"9.6": reps(100), "18": reps(200)}, disk="nvme"),
        **samples_for(READ_ONLY, "large", by_version, disk=SATA_RAID),
    }
    verdict = judge(SATA_FELL, samples)
    assert verdict.outcome == outcome
    assert SATA_RAID in verdict.figure.what


def test_sata_read_only_fell_on_a_fixed_disk_and_without_it():
    samples = samples_for(READ_ONLY, "large", {"9.6": reps(100), "18": reps(60)})
    assert judge(SATA_FELL, samples, {"disk": SATA_RAID}).outcome == REPRODUCED
    verdict = judge(SATA_FELL, samples)  # this machine's own disk: not the article's SATA RAID
    assert verdict.outcome == CANNOT and SATA_RAID in verdict.reason


def test_an_untrustworthy_control_leaves_only_noise():
    rising = {"9.6": reps(100), "18": reps(150)}
    samples = samples_for(READ_WRITE, "medium", rising)
    assert judge(READ_WRITE_ROSE, samples).outcome == REPRODUCED
    # the A/A twin of 18 differs from 18 by a third in every cell: the run cannot tell versions
    with_control = {key: {**value, "18 control": reps(100)} for key, value in samples.items()}
    verdict = judge(READ_WRITE_ROSE, with_control)
    assert verdict.outcome == NOISE and "A/A control" in verdict.reason


def test_sata_raid_preset_is_three_7200_rpm_disks():
    one, raid = PRESETS["hdd-7200"], PRESETS[SATA_RAID]
    assert raid.read_latency_s == one.read_latency_s  # one request waits one disk
    assert raid.sync_latency_s == one.sync_latency_s
    assert raid.iops == 3 * one.iops
    assert raid.bandwidth_bytes_s == 3 * one.bandwidth_bytes_s
    assert resolve_disk(canonical_disk(SATA_RAID)) == raid
    assert "seed 001" in raid.source


@pytest.fixture(scope="module")
def tiny_versions(tiny_runs) -> RunData:
    return tiny_runs["archaeology-tiny"]


def test_the_tiny_runs_verdicts(tiny_versions):
    verdicts = [claim.judge(tiny_versions) for claim in Versions.claims]
    # tests/data/report-runs/archaeology.toml: 15 and 18, small and medium, 1 and 4 clients,
    # two 1 s repetitions, no large class, on this machine's disk.
    assert [v.outcome for v in verdicts] == [
        CANNOT,  # 9.2 and 9.5: older than 9.6
        NOISE,  # read-write 18/15 at medium, 4 clients: ×1.00, interval 0.84–1.19 spans 1
        NOISE,  # read-write over read-only: ×1.11, interval 0.98–1.27 spans 1
        CANNOT,  # the 9.5 → 11 regression: no large class, no version up to 11
        CANNOT,  # SATA RAID: the run has no such disk
        CANNOT,  # 9.1's group commit: older than 9.6
    ]
    assert verdicts[1].figure.what == (
        "read-write tps 18/15 at medium, 4 clients, -M simple, this machine's disk"
    )
    assert verdicts[1].figure.repetitions == 2


def test_every_claim_has_its_figure_rule_and_judge():
    for claim in Versions.claims:
        assert claim.figure and claim.rule and claim.article and claim.words
        assert claim.judge.__name__ != "_not_judged"
