"""The OS rung without touching the host: its files read from captures of this host
(tests/data/host/capture.sh), its values checked, its plan of what to write back (the dirty_*
coupling), the spec's [ladder.host], and the apply/restore cycle on files of a temporary
directory with a registry of its own."""

import dataclasses
import json
import os
import pwd
from pathlib import Path

import pytest
from fix_cli import run_cli_forked
from fix_lab import store_query
from fix_processes import output_as_user

from pgcachelab.errors import ClusterError, UserError
from pgcachelab.machine import host_settings, host_tunables, owned
from pgcachelab.machine.emulated import MachineNeeds, capabilities, check_needs
from pgcachelab.machine.host_tunables import TUNABLES, HostValueError
from pgcachelab.spec import parse_spec

HOST = Path(__file__).parent / "data" / "host"


def captured(name: str) -> str:
    return (HOST / name).read_text()


# -- the files as this host has them --------------------------------------------------------------


def test_choice_files_read_as_their_bracketed_value():
    thp = TUNABLES["transparent_hugepage"]
    assert host_tunables.read_value(thp, captured("thp_enabled")) == "madvise"
    defrag = TUNABLES["transparent_hugepage_defrag"]
    assert host_tunables.read_value(defrag, captured("thp_defrag")) == "madvise"
    assert host_tunables.listed_choices(captured("thp_defrag")) == list(host_tunables.THP_DEFRAG)
    scheduler = captured("vda_scheduler")
    assert host_tunables.read_value(TUNABLES["io_scheduler"], scheduler) == "mq-deadline"
    assert host_tunables.choice_refusal("none", scheduler) is None
    assert host_tunables.choice_refusal("deadline", scheduler) == (
        "the device offers none, mq-deadline, kyber, bfq, not deadline (mq-deadline is its "
        "multi-queue successor)"
    )  # the seed's "deadline" is mq-deadline on a multi-queue kernel
    assert host_tunables.choice_refusal("defer", "always [madvise] never", "the kernel") == (
        "the kernel offers always, madvise, never, not defer"
    )


def test_sysctl_files_read_as_their_number():
    swappiness = TUNABLES["vm.swappiness"]
    assert host_tunables.read_value(swappiness, captured("vm.swappiness")) == "60"
    shmmax = TUNABLES["kernel.shmmax"]
    assert host_tunables.read_value(shmmax, captured("kernel.shmmax")) == "18446744073692774399"
    assert host_tunables.same("60\n", "60") and not host_tunables.same("60", "10")


def test_a_coupled_pair_is_restored_by_the_member_that_was_non_zero():
    dirty_bytes, dirty_ratio = TUNABLES["vm.dirty_bytes"], TUNABLES["vm.dirty_ratio"]
    original_bytes, original_ratio = captured("vm.dirty_bytes"), captured("vm.dirty_ratio")
    assert (original_bytes.strip(), original_ratio.strip()) == ("0", "20")
    # this host runs on the ratio: writing dirty_bytes zeroes it, so the ratio is written back
    writes = host_tunables.restore_writes(
        dirty_bytes, dirty_bytes.path, "0", dirty_ratio.path, "20"
    )
    assert writes == [("/proc/sys/vm/dirty_ratio", "20")]
    # a host on bytes gets its bytes back (0 would be refused by the kernel anyway)
    writes = host_tunables.restore_writes(
        dirty_ratio, dirty_ratio.path, "0", dirty_bytes.path, "268435456"
    )
    assert writes == [("/proc/sys/vm/dirty_bytes", "268435456")]
    background = TUNABLES["vm.dirty_background_bytes"]
    writes = host_tunables.restore_writes(
        background, background.path, "0", "/proc/sys/vm/dirty_background_ratio", "10"
    )
    assert writes == [("/proc/sys/vm/dirty_background_ratio", "10")]
    swappiness = TUNABLES["vm.swappiness"]
    assert host_tunables.restore_writes(swappiness, swappiness.path, "60", None, None) == [
        (swappiness.path, "60")
    ]


def test_a_partition_s_queue_is_its_disk_s():
    assert host_tunables.queue_dir_of("/sys/devices/x/block/vda/vda1", True) == (
        "/sys/devices/x/block/vda/queue"
    )
    assert host_tunables.queue_dir_of("/sys/devices/x/block/vda", False) == (
        "/sys/devices/x/block/vda/queue"
    )


# -- values -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("readahead", 16384, "8192"),  # blockdev --setra 16384: sectors
        ("readahead", "8MB", "8192"),
        ("readahead", "128kB", "128"),
        ("vm.dirty_background_bytes", "64MB", str(64 * 1024**2)),
        ("vm.dirty_bytes", 8192, "8192"),
        ("vm.swappiness", 10, "10"),
        ("kernel.numa_balancing", False, "0"),
        ("kernel.shmmax", "16GB", str(16 * 1024**3)),
        ("transparent_hugepage", "never", "never"),
        ("transparent_hugepage_defrag", "defer+madvise", "defer+madvise"),
        ("io_scheduler", "mq-deadline", "mq-deadline"),
    ],
)
def test_values_convert_to_the_text_their_file_takes(name, value, text):
    assert host_tunables.convert(name, value) == text


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("vm.swappiness", 201, "not an integer between 0 and 200"),
        ("vm.swappiness", "10", "not an integer between 0 and 200"),
        ("vm.dirty_bytes", 4096, "below the kernel's minimum of 8192 bytes"),
        ("vm.dirty_background_bytes", 0, "below the kernel's minimum of 1 bytes"),
        ("vm.dirty_ratio", 101, "not an integer between 0 and 100"),
        ("readahead", "1000B", "not a whole number of kB"),
        ("readahead", -1, "not a number of sectors >= 0"),
        ("transparent_hugepage", "off", "not one of its values"),
        ("io_scheduler", "mq deadline", "not a scheduler name"),
    ],
)
def test_values_a_setting_cannot_take(name, value, why):
    with pytest.raises(HostValueError) as caught:
        host_tunables.convert(name, value)
    assert caught.value.why == why


# -- the spec ----------------------------------------------------------------------------------

SPEC = """name = "os"
workload = "pgbench"
[machine.host]
vm.swappiness = 10
[[ladder]]
name = "base"
[[ladder]]
name = "os"
[ladder.host]
transparent_hugepage = "never"
vm.dirty_background_bytes = "64MB"
readahead = 16384
[[ladder]]
name = "after"
settings = { work_mem = "8MB" }
"""


def test_a_host_step_stays_in_force_for_the_steps_after_it():
    spec = parse_spec(SPEC, Path("os.toml"))
    points = spec.points()
    assert spec.has_host_settings()
    assert points[0].host == {"vm.swappiness": "10"}
    os_rung = {
        "vm.swappiness": "10",
        "transparent_hugepage": "never",
        "vm.dirty_background_bytes": str(64 * 1024**2),
        "readahead": "8192",
    }
    assert points[1].host == points[2].host == os_rung
    assert not parse_spec('name = "x"\n', Path("x.toml")).has_host_settings()


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        (
            "[[ladder]]\nname = 'os'\n[ladder.host]\nvm.swappiness = 300",
            "os.toml: ladder[0].host.vm.swappiness: invalid value 300: not an integer between "
            "0 and 200",
            "0 to 200",
        ),
        (
            "[[ladder]]\nname = 'os'\n[ladder.host]\nvm.swapiness = 1",
            'os.toml: ladder[0].host.vm.swapiness: unknown host setting "vm.swapiness"',
            "use one of transparent_hugepage,",
        ),
        (
            "[[ladder]]\nname = 'os'\n[ladder.host]\ntransparent_hugepage = 'off'",
            'os.toml: ladder[0].host.transparent_hugepage: invalid value "off": not one of its '
            "values",
            "use one of always, madvise, never",
        ),
        (
            "[machine.host]\nvm.dirty_bytes = '64MB'\nvm.dirty_ratio = 10",
            "os.toml: machine.host.vm.dirty_ratio: cannot be set with vm.dirty_bytes: the "
            "kernel zeroes one when the other is written",
            "keep one of them",
        ),
        (
            "[machine.host]\nvm.dirty_bytes = '64MB'\n[[ladder]]\nname = 'os'\n"
            "[ladder.host]\nvm.dirty_ratio = 10",
            "os.toml: ladder[0].host.vm.dirty_ratio: cannot be set with vm.dirty_bytes (set at "
            "machine.host.vm.dirty_bytes)",
            "keep one of them in the whole spec",
        ),
        (
            "[machine]\nhost = 3",
            "os.toml: machine.host: must be a table",
            "[ladder.host]",
        ),
    ],
)
def test_bad_host_settings_are_refused_in_one_line(text, message, hint):
    with pytest.raises(UserError) as caught:
        parse_spec('name = "os"\n' + text, Path("os.toml"))
    assert caught.value.message.startswith(message)
    assert hint in caught.value.hint


def test_without_root_a_spec_with_host_settings_is_refused():
    refused = {"host settings": (False, "writing /sys and /proc/sys needs root")}
    with pytest.raises(UserError) as caught:
        check_needs(MachineNeeds(None, False, False, host_settings=True), refused)
    assert caught.value.message == (
        "the spec needs host settings, which is unavailable here: writing /sys and /proc/sys "
        "needs root"
    )
    assert check_needs(MachineNeeds(None, False, False), refused) == [
        "unavailable here (not needed by this spec): host settings: writing /sys and "
        "/proc/sys needs root"
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming the unprivileged user needs root")
def test_an_unprivileged_user_cannot_have_host_settings():
    def produce() -> str:
        try:
            check_needs(MachineNeeds(None, False, False, host_settings=True), capabilities())
        except UserError as error:
            return f"{error.message} | {error.hint}"
        return "accepted"

    said = output_as_user(pwd.getpwnam("nobody"), produce)
    assert said == (
        "the spec needs host settings, which is unavailable here: writing /sys and /proc/sys "
        "needs root | run the lab as root, or remove that part of the spec"
    )


def test_host_settings_are_refused_against_a_server_given_by_dsn(tmp_path, lab_tmp):
    spec = tmp_path / "os.toml"
    spec.write_text(SPEC)
    result = run_cli_forked(
        "run", spec, "--dsn", "postgresql://nobody@127.0.0.1:9/none", "--no-report",
        "--lab-dir", tmp_path / "lab", tmpdir=lab_tmp,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(
        f"pgcachelab: {spec}: host settings ([machine.host], [ladder.host]) need a "
        "server the lab runs, not one given by --dsn"
    ), result.stderr
    assert store_query(tmp_path / "lab", "select count(*) from runs") == [(0,)]


# -- applying and restoring, on files of a temporary directory ----------------------------------


@pytest.fixture
def fake_host(tmp_path, monkeypatch):
    """The tunables' files as copies of the captures, and a registry of the test's own."""
    files = tmp_path / "host"
    files.mkdir()
    fake = {}
    for name, tunable in TUNABLES.items():
        if tunable.path is None:
            fake[name] = tunable
            continue
        capture = {"transparent_hugepage": "thp_enabled"}.get(name, name)
        if (HOST / capture).exists():
            (files / name).write_text(captured(capture))
        fake[name] = dataclasses.replace(tunable, path=str(files / name))
    monkeypatch.setattr(host_settings, "TUNABLES", fake)
    registry = tmp_path / "owned"
    monkeypatch.setattr(owned, "registry_dir", lambda *_: registry)
    return files, registry


def test_settings_are_applied_recorded_and_put_back_by_a_point_without_them(fake_host):
    files, registry = fake_host
    host = host_settings.HostSettings()
    record: dict = {}
    host.apply(
        {"vm.swappiness": "10", "transparent_hugepage": "never", "kernel.numa_balancing": "1"},
        None,
        record,
    )
    assert record["applied"]["vm.swappiness"] == {
        "path": str(files / "vm.swappiness"), "before": "60", "now": "10", "written": True,
    }  # fmt: skip
    assert (files / "transparent_hugepage").read_text() == "never"  # the file is no kernel
    [entry] = [e for e in owned.entries() if e.details["name"] == "vm.swappiness"]
    assert entry.kind == "host" and entry.details["restore"] == [
        [str(files / "vm.swappiness"), "60"]
    ]
    # the next point keeps swappiness (not written again) and drops THP: put back at once
    (files / "transparent_hugepage").write_text("always madvise [never]")
    record = {}
    host.apply({"vm.swappiness": "10"}, None, record)
    assert record["applied"]["vm.swappiness"]["written"] is False
    assert record["applied"]["vm.swappiness"]["before"] == "60"
    assert record["restored"]["transparent_hugepage"] == {
        "path": str(files / "transparent_hugepage"), "from": "never", "to": "madvise",
    }  # fmt: skip
    host.restore_all()
    assert (files / "vm.swappiness").read_text() == "60"
    assert (files / "kernel.numa_balancing").read_text() == "0"
    assert owned.entries() == []


def test_a_setting_this_host_lacks_is_recorded_not_applicable(fake_host):
    files, _ = fake_host
    (files / "kernel.numa_balancing").unlink()
    record: dict = {}
    host_settings.HostSettings().apply({"kernel.numa_balancing": "0"}, None, record)
    assert record == {
        "not_applicable": {
            "kernel.numa_balancing": f"not applicable here: no {files / 'kernel.numa_balancing'}"
            " (this kernel has no NUMA balancing)"
        }
    }
    record = {}
    host_settings.HostSettings().apply({"readahead": "8192"}, None, record)
    assert record["not_applicable"]["readahead"].startswith("not applicable here:")


def test_a_killed_lab_s_settings_are_written_back_by_the_reaper(fake_host):
    files, registry = fake_host
    host = host_settings.HostSettings()
    host.apply({"vm.swappiness": "10"}, None, {})
    [entry] = owned.entries()
    # the owner "dies": same pid, another start time
    data = json.loads(entry.file.read_text())
    entry.file.write_text(json.dumps({**data, "start_time": data["start_time"] + 1}))
    said = owned.reap({"host": host_settings.reap_entry})
    assert said == [
        f"restored vm.swappiness ({files / 'vm.swappiness'} = 60), set by a killed lab "
        f"(pid {os.getpid()})"
    ]
    assert (files / "vm.swappiness").read_text() == "60"
    assert owned.entries() == []


def test_a_setting_another_live_lab_holds_fails_the_point(fake_host):
    files, _ = fake_host
    owned.record("host", files / "vm.swappiness", name="vm.swappiness", restore=[])
    with pytest.raises(ClusterError, match=r"^host_setting_busy: vm.swappiness is set by another"):
        host_settings.HostSettings().apply({"vm.swappiness": "10"}, None, {})
    assert (files / "vm.swappiness").read_text().strip() == "60"
