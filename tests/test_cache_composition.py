"""The snapshot logic of [inspect] sampling, on snapshots and rows captured from real servers.

run_snapshots.json: the cache_snapshots of a real two-point pgbench run (PG 18, 16MB
shared_buffers, every = 1s); rows-18.json: rows of pg_cachelab and the grouped view
(tests/data/inspect/capture.py).
"""

import json
from pathlib import Path

import pytest

from pgcachelab.analysis.cache_composition import (
    OTHER,
    Sample,
    compact,
    composition,
    labels_in_order,
    point_table,
    split,
    top_relations,
)
from pgcachelab.errors import UserError
from pgcachelab.experiments.cache_sampler import uncached_relations
from pgcachelab.probes.buffercache import snapshot_from_relations
from pgcachelab.spec import parse_inspect_method, parse_spec

DATA = Path(__file__).parent / "data" / "inspect"


def _samples() -> list[Sample]:
    captured = json.loads((DATA / "run_snapshots.json").read_text())["samples"]
    return [
        Sample(s["point_index"], s["repetition"], s["seconds"], s["label"], s["data"])
        for s in captured
    ]


def _snapshot():
    captured = json.loads((DATA / "rows-18.json").read_text())
    facts = tuple(captured["facts"])
    return snapshot_from_relations("extension", "consistent", facts, captured["extension"])


def test_compact_keeps_the_top_relations_and_sums_the_rest_exactly():
    snapshot = _snapshot()
    data = compact(snapshot, top=5)

    assert len(data["relations"]) == 5
    assert data["other"]["relations"] == len(snapshot.relations) - 5
    kept = sum(r["buffers"] for r in data["relations"])
    assert kept + data["other"]["buffers"] == snapshot.buffers_used
    weights = [r["buffers"] for r in data["relations"]]  # no OS cache here: buffers decide
    assert weights == sorted(weights, reverse=True)
    assert weights[-1] >= max(r.buffers for r in snapshot.relations[5:])


def test_composition_stacks_add_up_to_each_snapshot_and_keep_measurements_apart():
    samples = _samples()
    comp = composition(samples, count=3)

    assert comp.names[-1] == OTHER and len(comp.names) == 4
    assert comp.names[:2] == ["public.pgbench_accounts", "public.pgbench_accounts_pkey"]
    assert [len(segment) for segment in comp.segments] == [5, 5]  # before, 3 samples, after
    ordered = [s for segment in comp.segments for s in segment]
    for position, sample in enumerate(ordered):
        used = sample.data["buffers_used"] * sample.data["block_size"]
        assert sum(comp.shared_buffers[n][position] for n in comp.names) == used
        os_total = sum(r["os_cached_bytes"] or 0 for r in sample.data["relations"])
        os_total += sample.data["other"]["os_cached_bytes"]
        assert sum(comp.os_cache[n][position] for n in comp.names) == os_total


def test_composition_without_os_cache_has_no_os_series():
    samples = [
        Sample(s.point_index, s.repetition, s.seconds, s.label,
               {**s.data, "relations": [{**r, "os_cached_bytes": None}
                                        for r in s.data["relations"]]})
        for s in _samples()
    ]  # fmt: skip
    assert composition(samples).os_cache is None


def test_top_relations_rank_by_the_peak_in_either_cache():
    names = top_relations(_samples(), 2)
    # the index has no buffer before the first point, but is fully in the OS cache
    assert names == ["public.pgbench_accounts", "public.pgbench_accounts_pkey"]


def test_point_table_gives_before_and_after_medians():
    point_0 = [s for s in _samples() if s.point_index == 0]
    labels, table = point_table(point_0, count=2)

    assert labels == ["before", "after"]
    index = table["public.pgbench_accounts_pkey"]
    assert index["before"].shared_buffers_bytes == 0
    assert index["after"].shared_buffers_bytes > 4_000_000  # select-only read it in
    assert index["before"].os_cached_bytes == index["before"].size_bytes


def test_labels_in_order_keep_phases_and_leave_out_periodic_samples():
    moments = ["before", "sample", "after idx1", "after seq", "after"]
    samples = [Sample(0, 0, seconds, label, {}) for seconds, label in enumerate(moments)]
    assert labels_in_order(samples) == ["before", "after idx1", "after seq", "after"]


@pytest.mark.parametrize(
    ("shared_buffers", "os_cache", "size", "both", "low", "high"),
    [
        (100, 100, 100, 100, 100, 100),  # all of it in both
        (0, 50, 100, 0, 0, 0),  # nothing in shared_buffers
        (50, 50, 100, 25, 0, 50),  # independence: a quarter in both
        (80, 60, 100, 48, 40, 60),  # the lower bound: 80 + 60 - 100
        (10, 10, 1000, 0, 0, 10),  # 0.1 rounds to 0
    ],
)
def test_split_estimate_and_bounds(shared_buffers, os_cache, size, both, low, high):
    parts = split(shared_buffers, os_cache, size)
    assert (parts.both_bytes, parts.both_low_bytes, parts.both_high_bytes) == (both, low, high)
    assert parts.shared_buffers_only_bytes == shared_buffers - both
    assert parts.os_cache_only_bytes == os_cache - both
    total = (parts.both_bytes + parts.shared_buffers_only_bytes + parts.os_cache_only_bytes
             + parts.disk_only_bytes)  # fmt: skip
    assert total == size


def test_split_of_a_relation_that_grew_since_its_size_was_read():
    parts = split(120, 0, 100)  # shared_buffers saw a page extended after pg_relation_size
    assert parts.size_bytes == 120 and parts.disk_only_bytes == 0


def test_uncached_relations_adds_user_relations_with_no_buffer():
    rows = [("public", "t", "r", 8192, "base/5/16384", 0, 16384),
            ("public", "t_idx", "i", 16384, "base/5/16390", 0, 16390)]  # fmt: skip
    added = uncached_relations(rows, present={"public.t"})
    assert [(r.qualified_name, r.kind, r.buffers) for r in added] == [("public.t_idx", "index", 0)]


SPEC = """
name = "s"
[pgbench]
duration = "2s"
"""


def _spec(extra: str):
    return parse_spec(SPEC + extra, Path("spec.toml"))


def test_inspect_table_defaults_and_point_method():
    spec = _spec('[inspect]\nevery = "5s"\nmethod = "extension"\nmode = "fast"\n')
    assert spec.inspect.every_s == 5 and spec.inspect.snapshots == "before-after"
    assert spec.points()[0].workload.inspect_method == "extension/fast"
    assert _spec("").inspect is None


def test_inspect_method_sweep():
    spec = _spec('[inspect]\n[sweep]\ninspect_method = ["none", "summary", "extension/fast"]\n')
    assert [p.workload.inspect_method for p in spec.points()] == [
        "none", "summary", "extension/fast"
    ]  # fmt: skip
    assert parse_inspect_method("none") is None
    assert parse_inspect_method("pg_buffercache") == ("pg_buffercache", "consistent")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[inspect]\nevery = "soon"\n', 'inspect.every: invalid value "soon"'),
        ('[inspect]\nmethod = "fast"\n', 'inspect.method: invalid value "fast"'),
        ('[inspect]\nmethod = "summary"\nmode = "fast"\n', 'inspect.mode: invalid value "fast"'),
        ('[inspect]\nsnapshots = "none"\n', 'inspect.snapshots: invalid value "none"'),
        ("[inspect]\ntop = 0\n", "inspect.top: invalid value 0"),
        ("[inspect]\nos_cache = 1\n", "inspect.os_cache: invalid value 1"),
        ('[inspect]\nevry = "1s"\n', "inspect.evry: unknown key"),
        ('[sweep]\ninspect_method = ["none"]\n', "sweep.inspect_method: sweeping the inspect"),
        ('[inspect]\n[sweep]\ninspect_method = ["pg_buffercache/fast"]\n',
         'sweep.inspect_method: invalid value "pg_buffercache/fast"'),
        ('[inspect]\nalternate = "4s"\n', 'inspect.alternate: invalid value "4s": alternates'),
        ('[inspect]\nevery = "2s"\nalternate = "3s"\n', "too short for whole samples"),
        ('[inspect]\nevery = "1s"\nalternate = "1s"\n', "too short for whole samples"),
        ('[inspect]\nevery = "1s"\nalternate = "2s"\n', "fewer than two pairs of windows"),
        ('[inspect]\nalternate = "soon"\n', 'inspect.alternate: invalid value "soon"'),
    ],
)  # fmt: skip
def test_bad_inspect_values_are_one_line_user_errors(extra, message):
    with pytest.raises(UserError) as error:
        _spec(extra)
    assert message in error.value.message
    assert error.value.hint


# -- the overhead experiment (seed 003) -------------------------------------------------------


def test_paired_sag_pairs_rounds_and_gives_an_interval():
    from pgcachelab.analysis.inspect_overhead import paired_sag

    baseline = {0: 1000.0, 1: 1200.0, 2: 800.0}  # the machine drifts between rounds
    polled = {0: 990.0, 1: 1188.0, 2: 792.0, 3: 5.0}  # 1% less in each round; 3 has no pair
    sag = paired_sag(baseline, polled, "extension/fast")
    assert sag.ratios.n == 3
    assert sag.sag_percent == pytest.approx(1.0)
    low, high = sag.sag_ci_percent
    assert low == pytest.approx(1.0) and high == pytest.approx(1.0)  # no spread: no width
    assert paired_sag(baseline, {}, "summary") is None


def test_alternation_in_a_spec_and_for_the_pgbench_workload_only():
    text = 'name = "s"\n[pgbench]\nduration = "20s"\n[inspect]\nevery = "1s"\nalternate = "5s"\n'
    assert parse_spec(text, Path("spec.toml")).inspect.alternate_s == 5
    assert _spec("[inspect]\n").inspect.alternate_s == 0
    tpcc = 'name = "s"\nworkload = "tpcc"\n[inspect]\nevery = "1s"\nalternate = "5s"\n'
    with pytest.raises(UserError) as error:
        parse_spec(tpcc, Path("spec.toml"))
    assert "inspect.alternate" in error.value.message and "tpcc" in error.value.message


def _progress(name: str) -> list[tuple[float, float]]:
    """(Unix time, tps) of a real `pgbench -P 1 --progress-timestamp` run."""
    from pgcachelab.workloads.pgbench_output import parse_pgbench_output

    text = (Path(__file__).parent / "data" / "pgbench" / name).read_text()
    return [(p.elapsed_s, p.tps) for p in parse_pgbench_output(text).progress]


@pytest.mark.parametrize("label", ["15", "18"])
def test_progress_timestamps_are_unix_times_to_cut_windows_with(label):
    from pgcachelab.analysis.inspect_overhead import Windows, window_tps

    progress = _progress(f"{label}/select_only_progress_timestamp.txt")
    assert len(progress) == 3 and all(t > 1.7e9 for t, _ in progress)
    first = progress[0][0]
    # Windows of 2 s from 1.5 s before the first report: its second lies in window 0, the
    # next report's second straddles windows 0 and 1 and is left out, the third's is in 1.
    windows = Windows(first - 1.5, 2.0, True)
    means = window_tps(progress, windows)
    assert means == {0: progress[0][1], 1: progress[2][1]}


def test_alternation_ratios_pair_neighbouring_windows_whatever_comes_first():
    from pgcachelab.analysis.inspect_overhead import Windows, alternation_ratios, sag_of_ratios

    # 2 s windows from t=100; tps 1000 when not polled, 990 when polled (a 1% sag), over a
    # drift that a between-runs comparison would see as noise.
    def progress(first_polled: bool, drift: float) -> list[tuple[float, float]]:
        samples = []
        for second in range(1, 13):  # reports at 100.5, 101.5, ...: each second in one window
            at = 100 + second - 0.5
            window = int((at - 0.5 - 100) // 2)
            polled = (window % 2 == 0) == first_polled
            samples.append((at, (990.0 if polled else 1000.0) * (1 + drift * (window // 2))))
        return samples

    for first_polled in (True, False):
        windows = Windows(100.0, 2.0, first_polled)
        ratios = alternation_ratios(progress(first_polled, 0.2), windows)
        assert ratios == pytest.approx([0.99] * 3)
    sag = sag_of_ratios(ratios, "extension")
    assert sag.sag_percent == pytest.approx(1.0) and sag.ratios.n == 3
    # A window whose neighbour has no whole sample pairs with nothing: here window 2, in a
    # run cut after 7 reports (106.5 s).
    assert alternation_ratios(progress(True, 0)[:7], Windows(100.0, 2.0, True)) == [0.99]


def test_measurement_window_ratios_reads_what_the_runner_stores():
    from pgcachelab.analysis.inspect_overhead import measurement_window_ratios

    metrics = {"inspect_windows": {"start": 0.0, "length_s": 2.0, "first_polled": False},
               "pgbench": {"progress": [{"elapsed_s": t + 0.5, "tps": 10.0 + (t // 2) % 2}
                                        for t in range(1, 8)]}}  # fmt: skip
    assert measurement_window_ratios(metrics) == pytest.approx([11 / 10, 11 / 10])
    assert measurement_window_ratios({"pgbench": {"progress": []}}) == []


def test_abba_windows_cancel_a_steady_trend_that_biases_abab():
    from pgcachelab.analysis.inspect_overhead import Windows, alternation_ratios

    abba = Windows(0.0, 2.0, True, "abba")
    assert [abba.polled(i) for i in range(8)] == [True, False, False, True] * 2
    unpolled_first = Windows(0.0, 2.0, False, "abba")
    assert [unpolled_first.polled(i) for i in range(4)] == [False, True, True, False]
    assert [Windows(0.0, 2.0, True).polled(i) for i in range(4)] == [True, False] * 2  # abab

    # An A/A run (nothing polls) whose tps rises 1% a second: one report per window second.
    progress = [(at + 0.5, 1000.0 * 1.01**at) for at in range(1, 16)]
    abab_ratios = alternation_ratios(progress, Windows(0.0, 2.0, True))
    abba_ratios = alternation_ratios(progress, abba)
    assert all(r < 0.985 for r in abab_ratios)  # a "sag" of 2% made of the trend alone
    assert len(abba_ratios) == 4
    assert sum(abba_ratios) / 4 == pytest.approx(1.0, abs=0.001)
