"""doctor's host checks: fake /proc and /sys trees with a known state, and this machine for real."""

import io
import json
import os
import pwd
from pathlib import Path

import pytest
from fix_cli import run_cli
from fix_processes import output_as_user

from pgcachelab.doctor.diagnose import diagnose
from pgcachelab.doctor.findings import Finding, Skipped, fails
from pgcachelab.doctor.host_checks import host_checks, memory_for_server_bytes
from pgcachelab.doctor.host_facts import (
    HostReader,
    bracketed_choice,
    parse_limits,
)
from pgcachelab.exporters import json as json_export
from pgcachelab.machine.host_facts import parse_proc_stat

TREES = Path(__file__).parent / "data" / "doctor"
POSTMASTER_PID = 4242  # the fake trees' postmaster
# What the fake server needs: 4.1 GB of huge pages, huge_pages = try, 100 connections.
SERVER = {"huge_pages_needed": 2100, "huge_pages": "try", "huge_pages_in_use": None,
          "postmaster_pid": POSTMASTER_PID, "max_connections": 100.0}  # fmt: skip


def outcomes_of(tree: str, device=None, server=SERVER) -> dict:
    facts = HostReader(TREES / tree).read(POSTMASTER_PID, device)
    return {outcome.check: outcome for outcome in host_checks(facts, server)}


def severity(outcome) -> str:
    return outcome.severity if isinstance(outcome, Finding) else "skipped"


# -- parsers -----------------------------------------------------------------------------------


def test_bracketed_choice_reads_thp_and_scheduler_files():
    assert bracketed_choice("always [madvise] never") == "madvise"
    assert bracketed_choice("[mq-deadline] kyber bfq none") == "mq-deadline"
    assert bracketed_choice("none") == "none"  # one scheduler: no brackets


def test_parse_limits_keeps_soft_and_hard_and_unlimited():
    limits = parse_limits((TREES / "bad-host/proc/4242/limits").read_text())
    assert limits["Max open files"] == (256, 4096)
    assert limits["Max processes"] == (1024, 1024)
    assert limits["Max cpu time"] == (None, None)
    assert limits["Max nice priority"] == (0, 0)


def test_parent_pid_survives_spaces_and_parentheses_in_the_name():
    assert parse_proc_stat("77 (postgres: lab (x) y) S 42 77 77 0").ppid == 42


# -- a badly tuned host: every check finds its problem ------------------------------------------


BAD_HOST_EXPECTED = {
    "host.thp.enabled": "warning",
    "host.thp.defrag": "warning",
    "host.hugepages": "warning",
    "host.numa": "warning",
    "host.swappiness": "info",
    "host.dirty_background": "info",
    "host.dirty": "info",
    "host.io_scheduler": "warning",
    "host.read_ahead": "warning",
    "host.shm": "warning",
    "host.limits": "warning",
    "host.cpu_governor": "warning",
    "host.memory_cgroup": "info",
}


def test_bad_host_every_check_finds_its_problem():
    outcomes = outcomes_of("bad-host", device=(8, 0))
    assert {check: severity(o) for check, o in outcomes.items()} == BAD_HOST_EXPECTED
    assert "cfq" in outcomes["host.io_scheduler"].found
    assert outcomes["host.io_scheduler"].fix == "echo mq-deadline > /sys/block/sda/queue/scheduler"
    assert "open files 256, processes 1024" in outcomes["host.limits"].found
    assert "limited to 2GB" in outcomes["host.memory_cgroup"].found
    assert "zone_reclaim_mode = 1" in outcomes["host.numa"].found
    assert outcomes["host.numa"].fix.startswith("sysctl -w vm.zone_reclaim_mode=0")
    for outcome in outcomes.values():  # every finding says why, where from and how to fix it
        assert outcome.recommendation and outcome.source and outcome.fix


def test_bad_host_cgroup_limit_is_the_memory_the_server_has():
    facts = HostReader(TREES / "bad-host").read(POSTMASTER_PID)
    assert facts.memory_total_bytes == 65856512 * 1024
    assert memory_for_server_bytes(facts) == 2 * 1024**3


def test_huge_pages_off_on_a_large_shared_buffers_is_a_warning():
    server = {**SERVER, "huge_pages": "off", "shared_buffers_bytes": 16 * 1024**3}
    outcome = outcomes_of("bad-host", server=server)["host.hugepages"]
    assert outcome.severity == "warning"
    assert "huge_pages = off" in outcome.found


def test_huge_pages_without_a_server_is_skipped_with_the_way_to_know():
    outcome = outcomes_of("bad-host", server={})["host.hugepages"]
    assert isinstance(outcome, Skipped)
    assert "pgcachelab hugepages" in outcome.reason


# -- a well tuned host: nothing to change ---------------------------------------------------------


def test_good_host_passes_every_check():
    outcomes = outcomes_of("good-host", device=(8, 1))
    assert {check: severity(o) for check, o in outcomes.items()} == dict.fromkeys(
        BAD_HOST_EXPECTED, "ok"
    )
    # 8:1 is a partition: scheduler and read-ahead are the whole disk's
    assert outcomes["host.io_scheduler"].found == "sda: IO scheduler mq-deadline"
    assert not fails(list(outcomes.values()), "info")


def test_an_empty_tree_skips_every_check_with_a_reason(tmp_path):
    outcomes = outcomes_of(str(tmp_path), device=(8, 0))
    assert all(isinstance(o, Skipped) and o.reason for o in outcomes.values())
    assert "not a block device" in outcomes["host.io_scheduler"].reason


# -- the command line --------------------------------------------------------------------------


def test_cli_fail_on_sets_the_exit_code():
    warned = run_cli("doctor", "--root", TREES / "bad-host", "--json", "--fail-on", "warning")
    assert warned.returncode == 1, warned.stderr
    report = json.loads(warned.stdout)
    assert report["format"] == 2
    severities = {f["check"]: f["severity"] for f in report["findings"]}
    assert severities["host.thp.enabled"] == "warning"
    assert report["findings"][0]["severity"] == "warning"  # worst first
    # no postmaster is known without --dsn: the limits check says how to get it
    assert any(s["check"] == "host.limits" and "--dsn" in s["reason"] for s in report["skipped"])
    assert run_cli("doctor", "--root", TREES / "bad-host", "--fail-on", "critical").returncode == 0


def test_cli_bad_fail_on_is_one_line_and_exit_2():
    result = run_cli("doctor", "--fail-on", "sometimes")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "pgcachelab: --fail-on: invalid value 'sometimes'",
        "hint: use info, warning or critical",
    ]


def test_doctor_runs_on_this_machine_as_root_and_as_another_user(tmp_path):
    """The real /proc and /sys; as the unprivileged pgcachelab user as well when we are root."""
    result = run_cli("doctor", "--json", "--data-dir", tmp_path)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    checks = {o["check"] for o in report["findings"] + report["skipped"]}
    assert checks == set(BAD_HOST_EXPECTED)
    if os.geteuid() != 0:
        return
    try:
        user = pwd.getpwnam("pgcachelab")
    except KeyError:
        pytest.skip("no pgcachelab OS user")
    report = json.loads(_doctor_json_as(user))
    assert report["context"]["running_as"] == f"uid {user.pw_uid}"
    assert {o["check"] for o in report["findings"] + report["skipped"]} == checks


def _doctor_json_as(user: pwd.struct_passwd) -> str:
    """doctor's JSON from a forked child running as `user`."""

    def as_json() -> str:
        out = io.StringIO()
        json_export.diagnosis(diagnose(Path("/")), out)
        return out.getvalue()

    return output_as_user(user, as_json)
