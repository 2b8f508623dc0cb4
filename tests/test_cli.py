"""The `pgcachelab` command through its real entry point, in a subprocess.

Bad input must end in exit code 2 with one `pgcachelab: ...` line (and at most one `hint: ...`)
before any server starts; a small real run must be listed, shown, exported and reported.
"""

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import (
    SPECS_DIR,
    dsn_of,
    postmaster_pid,
    processes_mentioning,
    run_cli,
    server_reachable_dir,
    store_query,
)

VALID_SPEC = (SPECS_DIR / "two-points.toml").read_text()

# (spec text or None, arguments, stderr message regex, hint regex or None)
# Placeholders: {spec} the written spec, {lab} the lab dir, {empty} an empty directory.
BAD_INPUT = [
    pytest.param(
        'name = "x"\nbogus = 1\n',
        ["run", "{spec}"],
        r"spec\.toml: bogus: unknown key",
        r"use one of .*name.*pgbench",
        id="unknown-top-level-key",
    ),
    pytest.param(
        "[pgbench]\nclient = 2\n",
        ["run", "{spec}"],
        r"spec\.toml: pgbench\.client: unknown key",
        r"use one of .*clients",
        id="unknown-pgbench-key",
    ),
    pytest.param(
        '[server.settings]\nshared_bufers = "64MB"\n',
        ["run", "{spec}"],
        r'server\.settings\.shared_bufers: unknown server setting "shared_bufers"',
        r"did you mean shared_buffers\b",
        id="unknown-server-setting",
    ),
    pytest.param(
        '[server.settings]\nshared_buffers = "12XB"\n',
        ["run", "{spec}"],
        r'server\.settings\.shared_buffers: invalid value "12XB": unknown unit \'XB\'',
        r"fix the value",
        id="unknown-memory-unit",
    ),
    pytest.param(
        '[sweep.settings]\nwork_mem = ["64MB", "lots"]\n',
        ["run", "{spec}"],
        r'sweep\.settings\.work_mem: invalid value "lots": work_mem takes a number',
        r"fix the value",
        id="bad-swept-setting-value",
    ),
    pytest.param(
        "[sweep]\nscale = []\n",
        ["run", "{spec}"],
        r"spec\.toml: sweep\.scale: empty sweep",
        r"at least one value",
        id="empty-sweep",
    ),
    pytest.param(
        '[pgbench]\nmode = "read-only"\n',
        ["run", "{spec}"],
        r'pgbench\.mode: invalid value "read-only": unknown mode',
        r"use one of select-only, ",
        id="bad-mode",
    ),
    pytest.param(
        'workload = "cache-wash"\n[cache_wash]\nwarmup = "5s"\nwarmup_lookups = 1000\n',
        ["run", "{spec}"],
        r"spec\.toml: cache_wash\.warmup_lookups: cannot be given with cache_wash\.warmup$",
        r"keep one: warmup = \"100s\" warms for a time, warmup_lookups = N for a count",
        id="cache-wash-warmup-and-warmup-lookups",
    ),
    pytest.param(
        'workload = "cache-wash"\n[cache_wash]\nwarmup_lookups = 2.5\n',
        ["run", "{spec}"],
        r"cache_wash\.warmup_lookups: invalid value 2\.5: not an integer >= 0",
        r"use 0 or more",
        id="cache-wash-bad-warmup-lookups",
    ),
    pytest.param(
        "name = \n",
        ["run", "{spec}"],
        r"spec\.toml: not valid TOML",
        r"fix the TOML syntax",
        id="not-toml",
    ),
    pytest.param(
        None,
        ["run", "{empty}/nope.toml"],
        r"cannot read spec '.*/nope\.toml': No such file or directory",
        r"experiment TOML file",
        id="nonexistent-spec",
    ),
    pytest.param(
        None,
        ["run"],
        r"give either a spec file or --resume RUN",
        r"pgcachelab run x\.toml",
        id="neither-spec-nor-resume",
    ),
    pytest.param(
        None,
        ["run", "--resume", "nosuchrun"],
        r"no run 'nosuchrun' in .*results\.sqlite",
        r"pgcachelab runs",
        id="resume-unknown-run",
    ),
    pytest.param(
        VALID_SPEC,
        ["run", "{spec}", "--dsn", "host={empty} port=5999 user=lab dbname=postgres"],
        r"--dsn: cannot connect to dbname=postgres host=.* port=5999 user=lab: ",
        r"check that the server runs",
        id="dsn-where-nothing-listens",
    ),
    pytest.param(
        VALID_SPEC,
        ["run", "{spec}", "--dsn", "host={empty}", "--pg-bin", "{empty}"],
        r"--dsn and --pg-bin together",
        r"a server given by --dsn has its binaries",
        id="dsn-and-pg-bin",
    ),
    pytest.param(
        VALID_SPEC,
        ["run", "{spec}", "--pg-bin", "{empty}"],
        r"--pg-bin: no postgres binary in '.*'",
        r"/usr/lib/postgresql/15/bin",
        id="pg-bin-without-postgres",
    ),
    pytest.param(
        None,
        ["runs"],
        r"--lab-dir: no results in '.*'",
        r"run an experiment first",
        id="runs-without-results",
    ),
    pytest.param(
        None,
        ["export", "last", "--format", "xml"],
        r"--format: unknown format 'xml'",
        r"use csv or json",
        id="export-unknown-format",
    ),
]


def assert_user_error(result, message: str, hint: str | None) -> None:
    """Exit 2, stderr one `pgcachelab:` line matching `message`, then one `hint:` line or none."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) in (1, 2), result.stderr
    assert lines[0].startswith("pgcachelab: "), result.stderr
    assert re.search(message, lines[0]), lines[0]
    if hint is None:
        assert len(lines) == 1, result.stderr
    else:
        assert len(lines) == 2, result.stderr
        assert lines[1].startswith("hint: "), result.stderr
        assert re.search(hint, lines[1]), lines[1]


def assert_nothing_ran(lab_dir: Path, lab_tmp: Path) -> None:
    """No run in the store and no cluster work directory was ever made."""
    assert store_query(lab_dir, "select run_id from runs") == []
    assert store_query(lab_dir, "select run_id from measurements") == []
    assert list(lab_tmp.iterdir()) == []


@pytest.mark.parametrize(("spec_text", "args", "message", "hint"), BAD_INPUT)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, lab_tmp, spec_text, args, message, hint):
    lab_dir, empty = tmp_path / "lab", tmp_path / "empty"
    empty.mkdir()
    spec = tmp_path / "spec.toml"
    if spec_text is not None:
        spec.write_text(spec_text)
    places = {"spec": spec, "lab": lab_dir, "empty": empty}
    arguments = [arg.format(**places) for arg in args]
    result = run_cli(*arguments, "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert_user_error(result, message, hint)
    assert_nothing_ran(lab_dir, lab_tmp)


def test_a_usage_error_is_exit_code_2_without_a_traceback(tmp_path):
    result = run_cli("run", "--no-such-option", "--lab-dir", tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "No such option: --no-such-option" in result.stderr


# -- an existing server given by --dsn: measured, never reconfigured -----------------------------


def _server_state(cluster) -> dict:
    """What would show that the lab touched the server: its files, its settings, its pid."""
    files = {}
    for name in ("postgresql.conf", "postgresql.auto.conf", "pgcachelab.conf"):
        path = cluster.data_dir / name
        files[name] = (path.read_bytes(), path.stat().st_mtime_ns)
    with cluster.connect() as conn:
        loaded_at = conn.execute("select pg_conf_load_time()").fetchone()[0]
        settings = dict(
            conn.execute(
                "select name, setting || ':' || source from pg_settings"
                " where name in ('shared_buffers', 'work_mem')"
            ).fetchall()
        )
    return {
        "files": files,
        "conf_loaded_at": loaded_at,
        "settings": settings,
        "postmaster": postmaster_pid(cluster.work_dir),
    }


@pytest.mark.server
def test_dsn_refuses_a_restart_setting_before_anything_runs(shared_cluster, tmp_path, lab_tmp):
    shared_cluster.apply_settings({})
    before = _server_state(shared_cluster)
    lab_dir = tmp_path / "lab"
    result = run_cli(
        "run", SPECS_DIR / "sweep-shared-buffers.toml", "--dsn", dsn_of(shared_cluster),
        "--lab-dir", lab_dir, tmpdir=lab_tmp,
    )  # fmt: skip
    assert_user_error(
        result,
        r'sweep\.settings\.shared_buffers: "shared_buffers" needs a restart of the server given'
        r" by --dsn",
        r"run without --dsn",
    )
    assert_nothing_ran(lab_dir, lab_tmp)
    assert _server_state(shared_cluster) == before  # shared_buffers included


@pytest.fixture(scope="module")
def work_mem_run_on_dsn(module_cluster, tmp_path_factory):
    """`pgcachelab run sweep-work-mem.toml --dsn` once: the server's state around it, the store."""
    module_cluster.stop()
    module_cluster.apply_settings({})
    lab_dir = tmp_path_factory.mktemp("dsn-run") / "lab"
    before = _server_state(module_cluster)
    with server_reachable_dir() as lab_tmp:
        result = run_cli(
            "run", SPECS_DIR / "sweep-work-mem.toml", "--dsn", dsn_of(module_cluster),
            "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp,
        )  # fmt: skip
        made_in_tmp = list(lab_tmp.iterdir())
    after = _server_state(module_cluster)
    module_cluster.stop()
    return {"result": result, "lab_dir": lab_dir, "before": before, "after": after,
            "made_in_tmp": made_in_tmp}  # fmt: skip


@pytest.mark.server
@pytest.mark.slow
def test_dsn_runs_a_session_setting_sweep_and_leaves_the_server_alone(work_mem_run_on_dsn):
    result, lab_dir = work_mem_run_on_dsn["result"], work_mem_run_on_dsn["lab_dir"]
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [(run_id, status, target)] = store_query(lab_dir, "select run_id, status, target from runs")
    assert status == "done"
    assert json.loads(target)["kind"] == "existing"
    measured = store_query(
        lab_dir,
        "select point_index, repetition, status, server_action from measurements"
        " where run_id = ? order by point_index",
        (run_id,),
    )
    assert measured == [(0, 0, "ok", "session"), (1, 0, "ok", "session")]
    assert work_mem_run_on_dsn["after"] == work_mem_run_on_dsn["before"]
    assert work_mem_run_on_dsn["made_in_tmp"] == []  # no managed cluster was made


@pytest.mark.server
@pytest.mark.slow
def test_dsn_run_records_the_session_settings_each_point_ran_with(work_mem_run_on_dsn):
    lab_dir = work_mem_run_on_dsn["lab_dir"]
    recorded = store_query(
        lab_dir, "select point_index, settings from point_server_settings order by point_index"
    )
    work_mem_kb = [json.loads(settings)["work_mem"]["setting"] for _, settings in recorded]
    assert work_mem_kb == [str(8 * 1024), str(16 * 1024)]


# -- a small real run, then every command that reads it -----------------------------------------

POINTS, REPETITIONS, WARMUP = 2, 2, 1  # tests/data/specs/two-points.toml
STORED = POINTS * (WARMUP + REPETITIONS)  # warm-up repetitions are stored, left out of figures


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """`pgcachelab run two-points.toml` once for the module: (lab dir, run id, result)."""
    lab_dir = tmp_path_factory.mktemp("cli-run") / "lab"
    with server_reachable_dir() as lab_tmp:
        result = run_cli("run", SPECS_DIR / "two-points.toml", "--lab-dir", lab_dir, tmpdir=lab_tmp)
        left_behind = sorted(path.name for path in lab_tmp.iterdir())
        servers_left = processes_mentioning(str(lab_tmp))
    assert result.returncode == 0, result.stderr
    [(run_id,)] = store_query(lab_dir, "select run_id from runs")
    return {
        "lab_dir": lab_dir,
        "run_id": run_id,
        "result": result,
        "left_behind": left_behind,
        "servers_left": servers_left,
    }


@pytest.mark.server
@pytest.mark.slow
def test_run_measures_every_point_and_cleans_up(finished_run):
    result, run_id, lab_dir = (
        finished_run["result"],
        finished_run["run_id"],
        finished_run["lab_dir"],
    )
    assert "Traceback" not in result.stderr
    assert f"run {run_id} finished" in result.stderr
    assert finished_run["left_behind"] == []
    assert finished_run["servers_left"] == []
    [(status, work_dir, failure)] = store_query(
        lab_dir, "select status, work_dir, failure from runs where run_id = ?", (run_id,)
    )
    assert (status, work_dir, failure) == ("done", None, None)
    measured = store_query(
        lab_dir,
        "select point_index, repetition, status from measurements where run_id = ?",
        (run_id,),
    )
    expected = {(p, r, "ok") for p in range(POINTS) for r in range(WARMUP + REPETITIONS)}
    assert sorted(measured) == sorted(expected)
    [(environment,)] = store_query(lab_dir, "select environment from runs")
    assert json.loads(environment)["schedule"] == {
        "order": "random", "seed": 5, "repetitions": 2, "max_repetitions": None,
        "target_ci": None, "warmup_repetitions": 1,
    }  # fmt: skip
    # stdout carries the result: the report page written at the end
    report_page = Path(result.stdout.strip())
    assert report_page == (lab_dir / "reports" / run_id / "index.html").resolve()
    assert report_page.is_file()


@pytest.mark.server
@pytest.mark.slow
def test_runs_lists_the_run(finished_run):
    result = run_cli("runs", "--lab-dir", finished_run["lab_dir"])
    assert result.returncode == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if finished_run["run_id"] in line]
    assert re.search(rf"\bcli-two-points\s+done\b.*\b{STORED}/{STORED}\b", row), row


@pytest.mark.server
@pytest.mark.slow
def test_show_last_and_show_run_id_print_the_same_table(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    by_last = run_cli("show", "last", "--lab-dir", lab_dir)
    by_id = run_cli("show", run_id, "--lab-dir", lab_dir)
    assert by_last.returncode == 0 == by_id.returncode, by_last.stderr + by_id.stderr
    assert by_last.stdout == by_id.stdout
    assert by_last.stdout.startswith(f"run {run_id} (cli-two-points, done)")
    for label in ("clients=1", "clients=2"):
        [row] = [line for line in by_last.stdout.splitlines() if label in line]
        assert f"{REPETITIONS}/{REPETITIONS}" in row


@pytest.mark.server
@pytest.mark.slow
def test_export_csv_has_one_row_per_measurement(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    result = run_cli("export", run_id, "--format", "csv", "--lab-dir", lab_dir)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == STORED
    assert {(row["point_index"], row["repetition"]) for row in rows} == {
        (str(p), str(r)) for p in range(POINTS) for r in range(WARMUP + REPETITIONS)
    }
    assert {row["status"] for row in rows} == {"ok"}
    assert {row["run_id"] for row in rows} == {run_id}
    assert sorted({row["clients"] for row in rows}) == ["1", "2"]
    assert all(float(row["tps"]) > 0 for row in rows)


@pytest.mark.server
@pytest.mark.slow
def test_export_json_is_the_whole_run(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    result = run_cli("export", "last", "--format", "json", "--lab-dir", lab_dir)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["format"] == "pgcachelab-run/1"
    assert document["run"]["run_id"] == run_id
    assert document["run"]["status"] == "done"
    assert document["run"]["target"]["kind"] == "managed"
    assert [p["swept"] for p in document["points"]] == [{"clients": 1}, {"clients": 2}]
    assert len(document["measurements"]) == STORED
    assert all(m["status"] == "ok" for m in document["measurements"])


# What a browser would fetch: src/href-like attributes, CSS url() and @import. (Inline SVG also
# holds URLs that are never fetched: xmlns namespace names, RDF identifiers, the creator's name.)
_FETCHED = re.compile(
    r"""(?:\b(?:src|href|srcset|action|poster|data)\s*=\s*|url\(|@import\s+)\s*["']?([^"'\s)>]*)""",
    re.IGNORECASE,
)


@pytest.mark.server
@pytest.mark.slow
def test_report_is_rebuilt_from_the_store_and_opens_offline(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    report_dir = lab_dir / "reports" / run_id
    shutil.rmtree(report_dir)
    result = run_cli("report", run_id, "--lab-dir", lab_dir)
    assert result.returncode == 0, result.stderr
    index = Path(result.stdout.strip())
    assert index == (report_dir / "index.html").resolve()
    page = index.read_text()
    assert "<svg" in page
    assert run_id in page
    assert "order random (seed 5)" in page
    assert "after 1 warm-up repetition(s) per point that no figure uses" in page
    assert "Noise of this machine during the run (tps)" in page
    assert "<script" not in page and "<link" not in page
    fetched = set(_FETCHED.findall(page))
    assert fetched, "expected at least the links to the PNG files"
    for reference in fetched:
        # in-page anchors (SVG glyph uses) or files of the report folder itself, nothing else
        if not reference.startswith("#"):
            assert "/" not in reference and ":" not in reference, reference
            assert (report_dir / reference).is_file(), reference
    pngs = {path.stem for path in report_dir.glob("*.png")}
    svgs = {path.stem for path in report_dir.glob("*.svg")}
    assert "tps-by-clients" in pngs
    assert pngs == svgs
    assert all(path.stat().st_size > 0 for path in report_dir.iterdir())


@pytest.mark.server
@pytest.mark.slow
def test_auto_repetitions_run_to_the_maximum_and_record_the_point_that_never_settled(tmp_path):
    lab_dir = tmp_path / "lab"
    with server_reachable_dir() as lab_tmp:
        result = run_cli(
            "run", SPECS_DIR / "auto-never-settles.toml", "--lab-dir", lab_dir, tmpdir=lab_tmp
        )
    assert result.returncode == 0, result.stderr
    repetitions = store_query(lab_dir, "select repetition from measurements where status = 'ok'")
    assert sorted(r for (r,) in repetitions) == list(range(1 + 7))  # warm-up + the maximum
    assert "round 7: 1 point(s) not yet within ±0.0%" in result.stderr
    assert "1 point(s) never settled within ±0.0% after 7 repetitions" in result.stderr
    page = Path(result.stdout.strip()).read_text()
    assert "1 point(s) never settled</b>" in page
    assert "repetitions auto: until the median is known to ±0.0% or 7 repetitions" in page


@pytest.mark.server
@pytest.mark.slow
def test_resuming_a_managed_run_against_a_dsn_is_refused(finished_run):
    run_id, lab_dir = finished_run["run_id"], finished_run["lab_dir"]
    result = run_cli("run", "--resume", run_id, "--lab-dir", lab_dir, "--dsn", "host=/nowhere")
    assert result.returncode == 2
    assert result.stderr.startswith(f"pgcachelab: --dsn: run '{run_id}' measured a cluster")
    assert "Traceback" not in result.stderr
