"""Issue 16's smaller cases: compare matches values in canonical units and refuses runs of
different workloads; one "best" for report and advise; a memory limit above the host refused.
Pure tests, then the CLI as a new user would run it (no server starts)."""

import shutil
from dataclasses import replace

import pytest
from fix_cli import run_cli_forked
from fix_lab import store_query
from fix_reports import REPORT_RUNS_DIR
from test_compare_pure import run, side

from pgcachelab.analysis.advice import choose
from pgcachelab.analysis.cache_split import best_setting
from pgcachelab.analysis.compare import compare_runs, match_points
from pgcachelab.analysis.summary import best_by_median, summarise
from pgcachelab.errors import UserError
from pgcachelab.experiments.preflight import check_memory_fits_host
from pgcachelab.probes.environment import memory_total_bytes
from pgcachelab.units import exact_amount_text, format_bytes

GB = 1024**3
PGBENCH_RUN = "20261122-232256-9b0294"  # big-cache-tiny
TPCC_RUN = "20261122-232518-1200f4"  # tpcc-ladder-tiny


# -- compare: canonical values -------------------------------------------------------------------


def test_points_match_on_equal_values_in_other_units():
    a = [side({"shared_buffers": sb}) for sb in ("32MB", "1GB", "128kB")]
    b = [side({"shared_buffers": sb}) for sb in ("32768kB", "1024MB", "256kB")]
    matching = match_points(a, b)
    assert [(pa.label, pb.label) for _, pa, pb in matching.pairs] == [
        ("shared_buffers=32MB", "shared_buffers=32768kB"),
        ("shared_buffers=1GB", "shared_buffers=1024MB"),
    ]
    assert [pa.label for _, pa in matching.only_a] == ["shared_buffers=128kB"]
    assert [pb.label for _, pb in matching.only_b] == ["shared_buffers=256kB"]


def test_settings_equal_in_other_units_are_no_context_difference():
    a = run([side({"scale": 1}, settings={"work_mem": "4MB"},
                  server={"max_wal_size": "64 16MB", "work_mem": "4096 kB"})])  # fmt: skip
    b = run([side({"scale": 1}, settings={"work_mem": "4096kB"},
                  server={"max_wal_size": "1024 MB", "work_mem": "4096 kB"})])  # fmt: skip
    assert compare_runs(a, b).context == []
    c = run([side({"scale": 1}, settings={"work_mem": "8MB"},
                  server={"max_wal_size": "2048 MB", "work_mem": "8192 kB"})])  # fmt: skip
    found = {d.what: (d.a, d.b) for d in compare_runs(a, c).context}
    assert found == {"setting work_mem": ("4MB", "8MB"),
                     "server setting max_wal_size": ("64 16MB", "2048 MB")}  # fmt: skip


def test_report_settings_are_exact_in_one_unit():
    assert exact_amount_text(64 * 16 * 1024**2, "16MB") == exact_amount_text(1024 * 1024**2, "MB")
    assert exact_amount_text(1536 * 1024**2, "8kB") == "1536MB"  # not "1.5GB", as 1540MB was
    assert exact_amount_text(300, "s") == "5min"
    assert exact_amount_text(0.2, "ms") == "200ms"
    assert exact_amount_text(0, "s") == "0s"
    assert exact_amount_text(3, None) is None


# -- compare: workloads and experiments ------------------------------------------------------------


def test_runs_of_different_workloads_are_refused_and_other_experiments_flagged():
    pgbench = replace(run([side({"clients": 1})]), run_id="A1", workload="pgbench")
    tpcc = replace(run([side({"clients": 1})]), run_id="B1", workload="tpcc")
    with pytest.raises(UserError) as caught:
        compare_runs(pgbench, tpcc)
    assert caught.value.message == (
        "compare: run A (A1) is a pgbench run and run B (B1) a tpcc run: their figures measure "
        "different work, no point can match"
    )
    assert caught.value.hint == "compare two runs of the same workload"
    other = replace(pgbench, name="another-experiment")
    found = {d.what: (d.a, d.b, d.serious) for d in compare_runs(pgbench, other).context}
    assert found == {"experiment": ("n", "another-experiment", False)}


def test_compare_of_a_pgbench_run_with_a_tpcc_run_is_one_line(tmp_path):
    store = tmp_path / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_DIR / "results.sqlite", store)  # opening a store writes
    result = run_cli_forked("compare", PGBENCH_RUN, TPCC_RUN, "--store", store)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"pgcachelab: compare: run A ({PGBENCH_RUN}) is a pgbench run and run B ({TPCC_RUN}) a "
        "tpcc run: their figures measure different work, no point can match",
        "hint: compare two runs of the same workload",
    ]
    assert result.stdout == ""


# -- one "best" --------------------------------------------------------------------------------


def test_report_and_advise_pick_the_same_best_by_median():
    # a stall drags 64MB's mean below 32MB's; its median stays the best
    samples = {32: [100.0, 101.0, 102.0], 64: [120.0, 121.0, 20.0]}
    summaries = {value: summarise(values) for value, values in samples.items()}
    assert summaries[64].mean < summaries[32].mean
    assert best_by_median(summaries, higher_is_better=True) == 64
    assert choose(samples, higher_is_better=True).best == 64
    latencies = {32: [1.0, 1.1, 0.9], 64: [0.5, 0.6, 3.0]}
    assert choose(latencies, higher_is_better=False).best == 64


def test_cache_split_uses_the_same_best():
    from test_cache_split_analysis import rep

    # 128MB: one stalled repetition, the mean 1.37 ms is worse than 256MB's 0.7, the median not
    idx2_ms = [(128, 0.5), (128, 0.6), (128, 3.0), (256, 0.7), (256, 0.7), (256, 0.7)]
    reps = [rep(sb, "off", r, 0.1, 900.0, idx2) for r, (sb, idx2) in enumerate(idx2_ms)]
    best, summary = best_setting(reps, "off", "idx2")
    assert best == 128 * 1024**2 and summary.median == pytest.approx(0.6)


# -- memory larger than the host -----------------------------------------------------------------


def test_a_memory_limit_above_the_host_is_refused():
    with pytest.raises(UserError) as caught:
        check_memory_fits_host(4 * 1024 * GB, 24 * GB, "exp.toml: machine.memory")
    assert caught.value.message == (
        "exp.toml: machine.memory: invalid value 4TB: more than this host's 24GB of memory"
    )
    assert caught.value.hint == (
        "give at most 24GB, or leave the limit out to give the server the whole host"
    )
    check_memory_fits_host(24 * GB, 24 * GB, "--memory")
    check_memory_fits_host(None, 24 * GB, "--memory")


@pytest.mark.parametrize("where", ["spec", "option"])
def test_run_with_more_memory_than_the_host_is_one_line_before_anything_runs(tmp_path, where):
    spec = tmp_path / "big.toml"
    spec.write_text('[pgbench]\nduration = "1s"\n'
                    + ('[machine]\nmemory = "4TiB"\n' if where == "spec" else ""))  # fmt: skip
    option = ["--memory", "4TiB"] if where == "option" else []
    result = run_cli_forked("run", spec, "--lab-dir", tmp_path / "lab", "--no-report", *option)
    assert result.returncode == 2, result.stderr
    source = f"{spec}: machine.memory" if where == "spec" else "--memory"
    host = format_bytes(memory_total_bytes())
    assert result.stderr.splitlines() == [
        f"pgcachelab: {source}: invalid value 4TB: more than this host's {host} of memory",
        f"hint: give at most {host}, or leave the limit out to give the server the whole host",
    ]
    assert store_query(tmp_path / "lab", "select count(*) from runs") in ([], [(0,)])


def test_report_markers_never_show_more_memory_than_the_host_had():
    """Runs stored before the limit was refused could ask for 4TB on a 24GB host."""
    from pgcachelab.analysis.run_data import RunData
    from pgcachelab.store.records import Run

    def data(limit):
        run = Run("r", "n", "exp.toml", "", {"memory_limit_bytes": limit},
                  {"memory_total_bytes": 24 * GB}, "done", None, None, 0.0, None, None,
                  "big-cache")  # fmt: skip
        return RunData(run, [])

    assert data(4 * 1024 * GB).memory_limit_bytes == 24 * GB
    assert data(4 * 1024 * GB).memory_available_bytes == 24 * GB
    assert data(2 * GB).memory_limit_bytes == 2 * GB
    assert data(None).memory_available_bytes == 24 * GB
