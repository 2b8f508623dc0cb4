"""advise: pure advice on constructed samples, and end to end on quick runs made through the CLI."""

import json
import re
import statistics

import pytest
from fix_cli import SPECS_DIR, run_cli, run_cli_forked
from fix_clusters import dsn_of

from pgcachelab.analysis.advice import choose, format_interval
from pgcachelab.analysis.run_data import load_run
from pgcachelab.store.sqlite import SqliteResultStore

MB = 1024**2

# -- pure ------------------------------------------------------------------------------------------


def test_choose_a_clear_peak():
    choice = choose({1: [100, 102, 101], 8: [400, 405, 398], 32: [300, 310, 305]}, True)
    assert choice.best == 8
    assert choice.indistinguishable == []
    assert choice.caveats == []
    assert format_interval(choice.best_summary, " tps").startswith("401 tps [95% CI 392, 410]")


def test_choose_says_when_intervals_overlap_and_repetitions_are_few():
    choice = choose({"16": [100, 140], "17": [120, 130]}, True)
    assert choice.best == "17"
    assert choice.indistinguishable == ["16"]
    assert any("only 2 repetitions" in c for c in choice.caveats)
    assert any("do not tell them apart" in c for c in choice.caveats)


def test_choose_the_lowest_latency_and_one_repetition_has_no_interval():
    choice = choose({1 * MB: [0.5], 32 * MB: [0.1]}, False)
    assert choice.best == 32 * MB
    assert "no interval" in choice.caveats[0]


# -- end to end: quick runs through the CLI ------------------------------------------------------


def _run_and_advise(spec, tmp_path, lab_tmp):
    lab_dir = tmp_path / "lab"
    ran = run_cli("run", spec, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp)
    assert ran.returncode == 0, ran.stderr
    advised = run_cli("advise", "last", "--lab-dir", lab_dir)
    assert advised.returncode == 0, advised.stderr
    store = SqliteResultStore.in_lab_dir(lab_dir)
    return advised.stdout, load_run(store, store.runs()[-1].run_id)


@pytest.mark.server
def test_advise_a_clients_sweep_names_the_peak_it_measured(tmp_path, lab_tmp):
    output, data = _run_and_advise(SPECS_DIR / "two-points.toml", tmp_path, lab_tmp)
    means = {r.point.swept["clients"]: statistics.fmean(m.tps for m in r.ok) for r in data.points}
    peak = max(means, key=means.get)
    # two repetitions on a shared machine: a clear peak, or a best median the intervals cannot
    # single out (and then the run says so instead of naming it)
    assert (f"- clients: clients = {peak} gives the peak throughput" in output
            or f"- clients: no clear difference: {peak} has the best median" in output)  # fmt: skip
    assert "[95% CI" in output
    assert "cannot tell: only 2 repetitions" in output  # the spec repeats each point twice


@pytest.mark.server
def test_advise_a_cache_wash_run_names_the_shared_buffers_for_idx2(
    tmp_path, lab_tmp, running_cluster
):
    output, data = _run_and_advise(SPECS_DIR / "advise-cache-wash.toml", tmp_path, lab_tmp)
    assert re.search(
        r"- shared_buffers: (shared_buffers = \S+ gives the fastest index lookups "
        r"after a large scan|no clear difference: \S+ has the best median)",
        output,
    )
    assert "idx2 median" in output
    assert "cannot tell: only 2 repetitions" in output

    # doctor on a server of the same major version on this host cites the run as evidence
    result = run_cli("doctor", "--dsn", dsn_of(running_cluster), "--lab-dir", tmp_path / "lab",
                     "--json")  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    run_id = data.run.run_id
    assert report["context"]["lab_evidence"] == f"run {run_id}"
    [finding] = [f for f in report["findings"] if f["check"] == "server.shared_buffers"]
    assert finding["evidence"].startswith(f"the lab measured (run {run_id} 'advise-cache-wash'")
    # without the run, doctor says why it has no evidence
    other = run_cli("doctor", "--dsn", dsn_of(running_cluster), "--lab-dir", tmp_path, "--json")
    assert json.loads(other.stdout)["context"]["lab_evidence"].startswith("no results store at")


def test_advise_unknown_run_is_one_line(tmp_path):
    result = run_cli_forked("advise", "nope", "--lab-dir", tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("pgcachelab: --lab-dir: no results in")
