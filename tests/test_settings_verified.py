"""What a point asks of the server, checked before the run (the install's pg_settings catalogue)
and read back after every start or reload (issue 16).

Pure tests on captured real outputs (tests/data/server/capture_*.py), then servers: 9.6 and 18
through the lab's cluster manager, and the CLI as a new user would run it.
"""

import json
import re
from pathlib import Path

import pytest
from fix_cli import run_cli
from fix_clusters import install_of
from fix_lab import store_query
from fix_processes import server_reachable_dir
from test_spec import captured_catalogue, spec

from pgcachelab.clusters.guc import (
    FileSetting,
    ServerSetting,
    canonical_value,
    log_reasons,
    setting_mismatches,
)
from pgcachelab.clusters.managed import ClusterError, ManagedCluster
from pgcachelab.errors import UserError
from pgcachelab.spec import validate_settings

DATA = Path(__file__).parent / "data" / "server"
MB = 1024**2


# -- one value, many spellings -------------------------------------------------------------------


@pytest.mark.parametrize("major", ["9.6", "15", "18"])
def test_canonical_values_with_the_catalogue(major):
    catalogue = captured_catalogue(major)
    shared, work_mem = catalogue["shared_buffers"], catalogue["work_mem"]
    assert canonical_value("64MB", shared) == canonical_value(8192, shared) == 64 * MB
    assert canonical_value("1MB", work_mem) == canonical_value("1024", work_mem) == MB
    timeout = catalogue["checkpoint_timeout"]
    assert canonical_value("5min", timeout) == canonical_value("300s", timeout) == 300
    assert canonical_value(300, timeout) == 300
    assert canonical_value("200ms", catalogue["statement_timeout"]) == 0.2
    fsync = catalogue["fsync"]
    assert {canonical_value(v, fsync) for v in ("on", "true", "1", True, "yes")} == {"on"}
    assert {canonical_value(v, fsync) for v in ("off", "false", "0", False, "no")} == {"off"}
    assert canonical_value("REPLICA", catalogue["wal_level"]) == "replica"
    assert canonical_value("ISO, MDY", catalogue["DateStyle"]) == "ISO, MDY"  # a string


def test_canonical_values_without_a_catalogue_know_memory_and_time_units():
    assert canonical_value("32MB") == canonical_value("32768kB") == 32 * MB
    assert canonical_value("1GB") == canonical_value("1024MB")
    assert canonical_value("5min") == canonical_value("300s") == 300
    assert canonical_value("0.2s") == canonical_value("200ms")
    assert canonical_value("select-only") == "select-only"
    assert canonical_value(" on ") == "on"
    assert canonical_value("100") == "100"  # without the setting's unit a bare number is text


# -- checked before the run: the install's pg_settings --------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[sweep.settings]\nshared_buffers = ["32MB", "32s"]',
         'exp.toml: sweep.settings.shared_buffers: invalid value "32s": shared_buffers is a '
         "memory size such as 64MB (units B, kB, MB, GB, TB)"),
        ('[server.settings]\nwal_level = "extreme"',
         'exp.toml: server.settings.wal_level: invalid value "extreme": wal_level must be one of '
         "minimal, replica, logical"),
        ('[sweep.settings]\ncheckpoint_timeout = ["5min", "64MB"]',
         'exp.toml: sweep.settings.checkpoint_timeout: invalid value "64MB": checkpoint_timeout '
         "is a duration such as 30s (units us, ms, s, min, h, d)"),
        ('[sweep.settings]\ncheckpoint_timeout = ["5s"]',
         'exp.toml: sweep.settings.checkpoint_timeout: invalid value "5s": checkpoint_timeout is '
         "below its minimum 30 x s"),
        ('[[ladder]]\nname = "a"\nsettings = { huge_pages = "always" }',
         'exp.toml: ladder[0].settings.huge_pages: invalid value "always": huge_pages must be '
         "one of off, on, try"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("major", ["9.6", "15", "18"])
def test_bad_values_refused_against_the_installs_catalogue(major, text, message):
    with pytest.raises(UserError) as caught:
        validate_settings(spec(text), captured_catalogue(major))
    assert caught.value.message == message
    assert caught.value.hint == "fix the value"


# -- read back after a reload: captured servers ------------------------------------------------


@pytest.mark.parametrize("major", ["9.6", "18"])
def test_a_rejected_reload_is_a_mismatch_with_the_servers_reason(major):
    captured = json.loads((DATA / f"rejected-reload-{major}.json").read_text())
    server = {row[0].lower(): ServerSetting(*row) for row in captured["pg_settings"]}
    files = {row[0].lower(): FileSetting(*row) for row in captured["pg_file_settings"]}
    found = setting_mismatches(captured["asked"], server, files, log_reasons(captured["log"]))
    assert found == [
        'checkpoint_timeout: asked 64MB, server has 300 s: invalid value for parameter '
        '"checkpoint_timeout": "64MB"',
        'TimeZone: asked Mars/Olympus, server has Etc/UTC: invalid value for parameter '
        '"TimeZone": "Mars/Olympus"',
    ]  # fmt: skip
    # without the log, pg_file_settings still says why
    assert setting_mismatches({"checkpoint_timeout": "64MB"}, server, files) == [
        "checkpoint_timeout: asked 64MB, server has 300 s: setting could not be applied"
    ]


def _row(name, setting, unit=None, vartype="integer", source="configuration file"):
    return {name.lower(): ServerSetting(name, setting, unit, vartype, source)}


def test_what_the_server_rounds_rewrites_or_overrides_is_not_a_mismatch():
    applied = {"x": FileSetting("x", True, None)}

    def mismatches(asked, row):
        files = {name.lower(): FileSetting(name, True, None) for name in asked}
        return setting_mismatches(asked, row, files)

    assert mismatches({"shared_buffers": "64MB"}, _row("shared_buffers", "8192", "8kB")) == []
    # rounded to the setting's unit, as guc.c does: 1001kB of 8kB pages is 125 pages
    assert mismatches({"shared_buffers": "1001kB"}, _row("shared_buffers", "125", "8kB")) == []
    assert mismatches({"checkpoint_timeout": "5min"}, _row("checkpoint_timeout", "300", "s")) == []
    assert mismatches({"fsync": "true"}, _row("fsync", "on", vartype="bool")) == []
    assert mismatches({"random_page_cost": "1e-3"},
                      _row("random_page_cost", "0.001", vartype="real")) == []  # fmt: skip
    # a unitless number is kept as written: no rounding to forgive
    assert mismatches({"random_page_cost": "1.1"},
                      _row("random_page_cost", "1.5", vartype="real")) == [
        "random_page_cost: asked 1.1, server has 1.5"
    ]  # fmt: skip
    assert mismatches({"wal_level": "REPLICA"}, _row("wal_level", "replica", vartype="enum")) == []
    assert mismatches({"DateStyle": "iso, mdy"},
                      _row("DateStyle", "ISO, MDY", vartype="string")) == []  # fmt: skip
    assert mismatches({"wal_buffers": "-1"},
                      _row("wal_buffers", "512", "8kB", source="override")) == []  # fmt: skip
    # an applied line that still reads back differently is a mismatch (e.g. ALTER SYSTEM wins)
    assert mismatches({"work_mem": "4MB"}, _row("work_mem", "1024", "kB")) == [
        "work_mem: asked 4MB, server has 1024 kB"
    ]
    assert setting_mismatches({"nosuch": "1"}, {}, applied) == [
        "nosuch: asked 1, the server has no such setting"
    ]


# -- servers: 9.6 and 18 -----------------------------------------------------------------------


@pytest.mark.server
@pytest.mark.parametrize("major", ["9.6", "18"])
def test_a_setting_the_reload_did_not_apply_fails_with_the_reason(
    major, server_os_user, cluster_parent
):
    pg = install_of(major, server_os_user)
    with ManagedCluster.create(pg, server_os_user, parent_dir=cluster_parent) as cluster:
        base = {"shared_buffers": "16MB", "work_mem": "4MB"}
        assert cluster.apply_settings({**base, "checkpoint_timeout": "5min"}) == "start"
        with pytest.raises(ClusterError) as caught:
            cluster.apply_settings({**base, "checkpoint_timeout": "64MB"})
        assert str(caught.value) == (
            'checkpoint_timeout: asked 64MB, server has 300 s: invalid value for parameter '
            '"checkpoint_timeout": "64MB"'
        )  # fmt: skip
        # the next repetition of that point asks the same: checked again, not taken as done
        with pytest.raises(ClusterError, match="checkpoint_timeout: asked 64MB"):
            cluster.apply_settings({**base, "checkpoint_timeout": "64MB"})
        assert cluster.apply_settings({**base, "checkpoint_timeout": "1min"}) == "reload"
        assert cluster.apply_settings({**base, "checkpoint_timeout": "1min"}) == "none"
        # verified after a restart too, in canonical units
        assert cluster.apply_settings({"shared_buffers": "2048", "work_mem": "4096"}) == ("restart")


# -- the CLI, as a new user would run it -------------------------------------------------------


@pytest.mark.server
def test_bad_values_refused_before_the_run_from_a_throwaway_cluster(tmp_path, lab_tmp, monkeypatch):
    """The first run of an install asks a throwaway cluster for its catalogue (then cached)."""
    with server_reachable_dir() as cache:
        monkeypatch.setenv("PGCACHELAB_CATALOGUE_CACHE", str(cache))
        for settings, line in [
            ('shared_buffers = ["16MB", "32s"]',
             'pgcachelab: BAD: sweep.settings.shared_buffers: invalid value "32s": '
             "shared_buffers is a memory size such as 64MB (units B, kB, MB, GB, TB)"),
            ('wal_level = ["replica", "extreme"]',
             'pgcachelab: BAD: sweep.settings.wal_level: invalid value "extreme": wal_level '
             "must be one of minimal, replica, logical"),
            ('work_mem = ["1MB", "1024"]',
             'pgcachelab: BAD: sweep.settings.work_mem: invalid value "1024": repeats a '
             'value: the same as "1MB"'),
        ]:  # fmt: skip
            path = tmp_path / "bad.toml"
            path.write_text(f'[pgbench]\nduration = "1s"\n[sweep.settings]\n{settings}\n')
            result = run_cli("run", path, "--lab-dir", tmp_path / "lab", "--no-report",
                             tmpdir=lab_tmp)  # fmt: skip
            assert result.returncode == 2, result.stderr
            assert result.stderr.splitlines()[0] == line.replace("BAD", str(path))
            assert result.stderr.splitlines()[1] in ("hint: fix the value",
                                                     "hint: list each value once")  # fmt: skip
            assert "Traceback" not in result.stderr
            assert store_query(tmp_path / "lab", "select count(*) from runs") in ([], [(0,)])
        assert len(list(cache.glob("*.json"))) == 1  # asked once, then from the cache


@pytest.mark.server
@pytest.mark.slow
def test_a_swept_value_the_server_rejects_fails_its_point_and_the_sweep_goes_on(tmp_path, lab_tmp):
    """TimeZone's names are only known to the server: the catalogue cannot refuse
    "Mars/Olympus", the reload does, and the point says so."""
    path = tmp_path / "tz.toml"
    path.write_text('[pgbench]\nduration = "1s"\n[sweep.settings]\n'
                    'TimeZone = ["UTC", "Mars/Olympus", "Europe/Paris"]\n')  # fmt: skip
    lab_dir = tmp_path / "lab"
    result = run_cli("run", path, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    rows = store_query(lab_dir, "select point_index, status, reason from measurements"
                       " order by point_index")  # fmt: skip
    assert [(index, status) for index, status, _ in rows] == [(0, "ok"), (1, "failed"), (2, "ok")]
    # "UTC" reads back as the server's name for it ("Etc/UTC" here): a string it rewrote
    assert re.fullmatch(
        r'TimeZone: asked Mars/Olympus, server has (Etc/)?UTC: invalid value for parameter '
        r'"TimeZone": "Mars/Olympus"', rows[1][2],
    )  # fmt: skip
    assert "TimeZone=Mars/Olympus #1: failed: TimeZone: asked Mars/Olympus" in result.stderr
    # the stored settings are the server's own
    settings = dict(store_query(lab_dir, "select point_index, settings from point_server_settings"))
    assert json.loads(settings[2])["TimeZone"]["setting"] == "Europe/Paris"
