"""Pure pieces: probe deltas, statistics, pgbench command lines."""

import math
from pathlib import Path

from pgcachelab.analysis.summary import hit_ratio, summarise, t95
from pgcachelab.clusters.client import PgbenchTarget, pgoptions
from pgcachelab.probes.base import delta
from pgcachelab.spec import Script, parse_spec
from pgcachelab.workloads.pgbench import default_init_steps, failure_line, init_args, run_args

DATA = Path(__file__).parent / "data"

# The seed's pgbench parameters, typed as a point carries them.
WORKLOAD = parse_spec(
    '[pgbench]\nclients = 40\nthreads = 4\nduration = "20s"', Path("seed.toml")
).parameters


def test_delta_of_nested_counters():
    before = {"database": {"blks_hit": 10, "size_bytes": 100}, "wal": {"absent": True}}
    after = {"database": {"blks_hit": 25, "size_bytes": 90}, "wal": {"absent": True}}
    assert delta(before, after) == {
        "database": {"blks_hit": 15, "size_bytes": None},
        "wal": {"absent": True},
    }
    assert delta({}, {"x": {"y": 3}}) == {"x": {"y": None}}


def test_summary_with_confidence_interval():
    summary = summarise([100.0, 110.0, 90.0, 100.0])
    assert summary.median == 100.0
    assert summary.n == 4
    half = t95(3) * summary.stdev / 2
    assert math.isclose(summary.ci_low, 100 - half)
    assert summarise([5.0]).ci_low is None
    assert summarise([]) is None
    assert hit_ratio(90, 10) == 0.9
    assert hit_ratio(0, 0) is None


def test_run_args_for_the_seed_command():
    assert run_args(WORKLOAD) == ["-b", "select-only", "-c", "40", "-j", "4", "-T", "20", "-P", "1"]


def test_run_args_threads_capped_and_options():
    workload = WORKLOAD.changed(mode="simple-update", clients=2, threads=4, transactions=100,
                                per_statement=True, protocol="prepared", rate=500,
                                max_tries=3)  # fmt: skip
    args = run_args(workload)
    assert args[:6] == ["-b", "simple-update", "-c", "2", "-j", "2"]
    assert "-t" in args and "-T" not in args
    assert args[args.index("-M") + 1] == "prepared"
    assert args[args.index("-R") + 1] == "500"
    assert "-r" in args and "--max-tries" in args


def test_warmup_args_have_no_reports():
    assert run_args(WORKLOAD, duration_s=5, with_reports=False)[-2:] == ["-T", "5"]


def test_custom_scripts_with_weights():
    workload = WORKLOAD.changed(
        mode="custom", scripts=(Script(Path("/s/a.sql"), 7), Script(Path("/s/b.sql"), 3))
    )
    args = run_args(workload)
    assert args[:5] == ["-f", "/s/a.sql@7", "-f", "/s/b.sql@3", "-n"]
    assert "-s" not in args  # its own data: no scale to tell it
    # on pgbench's tables the lab built, :scale is theirs (pgbench says 1 for custom scripts)
    built = run_args(workload.changed(init_steps="dtGvp", scale=6))
    assert built[5:7] == ["-s", "6"]


def test_init_args_use_server_side_generation_from_13():
    assert default_init_steps(13) == "dtGvp"
    assert default_init_steps(12) == "dtgvp"
    assert init_args(5, None, 18) == ["-i", "-s", "5", "-I", "dtGvp"]


def test_passwords_only_in_the_environment():
    target = PgbenchTarget({"host": "/tmp/s", "dbname": "bench"}, password="sekrit",
                           session_options={"work_mem": "64MB", "search_path": "a b"})  # fmt: skip
    assert "sekrit" not in target.connection_string()
    env = target.environment()
    assert env["PGPASSWORD"] == "sekrit"
    assert env["PGOPTIONS"] == "-c work_mem=64MB -c search_path=a\\ b"
    assert pgoptions({}) == ""


def test_pgbench_keeps_the_callers_pgpassword_when_the_target_has_none(monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "from-the-user")
    assert PgbenchTarget({"host": "127.0.0.1"}).environment()["PGPASSWORD"] == "from-the-user"
    own = PgbenchTarget({"host": "127.0.0.1"}, password="the-clusters")
    assert own.environment()["PGPASSWORD"] == "the-clusters"


def test_printable_escapes_what_would_act_on_a_terminal():
    from pgcachelab.printable import printable, printable_lines

    assert printable("scale=1 café") == "scale=1 café"
    assert printable("a\x1b]0;PWNED\x07b\nc\td\x9b") == "a\\x1b]0;PWNED\\x07b\\nc\\td\\x9b"
    assert printable("abc\u202edef") == "abc\\u202edef"  # a bidi override reorders the line
    assert printable_lines("one\x1b[2J\ntwo") == "one\\x1b[2J\ntwo"


def test_progress_lines_are_escaped():
    import io

    from pgcachelab.cli.progress import LineProgress

    stream = io.StringIO()
    LineProgress(stream).note("run 1: x\x1b]0;PWNED\x07, 2 points")
    assert stream.getvalue() == "run 1: x\\x1b]0;PWNED\\x07, 2 points\n"


def _measurement(point: int, status: str, started_at: float, reason: str | None = None):
    from pgcachelab.store.records import Measurement

    return Measurement(point, 0, status, reason, started_at, started_at + 1, 1.0, None, None,
                       None, None, {})  # fmt: skip


def test_a_run_outcome_counts_points_measured_and_keeps_the_first_failure():
    from pgcachelab.experiments.run_outcome import finished_line, nothing_measured, run_outcome

    every_point = run_outcome(2, [_measurement(0, "ok", 1), _measurement(1, "ok", 2)])
    assert finished_line("r", every_point) == "run r finished"
    some = run_outcome(3, [_measurement(0, "ok", 1), _measurement(1, "failed", 3, "late\nmore"),
                           _measurement(2, "failed", 2, "first")])  # fmt: skip
    assert finished_line("r", some) == (
        "run r finished: 1 of 3 points measured, 2 failed; first failure: first"
    )
    none = run_outcome(1, [_measurement(0, "failed", 1, "pgbench exited with 2\nstderr...")])
    assert none.nothing_measured and not some.nothing_measured
    error = nothing_measured("r", none)
    assert (error.exit_code, error.message) == (
        1,
        "run r: 0 of 1 points measured; first failure: pgbench exited with 2",
    )


def test_an_aborted_run_is_named_by_its_first_server_error():
    output = (DATA / "pgbench" / "run-aborted-missing-table.txt").read_text()
    assert output.rstrip().endswith("Run was aborted; the above results are incomplete.")
    assert failure_line(output) == 'ERROR: relation "pgbench_accounts" does not exist'
    assert (
        failure_line("pgbench: error: could not connect\n") == "pgbench: error: could not connect"
    )
