"""`compare`'s pure parts: the Mann-Whitney U test against textbook values, matching points by
their parameters, the context differences, and the store locations with masked passwords."""

import dataclasses
import itertools
import json
import math
import platform
import random
import re
from pathlib import Path

import pytest
from test_spec import spec

from pgcachelab.analysis.compare import (
    PointSide,
    RunSide,
    compare_point,
    compare_runs,
    exact_u_p_value,
    load_difference,
    mann_whitney_u,
    match_points,
    u_statistic,
)
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.errors import UserError
from pgcachelab.report.compare_text import as_dict, render_markdown, render_table
from pgcachelab.store.location import (
    choose_store,
    lab_dir_store,
    mask_password,
    parse_store,
)
from pgcachelab.store.records import Run, abandoned

REPO = Path(__file__).parent.parent

# -- Mann-Whitney U ------------------------------------------------------------------------------

# Critical values of U for a two-sided test at 0.05 (the standard table, e.g. Siegel &
# Castellan's Table J; Mann and Whitney 1947): the largest U whose p is still <= 0.05.
CRITICAL_U = {(3, 5): 0, (3, 6): 1, (4, 4): 0, (4, 5): 1, (4, 6): 2, (5, 5): 2, (5, 6): 3,
              (6, 6): 5, (7, 7): 8, (8, 8): 13, (9, 9): 17, (10, 10): 23,
              (20, 20): 127}  # fmt: skip


@pytest.mark.parametrize(("sizes", "critical"), CRITICAL_U.items())
def test_exact_u_matches_the_table_of_critical_values(sizes, critical):
    n_a, n_b = sizes
    assert exact_u_p_value(critical, n_a, n_b) <= 0.05 < exact_u_p_value(critical + 1, n_a, n_b)


def test_exact_u_distribution_is_the_count_of_orderings():
    # Brute force over every way to choose which ranks belong to sample a.
    n_a, n_b = 4, 3
    counts = {}
    for ranks_a in itertools.combinations(range(n_a + n_b), n_a):
        ranks_b = [r for r in range(n_a + n_b) if r not in ranks_a]
        u = sum(1 for x in ranks_a for y in ranks_b if y > x)
        counts[u] = counts.get(u, 0) + 1
    total = math.comb(n_a + n_b, n_a)
    for u in range(n_a * n_b + 1):
        lower = sum(c for v, c in counts.items() if v <= u) / total
        upper = sum(c for v, c in counts.items() if v >= u) / total
        assert exact_u_p_value(u, n_a, n_b) == pytest.approx(min(1, 2 * min(lower, upper)))


@pytest.mark.parametrize("seed", range(20))
def test_u_from_ranks_is_the_count_of_pairs(seed):
    """u_statistic (rank sums, O(n log n)) against the definition: every pair, ties half."""
    rng = random.Random(seed)
    for _ in range(50):
        a = [float(rng.randint(0, 8)) for _ in range(rng.randint(1, 25))]  # many ties
        b = [float(rng.randint(0, 8)) for _ in range(rng.randint(1, 25))]
        pairs = sum(1.0 if y > x else 0.5 if y == x else 0.0 for x in a for y in b)
        assert u_statistic(a, b) == pairs
        assert mann_whitney_u(a, b).u == pairs


def test_three_against_three_cannot_reach_five_percent():
    test = mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert (test.u, test.method) == (9, "exact")
    assert test.p_value == pytest.approx(0.1) == test.smallest_p


def test_normal_approximation_agrees_with_the_table_for_large_samples():
    # n = 20 + 20, U = 127: z = (200 - 127 - 0.5) / sqrt(20 * 20 * 41 / 12) = 1.961, p = 0.0499
    a = [float(i) for i in range(20)]
    b = [x + 0.5 for x in a]
    test = mann_whitney_u(a, b, exact_limit=10)
    assert test.method == "normal approximation"
    u = 127
    z = (200 - u - 0.5) / math.sqrt(20 * 20 * 41 / 12)
    assert z == pytest.approx(1.961, abs=1e-3)
    assert math.erfc(z / math.sqrt(2)) == pytest.approx(0.0499, abs=1e-3)


def test_ties_use_the_normal_approximation_with_the_tie_correction():
    a, b = [1.0, 2.0, 2.0, 3.0], [2.0, 3.0, 4.0, 5.0]
    test = mann_whitney_u(a, b)
    # U = 2 + 3.5 + 4 + 4 (b > a, ties count one half) = 13.5; ties: three 2s, two 3s
    assert test.u == 13.5 and test.method == "normal approximation"
    variance = 4 * 4 / 12 * (9 - ((27 - 3) + (8 - 2)) / (8 * 7))
    z = (abs(13.5 - 8) - 0.5) / math.sqrt(variance)
    assert test.p_value == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert mann_whitney_u([5.0, 5.0], [5.0, 5.0]).p_value == 1.0


# -- a point's ratio ---------------------------------------------------------------------------


def test_a_clear_change_is_significant_and_its_ratio_is_the_welch_one():
    a, b = [1000, 1020, 990, 1010, 1005], [500, 510, 495, 505, 498]
    point = compare_point((("scale", 1),), a, b)
    assert (point.ratio, point.ci_low, point.ci_high) == welch_log_ratio(a, b)
    assert point.significant and point.ci_high < 1 and point.verdict == "B SLOWER"
    assert point.median_ratio == pytest.approx(500 / 1005)
    assert point.rank_test.p_value == pytest.approx(2 / 252)


def test_the_same_distribution_is_not_significant():
    point = compare_point((), [1000, 1100, 950, 1050, 990], [1010, 1080, 960, 1040, 1000])
    assert not point.significant and point.verdict == "no significant difference"
    assert point.ci_low < 1 < point.ci_high


def test_one_repetition_gives_a_ratio_without_an_interval():
    point = compare_point((), [100.0], [110.0])
    assert point.ratio == pytest.approx(1.1) and point.ci_low is None
    assert point.verdict == "too few repetitions"
    assert compare_point((), [], [1.0]).verdict == "no data"


# -- matching points -------------------------------------------------------------------------


def side(swept: dict, tps=(100.0, 101.0, 99.0), workload=None, settings=None, server=None,
         derived=frozenset()):  # fmt: skip
    workload = {"mode": "select-only", "clients": 4, "duration": 2, **(workload or {})}
    workload.update({k: v for k, v in swept.items() if k not in ("shared_buffers",)})
    settings = {"shared_buffers": "32MB", **(settings or {})}
    if "shared_buffers" in swept:
        settings["shared_buffers"] = swept["shared_buffers"]
    label = ", ".join(f"{k}={v}" for k, v in swept.items())
    return PointSide(label, swept, workload, settings, list(tps), server or {}, derived)


def run(points, status="done", **environment):
    env = {"server_version": "18.1", "cpu_model": "x", "cores": 2, "hostname": "h",
           "pgbench_version": "pgbench (PostgreSQL) 18.1", **environment}  # fmt: skip
    return RunSide("r", "n", status, env, {"kind": "managed"}, points)


def test_points_match_by_swept_values_and_the_rest_are_listed():
    a = [side({"scale": s}) for s in (1, 2, 4, 8)]
    b = [side({"scale": s}) for s in (8, 2, 16)]
    matching = match_points(a, b)
    assert matching.keys == ["scale"]
    assert [key for key, _, _ in matching.pairs] == [(("scale", 2),), (("scale", 8),)]
    assert [key for key, _ in matching.only_a] == [(("scale", 1),), (("scale", 4),)]
    assert [key for key, _ in matching.only_b] == [(("scale", 16),)]


def test_a_setting_swept_in_one_run_matches_the_fixed_value_of_the_other():
    a = [side({"scale": 1})]
    b = [side({"scale": 1, "shared_buffers": sb}) for sb in ("32MB", "1MB")]
    comparison = compare_runs(run(a), run(b))
    assert comparison.keys == ["scale", "shared_buffers"]
    assert [p.label for p in comparison.points] == ["scale=1, shared_buffers=32MB"]
    assert comparison.only_b == ["scale=1, shared_buffers=1MB"]
    assert comparison.context == []


def test_context_differences_come_before_the_numbers_serious_first():
    server_a = {
        "shared_buffers": "16384 8kB",
        "work_mem": "4096 kB",
        "port": "5432",
        "wal_buffers": "512 8kB",
        "jit": "on",
    }
    server_b = {
        "shared_buffers": "128 8kB",
        "work_mem": "4096 kB",
        "port": "5433",
        "wal_buffers": "8 8kB",
        "jit": "off",
    }
    derived = frozenset({"wal_buffers", "jit"})  # jit: set in B, a built-in default in A
    a = run([side({"scale": 1}, server=server_a, derived=derived)], kernel="6.1")
    b = run(
        [side({"scale": 1}, workload={"duration": 4}, server=server_b, derived={"wal_buffers"})],
        status="failed", kernel="6.2", server_version="15.20",
    )  # fmt: skip
    comparison = compare_runs(a, b)
    found = {d.what: (d.a, d.b, d.serious) for d in comparison.context}
    assert found["server version"] == ("18.1", "15.20", True)
    assert found["workload duration"] == ("2", "4", True)
    assert found["server setting shared_buffers"] == ("16384 8kB", "128 8kB", True)
    assert found["run B status"] == ("done", "failed", True)
    assert found["kernel"] == ("6.1", "6.2", False)
    assert found["server setting jit"] == ("on", "off", True)
    wal_buffers = "server setting wal_buffers (chosen by the server from other settings)"
    assert found[wal_buffers] == ("512 8kB", "8 8kB", False)
    assert "server setting port" not in found and "server setting work_mem" not in found
    assert [d.serious for d in comparison.context][-1] is False


def test_identical_runs_have_no_context_differences_and_every_format_renders():
    points = [side({"scale": s}, tps=(100.0 + s, 102.0, 98.0)) for s in (1, 2)]
    comparison = compare_runs(run(points), run(points))
    assert comparison.context == [] and comparison.significant == []
    assert as_dict(comparison)["points"][0]["point"] == {"scale": 1}
    table = render_table(comparison)
    assert "0 of 2 matched points differ significantly" in table
    assert "Welch's t on log tps" in table and "Mann-Whitney U" in table
    assert render_markdown(comparison).count("| scale=") == 2


def test_p99_is_compared_where_both_runs_logged_latencies_lower_being_better():
    fast = dataclasses.replace(side({"scale": 1}), p99_ms=[1.0, 1.1, 0.9, 1.05])
    slow = dataclasses.replace(side({"scale": 1}), p99_ms=[2.0, 2.2, 1.9, 2.1])
    comparison = compare_runs(run([fast, side({"scale": 2})]), run([slow, side({"scale": 2})]))
    [p99] = comparison.p99  # scale=2 has no logs on either side: not compared
    assert p99.ratio == pytest.approx(2.0, rel=0.05) and p99.ci_low > 1
    assert p99.verdict == "B SLOWER"
    assert compare_runs(run([slow]), run([fast])).p99[0].verdict == "B faster"
    table = render_table(comparison)
    assert "p99 latency:" in table and "median p99 ms A" in table
    assert as_dict(comparison)["p99"][0]["verdict"] == "B SLOWER"
    assert "### p99 latency" in render_markdown(comparison)


# -- store locations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://lab:s3cret@db.example/results", "postgresql://lab:***@db.example/results"),
        ("postgres://lab@db/results?password=s3cret&sslmode=require",
         "postgres://lab@db/results?password=***&sslmode=require"),
        ("postgresql://lab@db/results", "postgresql://lab@db/results"),
        ("postgresql://:p%40ss@/results?host=/tmp", "postgresql://:***@/results?host=/tmp"),
        ("host=db password=s3cret dbname=x", "host=db password=*** dbname=x"),
    ],
)  # fmt: skip
def test_passwords_are_masked(given, shown):
    assert mask_password(given) == shown


def test_store_values_and_their_precedence(tmp_path):
    assert parse_store("postgresql://lab@db/x").kind == "postgresql"
    assert parse_store("sqlite:///tmp/x.sqlite").path == Path("/tmp/x.sqlite")
    assert parse_store(f"sqlite:{tmp_path}/r.sqlite").path == tmp_path / "r.sqlite"
    assert parse_store(str(tmp_path)).path == tmp_path / "results.sqlite"  # a lab directory
    lab = tmp_path / "lab"
    assert choose_store(None, None, None, lab) == lab_dir_store(lab)
    assert choose_store(None, None, "postgresql://e/x", lab).url == "postgresql://e/x"
    assert choose_store(None, "postgresql://s/x", "postgresql://e/x", lab).url == "postgresql://s/x"
    assert choose_store("postgresql://o/x", "postgresql://s/x", None, lab).url == "postgresql://o/x"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("mysql://root:hunter2@db/x", r"--store: unknown store scheme 'mysql://' in "
                                      r"'mysql://root:\*\*\*@db/x'"),
        ("host=/tmp password=hunter2", r"key=value connection string is not a store: "
                                       r"'host=/tmp password=\*\*\*'"),
        ("sqlite:", r"no file after 'sqlite:'"),
    ],
)  # fmt: skip
def test_bad_store_values_are_one_line_without_the_password(value, message):
    with pytest.raises(UserError) as caught:
        parse_store(value)
    assert re.search(message, caught.value.message), caught.value.message
    assert "hunter2" not in str(caught.value) and "\n" not in caught.value.message


def test_a_spec_names_its_store_but_never_a_password():
    assert spec('store = "postgresql://lab@db/results"').store == "postgresql://lab@db/results"
    with pytest.raises(UserError) as caught:
        spec('store = "postgresql://lab:hunter2@db/results"')
    assert "hunter2" not in str(caught.value) and "PGPASSWORD" in caught.value.hint
    with pytest.raises(UserError, match=r"exp.toml: store: unknown store scheme"):
        spec('store = "redis://db"')


@pytest.mark.parametrize("name", ["compare-quick.toml", "compare-quick-async-commit.toml"])
def test_the_compare_experiments_differ_only_in_synchronous_commit(name):
    parsed = spec((REPO / "experiments" / name).read_text(), REPO / "experiments" / name)
    other = spec((REPO / "experiments" / "compare-quick.toml").read_text())
    assert parsed.parameters == other.parameters and parsed.sweep_workload == other.sweep_workload
    assert parsed.repetitions == 5 and parsed.order == "interleaved"
    assert {k: v for k, v in parsed.settings.items() if k != "synchronous_commit"} == {
        "shared_buffers": "128MB"
    }


def test_only_this_hosts_killed_runs_are_abandoned():
    def stored(hostname):
        return Run("r", "n", "p", "", {}, {"hostname": hostname}, "running", 2**22 + 7, None,
                   0.0, None, None, "big-cache")  # fmt: skip

    here, elsewhere = stored(platform.node()), stored("another-host")
    assert abandoned([here, elsewhere]) == [here]


def test_a_busy_or_changed_machine_load_is_a_context_difference():
    assert load_difference(0.4, 1.2, 2) is None  # quiet, and within a core of each other
    assert load_difference(None, 9.0, 2) is None  # older runs did not record it
    changed = load_difference(1.0, 2.5, 4)
    assert (changed.a, changed.b, changed.serious) == ("1.0", "2.5", True)
    assert "4 cores" in changed.what
    assert load_difference(9.1, 9.4, 2) is not None  # similar, but far beyond the cores


# -- real runs (tests/data/compare/runs.json, from capture.py) ------------------------------------


def captured_runs() -> list[RunSide]:
    runs = json.loads((Path(__file__).parent / "data" / "compare" / "runs.json").read_text())
    return [
        RunSide(
            r["run_id"], r["name"], r["status"], r["environment"], r["target"],
            [PointSide(**{**p, "derived_settings": frozenset(p["derived_settings"])})
             for p in r["points"]],
            r["load_average"],
        )
        for r in runs
    ]  # fmt: skip


def test_real_identical_runs_differ_at_few_points_and_the_deliberate_change_at_all():
    first, second, async_commit = captured_runs()
    identical = compare_runs(first, second)
    assert len(identical.points) == 4 and identical.only_a == identical.only_b == []
    assert len(identical.significant) <= 1
    assert not [d for d in identical.context if d.what.startswith(("setting", "server setting"))]
    changed = compare_runs(first, async_commit)
    assert [p.verdict for p in changed.points] == ["B faster"] * 4
    assert all(p.ci_low > 2 for p in changed.points)
    assert changed.context[0].serious
    settings = [d for d in changed.context if d.serious and "setting" in d.what]
    assert [(d.what, d.a, d.b) for d in settings] == [("setting synchronous_commit", "on", "off")]
