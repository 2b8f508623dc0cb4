"""Seed 004's steps found from the data (analysis/steps.py): pure, on real runs captured in
tests/data/steps/ by capture.py there, and on a few made-up cases for the edges."""

import json
from pathlib import Path

import pytest

from pgcachelab.analysis.steps import (
    DISK,
    MEMORY,
    SHARED_BUFFERS,
    Segment,
    SizePoint,
    find_steps,
    segment,
    step_ratio,
)

STEPS_DATA = Path(__file__).parent / "data" / "steps"
MIB = 1024 * 1024


def _captured(name: str):
    run = json.loads((STEPS_DATA / name).read_text())
    points = [
        SizePoint(p["label"], p["database_size_bytes"], tuple(p["tps"]))
        for p in run["points"]
        if p["database_size_bytes"]
    ]
    return find_steps(points, run["shared_buffers_bytes"], run["memory_available_bytes"])


def _between(step) -> tuple[str, str]:
    return step.before.points[-1].label, step.after.points[0].label


def test_the_emulated_seed_004_run_has_its_three_regimes():
    # big-cache-emulated.toml: 1 GiB, shared_buffers 64MB, seed-004-vm, scale 1..104
    finding = _captured("big-cache-emulated.json")
    by_boundary = {b.name: b for b in finding.boundaries}
    shared = by_boundary[SHARED_BUFFERS].step
    memory = by_boundary[MEMORY].step
    assert _between(shared) == ("scale=8", "scale=16")
    assert shared.ratio == pytest.approx(2.64, abs=0.01)
    assert shared.ci_low > 1.5
    assert _between(memory) == ("scale=48", "scale=56")
    assert memory.ratio > 10 and memory.ci_low > 10
    # past memory tps keeps falling as less of the data stays cached: the disk's steps
    assert [s.boundary for s in finding.steps] == [SHARED_BUFFERS, MEMORY, DISK, DISK, DISK, DISK]
    assert all(s.significant for s in finding.steps)


def test_a_drift_and_a_rise_are_not_steps():
    points = [
        SizePoint("a", 20 * MIB, (30000.0, 31000.0, 29500.0)),
        SizePoint("b", 40 * MIB, (27000.0, 27500.0, 26800.0)),  # a 10% drop: drift, not a step
        SizePoint("c", 80 * MIB, (33000.0, 32000.0, 33500.0)),  # a rise: no cache step
    ]
    finding = find_steps(points, 32 * MIB, 1024 * MIB)
    assert finding.steps == []
    assert len(finding.segments) == 1
    assert finding.boundaries[0].spanned and finding.boundaries[0].step is None
    assert not finding.boundaries[1].spanned


def test_one_repetition_gives_no_interval_and_no_step():
    points = [SizePoint("a", 20 * MIB, (30000.0,)), SizePoint("b", 90 * MIB, (300.0,))]
    assert find_steps(points, 32 * MIB, 1024 * MIB).steps == []


def test_equal_repetitions_give_no_interval_and_no_step():
    # issue 46: a zero-width interval (every repetition equal on both sides) says nothing of
    # the spread; a ×100 drop made of such repetitions is no step, and its break has no interval
    before, after = SizePoint("a", 20 * MIB, (30000.0,) * 3), SizePoint("b", 90 * MIB, (300.0,) * 3)
    finding = find_steps([before, after], 32 * MIB, 1024 * MIB)
    assert finding.steps == [] and len(finding.segments) == 1
    ratio, low, high = step_ratio(Segment((before,)), Segment((after,)))
    assert ratio == pytest.approx(100) and low is None and high is None


def test_a_step_far_from_every_boundary_matches_none():
    points = [
        SizePoint("a", 100 * MIB, (30000.0, 30500.0, 29500.0)),
        SizePoint("b", 200 * MIB, (10000.0, 10200.0, 9800.0)),
    ]
    (step,) = find_steps(points, 8 * MIB, 16 * 1024 * MIB).steps
    assert step.boundary is None
    assert step.location_bytes == pytest.approx(141.4 * MIB, rel=0.01)


def test_segments_merge_the_least_distinguishable_neighbours_first():
    points = [
        SizePoint("a", 1 * MIB, (100.0, 101.0, 99.0)),
        SizePoint("b", 2 * MIB, (99.0, 100.0, 98.0)),
        SizePoint("c", 4 * MIB, (10.0, 10.2, 9.9)),
        SizePoint("d", 8 * MIB, (9.9, 10.1, 10.0)),
    ]
    assert [[p.label for p in s.points] for s in segment(points)] == [["a", "b"], ["c", "d"]]


def test_the_report_says_which_steps_a_run_without_a_memory_limit_could_not_show(tiny_reports):
    # big-cache-tiny: shared_buffers 16MB, scale 1..8, no memory limit, the host's disk
    page = tiny_reports["big-cache-tiny"].index.read_text()
    section = page[page.index("<h2>Steps: where the throughput drops</h2>") :]
    section = section[: section.index("<h2>", 10)]
    assert "Where seed 004 expects steps" in section
    memory_row = section[section.index("the machine's RAM") :]
    assert "could not appear" in memory_row and "needs root" in memory_row
    assert "no emulated disk" in section


def test_a_quick_run_on_a_small_emulated_machine_has_both_steps():
    # a candidate of the quick spec: 160MB, shared_buffers 32MB, seed-004-vm, scale 1/2/4/8
    finding = _captured("quick-emulated-160mb.json")
    shared, memory = finding.steps
    assert (shared.boundary, _between(shared)) == (SHARED_BUFFERS, ("scale=2", "scale=4"))
    assert shared.ratio == pytest.approx(1.40, abs=0.01) and shared.ci_low > 1
    assert (memory.boundary, _between(memory)) == (MEMORY, ("scale=4", "scale=8"))
    assert memory.ci_low > 30


def test_the_shipped_quick_spec_under_load_shows_the_memory_step_and_says_shared_buffers_did_not():
    # experiments/big-cache-quick.toml from a fresh clone (128MB, shared_buffers 20MB, scale
    # 1/4/8), load average ~6 from other work: scale 1 and 4 within the noise of each other
    finding = _captured("quick-emulated-128mb.json")
    (memory,) = finding.steps
    assert (memory.boundary, _between(memory)) == (MEMORY, ("scale=4", "scale=8"))
    assert memory.ratio > 30 and memory.ci_low > 30
    shared = finding.boundaries[0]
    assert shared.name == SHARED_BUFFERS and shared.spanned and shared.step is None


def test_the_six_size_quick_spec_draws_the_memory_step_and_the_edge_before_it():
    # experiments/big-cache-quick.toml with issue 40's six sizes (scale 1, 2, 3, 4, 6, 8; 6 x
    # (1 + 1 s)), as root from a checkout, load average 2.4-5.3: the memory step between 4 and
    # 6, scale 4 (67MB) already at the memory limit's edge (x1.3, at no boundary), and no
    # significant step at shared_buffers, which the report says rather than draws
    finding = _captured("quick-six-sizes.json")
    edge, memory = finding.steps
    assert (edge.boundary, _between(edge)) == (None, ("scale=3", "scale=4"))
    assert edge.ratio == pytest.approx(1.31, abs=0.01) and edge.ci_low > 1
    assert (memory.boundary, _between(memory)) == (MEMORY, ("scale=4", "scale=6"))
    assert memory.ratio > 60 and memory.ci_low > 60
    shared = finding.boundaries[0]
    assert shared.name == SHARED_BUFFERS and shared.spanned and shared.step is None


def test_without_root_the_memory_step_cannot_appear():
    # experiments/big-cache-quick-noroot.toml as `make quick` ran it as nobody: no memory limit
    # (the machine's 24GB), the host's disk; shared_buffers 32MB
    finding = _captured("quick-noroot.json")
    (shared,) = finding.steps
    assert (shared.boundary, _between(shared)) == (SHARED_BUFFERS, ("scale=2", "scale=4"))
    assert shared.ci_low > 1
    memory = finding.boundaries[1]
    assert memory.name == MEMORY and not memory.spanned and memory.step is None


def test_a_flat_run_has_no_step():
    # tests/data/steps/flat.toml: every database within shared_buffers
    finding = _captured("flat.json")
    assert finding.steps == []
    assert len(finding.segments) == 1
