"""doctor's server checks: pure checks on known settings, and managed clusters started with bad
settings through the lab's cluster manager; `pgcachelab hugepages` on a throwaway cluster."""

import json
import shutil

import pytest
from fix_cli import run_cli, run_cli_forked
from fix_clusters import dsn_of

from pgcachelab.doctor.findings import Finding, Skipped
from pgcachelab.doctor.server_checks import server_checks
from pgcachelab.doctor.server_facts import ServerFacts

GB = 1024**3
MB = 1024**2


def facts_with(**settings) -> ServerFacts:
    defaults = {"shared_buffers": 128 * MB, "effective_cache_size": 4 * GB, "work_mem": 4 * MB,
                "max_connections": 100.0, "maintenance_work_mem": 64 * MB,
                "autovacuum_max_workers": 3.0, "autovacuum_work_mem": -1.0,
                "checkpoint_timeout": 300.0, "max_wal_size": GB,
                "checkpoint_completion_target": 0.9, "fsync": "on", "full_page_writes": "on",
                "synchronous_commit": "on", "autovacuum": "on"}  # fmt: skip
    checkpoints = settings.pop("checkpoints", {})
    merged = {**defaults, **settings}
    return ServerFacts(
        version_num=180000,
        server_version="18.1",
        settings=merged,
        display={name: str(value) for name, value in merged.items()},
        checkpoints={
            "checkpoints_timed": 10,
            "checkpoints_requested": 0,
            "buffers_clean": 0,
            "maxwritten_clean": 0,
            **checkpoints,
        },  # fmt: skip
        observed_seconds=3600.0,
    )


def by_check(outcomes) -> dict:
    return {o.check: o for o in outcomes}


def severity(outcome) -> str:
    return outcome.severity if isinstance(outcome, Finding) else "skipped"


# -- pure checks --------------------------------------------------------------------------------


def test_defaults_on_16gb_say_only_what_the_docs_say():
    outcomes = by_check(server_checks(facts_with(), 16 * GB))
    assert severity(outcomes["server.fsync"]) == "ok"
    assert severity(outcomes["server.shared_buffers"]) == "info"  # 128MB of 16GB
    assert severity(outcomes["server.effective_cache_size"]) == "ok"  # 4GB of 16GB
    assert severity(outcomes["server.work_mem"]) == "ok"
    assert severity(outcomes["server.checkpoints"]) == "ok"


def test_shared_buffers_above_40_percent_is_a_warning_with_the_fix():
    outcome = by_check(server_checks(facts_with(shared_buffers=10 * GB), 16 * GB))[
        "server.shared_buffers"
    ]
    assert outcome.severity == "warning"
    assert "62% of 16GB RAM" in outcome.found
    assert outcome.fix == "ALTER SYSTEM SET shared_buffers = '4096MB'; then restart the server"
    assert "seed 000" in outcome.source


def test_memory_checks_use_the_cgroup_limit_when_given():
    outcome = by_check(server_checks(facts_with(shared_buffers=GB), 2 * GB, "cgroup limit"))[
        "server.shared_buffers"
    ]
    assert outcome.severity == "warning"
    assert "50% of 2GB cgroup limit" in outcome.found


def test_effective_cache_size_beyond_memory_and_work_mem_beyond_memory():
    outcomes = by_check(
        server_checks(facts_with(effective_cache_size=32 * GB, work_mem=GB), 8 * GB)
    )
    assert severity(outcomes["server.effective_cache_size"]) == "warning"
    assert severity(outcomes["server.work_mem"]) == "warning"
    assert "= 100GB of 8GB" in outcomes["server.work_mem"].found


def test_effective_cache_size_far_below_memory_is_info():
    outcome = by_check(server_checks(facts_with(effective_cache_size=GB), 16 * GB))[
        "server.effective_cache_size"
    ]
    assert outcome.severity == "info"
    assert outcome.found == "effective_cache_size = 1073741824 (6% of 16GB)"
    assert (
        outcome.fix == "ALTER SYSTEM SET effective_cache_size = '9830MB'; then select "
        "pg_reload_conf()"
    )


def test_small_maintenance_work_mem_on_a_large_machine_is_info():
    outcome = by_check(server_checks(facts_with(maintenance_work_mem=16 * MB), 16 * GB))[
        "server.maintenance_work_mem"
    ]
    assert outcome.severity == "info"
    assert outcome.fix.startswith("ALTER SYSTEM SET maintenance_work_mem = '1024MB'")
    # the same on 2GB is left alone: little to give
    small = by_check(server_checks(facts_with(maintenance_work_mem=16 * MB), 2 * GB))
    assert severity(small["server.maintenance_work_mem"]) == "ok"


def test_well_set_server_checks_are_ok():
    outcomes = by_check(server_checks(facts_with(shared_buffers=4 * GB, effective_cache_size=
                                                 10 * GB), 16 * GB))  # fmt: skip
    assert {check: severity(o) for check, o in outcomes.items()} == dict.fromkeys(
        ["server.fsync", "server.full_page_writes", "server.synchronous_commit",
         "server.autovacuum", "server.shared_buffers", "server.effective_cache_size",
         "server.work_mem", "server.maintenance_work_mem", "server.checkpoints",
         "server.checkpoint_completion_target", "server.bgwriter"], "ok")  # fmt: skip


def test_what_the_server_does_not_show_is_skipped_with_the_reason():
    facts = ServerFacts(180000, "18.0")  # a role that sees no settings and no counters
    outcomes = by_check(server_checks(facts, None))
    assert all(isinstance(o, Skipped) and o.reason for o in outcomes.values())
    assert outcomes["server.fsync"].reason == "fsync not visible in pg_settings"
    assert outcomes["server.checkpoints"].reason == "checkpoint counters not readable"


def test_autovacuum_workers_taking_a_quarter_of_memory():
    outcome = by_check(server_checks(facts_with(maintenance_work_mem=2 * GB), 16 * GB))[
        "server.maintenance_work_mem"
    ]
    assert outcome.severity == "warning"
    assert "autovacuum_work_mem" in outcome.fix


def test_checkpoints_forced_by_wal_volume():
    checkpoints = {"checkpoints_timed": 2, "checkpoints_requested": 18}
    outcome = by_check(server_checks(facts_with(checkpoints=checkpoints), 16 * GB))[
        "server.checkpoints"
    ]
    assert outcome.severity == "warning"
    assert outcome.found.startswith("18 of 20 checkpoints requested")
    assert "one every 3.0 min" in outcome.found
    assert outcome.fix.startswith("ALTER SYSTEM SET max_wal_size = '4096MB'")


def test_too_few_checkpoints_tell_nothing():
    checkpoints = {"checkpoints_timed": 1, "checkpoints_requested": 1}
    outcome = by_check(server_checks(facts_with(checkpoints=checkpoints), 16 * GB))[
        "server.checkpoints"
    ]
    assert isinstance(outcome, Skipped)
    assert "too few" in outcome.reason


def test_bgwriter_stopping_at_its_page_limit():
    checkpoints = {"buffers_clean": 10000, "maxwritten_clean": 500}
    outcome = by_check(server_checks(facts_with(checkpoints=checkpoints), 16 * GB))[
        "server.bgwriter"
    ]
    assert outcome.severity == "info"
    assert "bgwriter_lru_maxpages" in outcome.fix


# -- a real server started with the bad settings --------------------------------------------------

BAD_SETTINGS = {
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    "autovacuum": "off",
    "work_mem": "1GB",
    "max_connections": "100",
    "checkpoint_completion_target": "0.5",
}


@pytest.mark.server
def test_doctor_on_a_server_started_with_bad_settings(shared_cluster):
    shared_cluster.apply_settings(BAD_SETTINGS)
    with shared_cluster.connect() as conn:
        for _ in range(4):  # explicit CHECKPOINTs count as requested, not timed
            conn.execute("checkpoint")
    result = run_cli("doctor", "--dsn", dsn_of(shared_cluster), "--json")
    assert result.returncode == 1, result.stderr  # --fail-on critical by default
    report = json.loads(result.stdout)
    found = {f["check"]: f for f in report["findings"]}
    assert found["server.fsync"]["severity"] == "critical"
    assert found["server.full_page_writes"]["severity"] == "critical"
    assert found["server.synchronous_commit"]["severity"] == "warning"
    assert found["server.autovacuum"]["severity"] == "warning"
    assert found["server.work_mem"]["severity"] == "warning"
    assert found["server.checkpoint_completion_target"]["severity"] == "info"
    assert found["server.checkpoints"]["severity"] == "warning"
    assert found["server.fsync"]["fix"] == (
        "ALTER SYSTEM SET fsync = 'on'; then select pg_reload_conf()"
    )
    # The server is local: doctor found its postmaster, data directory and huge page needs.
    assert report["context"]["postmaster_pid"] == shared_cluster.process.pid
    assert report["context"]["data_directory"] == str(shared_cluster.data_dir)
    assert found["host.limits"]["found"].startswith(
        f"the postmaster (pid {shared_cluster.process.pid})"
    )
    assert "the server needs" in found["host.hugepages"]["found"]
    # doctor only reads: the server still runs with what it was given
    with shared_cluster.connect() as conn:
        assert conn.execute("show fsync").fetchone()[0] == "off"


@pytest.mark.server
def test_doctor_human_output_on_a_default_server(shared_cluster):
    shared_cluster.apply_settings({})
    result = run_cli("doctor", "--dsn", dsn_of(shared_cluster), "--fail-on", "critical")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "server.fsync" in result.stdout
    assert "Server checks need a connection" not in result.stdout
    assert "critical" not in result.stdout


def test_doctor_with_a_dead_dsn_is_a_user_error(tmp_path):
    result = run_cli_forked("doctor", "--dsn", f"host={tmp_path} port=1 dbname=postgres")
    assert result.returncode == 2
    assert result.stderr.startswith("pgcachelab: --dsn: cannot connect to")


# -- hugepages ------------------------------------------------------------------------------------


@pytest.mark.server
def test_hugepages_sizes_a_configuration_and_leaves_nothing(lab_tmp):
    result = run_cli("hugepages", "--shared-buffers", "256MB", tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    pages = int(result.stdout.split()[0])
    assert 128 < pages < 200  # 256MB of 2MB pages plus the rest of shared memory
    assert f"sysctl -w vm.nr_hugepages={pages}" in result.stdout
    assert list(lab_tmp.iterdir()) == []  # the throwaway cluster is gone


def test_hugepages_bad_size_is_one_line():
    result = run_cli_forked("hugepages", "--shared-buffers", "lots")
    assert result.returncode == 2
    assert result.stderr.startswith("pgcachelab: --shared-buffers: invalid value 'lots'")
    assert result.stderr.splitlines()[1] == (
        "hint: a size from 128kB to 1024TB, e.g. --shared-buffers 4GB"
    )


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_hugepages_before_15_from_the_postmasters_vmpeak(pg_cache, lab_tmp):
    """PostgreSQL 13 cannot say (no shared_memory_size_in_huge_pages): the lab starts it once
    and reads the postmaster's VmPeak, the seeds' way."""
    installed = run_cli("pg", "install", "13")
    assert installed.returncode == 0, installed.stderr
    pages = {}
    for size_mb in (64, 256):
        result = run_cli("hugepages", "--pg-bin", "13", "--shared-buffers", f"{size_mb}MB",
                         tmpdir=lab_tmp)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "with PostgreSQL 13." in result.stdout
        pages[size_mb] = int(result.stdout.split()[0])
    page_mb = 2  # x86-64's default huge page size, which this machine has
    # VmPeak covers shared memory and the binary and libraries mapped besides: more pages than
    # shared_buffers alone, but not a hundred more
    assert 64 / page_mb < pages[64] < 64 / page_mb + 100, pages
    # 192MB more shared_buffers is 96 pages more, and the other shared memory grows a little
    assert 96 <= pages[256] - pages[64] <= 110, pages
    assert list(lab_tmp.iterdir()) == []  # the throwaway cluster is gone
