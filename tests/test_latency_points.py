"""Latency distributions of real pgbench points (issue 32): every point stores its percentiles,
its HdrHistogram and a per-second series; a sweep of -R gets its knee in the report and advise."""

import json

import pytest
from fix_cli import SPECS_DIR, run_cli
from fix_lab import store_query
from fix_processes import server_reachable_dir

from pgcachelab.workloads.pgbench_latency import decode_histogram

pytestmark = [pytest.mark.server, pytest.mark.slow]


@pytest.fixture(scope="module")
def rate_run(tmp_path_factory):
    lab_dir = tmp_path_factory.mktemp("rate-run") / "lab"
    with server_reachable_dir() as lab_tmp:
        result = run_cli("run", SPECS_DIR / "rate-sweep.toml", "--lab-dir", lab_dir, tmpdir=lab_tmp)
        assert list(lab_tmp.iterdir()) == []  # the logs' scratch directory included
    assert result.returncode == 0, result.stderr
    [(run_id,)] = store_query(lab_dir, "select run_id from runs")
    rows = store_query(
        lab_dir,
        "select point_index, tps, metrics from measurements where run_id = ? order by 1",
        (run_id,),
    )
    return lab_dir, run_id, result, [(p, tps, json.loads(m)) for p, tps, m in rows]


def test_every_point_stores_its_distribution_lag_and_per_second_series(rate_run):
    _, _, _, rows = rate_run
    for _, _, metrics in rows:
        latency = metrics["latency"]
        assert latency["logged"] > 100 and latency["sampling_rate"] <= 1.0
        assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["p999_ms"]
        assert latency["p999_ms"] <= latency["max_ms"]
        histogram = decode_histogram(latency["hdr"])
        assert histogram.get_total_count() == latency["logged"]
        assert latency["lag"]["p99_ms"] >= 0  # -R: the schedule lag is there
        assert sum(row[1] for row in latency["per_second"]) == latency["logged"]
        assert "--log" in metrics["pgbench_args"]
    (_, slow_tps, slow), (_, fast_tps, fast) = rows
    assert slow_tps == pytest.approx(300, rel=0.2)  # the server keeps up with 300 tps
    assert fast_tps < 0.95 * 1_000_000
    # behind its schedule the latency counts the queue: far above the unhurried point's
    assert fast["latency"]["p99_ms"] > 10 * slow["latency"]["p99_ms"]


def test_the_report_and_advise_show_the_knee(rate_run):
    lab_dir, run_id, result, _ = rate_run
    page = (lab_dir / "reports" / run_id / "index.html").read_text()
    assert "Latency against offered load" in page and "coordinated omission" in page
    assert (lab_dir / "reports" / run_id / "latency-by-offered-load.png").is_file()
    assert "p50 / p99 / p99.9 ms" in page
    advice = run_cli("advise", run_id, "--lab-dir", lab_dir)
    assert advice.returncode == 0, advice.stderr
    assert "p99 stays under" in advice.stdout and "the knee" in advice.stdout
    shown = run_cli("show", run_id, "--lab-dir", lab_dir)
    assert shown.returncode == 0 and "p99 ms" in shown.stdout, shown.stderr


def test_report_point_plots_one_run_second_by_second(rate_run):
    lab_dir, run_id, _, _ = rate_run
    drawn = run_cli("report", run_id, "--lab-dir", lab_dir, "--point", "1")
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.strip().endswith("point-1-r0.png") and "Traceback" not in drawn.stderr
    for args, named in (
        (["--point", "7"], "--point: no point 7 in this run"),
        (["--point", "0", "--repetition", "4"], "--repetition: point 0 has no repetition 4"),
        (["--repetition", "0"], "--repetition: only with --point"),
    ):
        refused = run_cli("report", run_id, "--lab-dir", lab_dir, *args)
        assert refused.returncode == 2 and named in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
