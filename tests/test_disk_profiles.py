"""Disk presets and custom profiles, and the spec's disk keys: pure, no FUSE."""

from pathlib import Path

import pytest

from pgcachelab.errors import UserError
from pgcachelab.machine.disk_profiles import (
    HOST,
    PRESETS,
    DiskProfileError,
    canonical_disk,
    parse_disk_option,
    resolve_disk,
)
from pgcachelab.spec import parse_spec


def test_every_preset_has_its_source_and_what_it_stands_for():
    assert {"nvme", "sata-ssd", "cloud-network-ssd", "hdd-7200", "seed-004-vm"} <= set(PRESETS)
    for profile in PRESETS.values():
        assert profile.source and profile.stands_for
        assert 0 < profile.read_latency_s < 0.1


def test_seed_004_vm_serves_100_to_200_random_iops():
    assert 100 <= PRESETS["seed-004-vm"].random_read_iops_one_client <= 200


def test_a_table_becomes_one_canonical_text_and_back():
    text = canonical_disk({"read_latency": "0.5ms", "sync_latency": "1ms", "iops": 150})
    assert text == "custom:read=500us,write=0us,sync=1ms,iops=150"
    profile = resolve_disk(text)
    assert (profile.read_latency_s, profile.sync_latency_s, profile.iops) == (0.0005, 0.001, 150)
    assert canonical_disk(text) == text
    # the same device written two ways is one disk
    assert (
        canonical_disk({"read_latency": "500us", "sync_latency": "1000us", "iops": "150"}) == text
    )


def test_a_table_can_start_from_a_preset():
    profile = resolve_disk(canonical_disk({"preset": "hdd-7200", "iops": 100}))
    assert profile.read_latency_s == PRESETS["hdd-7200"].read_latency_s
    assert profile.iops == 100


def test_host_and_none_mean_no_emulation():
    assert resolve_disk(HOST) is None
    assert resolve_disk(None) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("floppy", "unknown disk preset 'floppy'"),
        ({"read_latency": "fast"}, "read_latency: 'fast' is not a duration"),
        ({"read_latency": "2s"}, "not between 0 and 1s"),
        ({"iops": 0}, "iops: 0 is not a positive integer"),
        ({"iops": 1.5}, "iops: 1.5 is not a positive integer"),
        ({"bandwidth": "1kB"}, "below 1MB per second"),
        ({"latency": "1ms"}, "unknown key 'latency'"),
        ({"preset": "floppy"}, "preset: unknown preset 'floppy'"),
        (3, "not a preset name or a table"),
    ],
)
def test_bad_disk_values_say_what_is_wrong(value, message):
    with pytest.raises(DiskProfileError, match=message):
        canonical_disk(value)


def test_disk_option_takes_a_preset_or_key_value_pairs():
    assert parse_disk_option("nvme") == "nvme"
    assert parse_disk_option("read_latency=0.5ms,sync_latency=1ms").startswith("custom:read=500us")
    with pytest.raises(DiskProfileError, match="not key=value"):
        parse_disk_option("read_latency=1ms,fast")


def spec(text):
    return parse_spec(text, Path("exp.toml"))


def test_spec_disk_fixed_swept_and_in_a_ladder():
    fixed = spec('[machine]\ndisk = "nvme"')
    assert fixed.disks() == ("nvme",)
    swept = spec('[sweep]\ndisk = ["host", "nvme", { read_latency = "2ms" }]')
    assert swept.disks() == ("host", "nvme", "custom:read=2ms,write=0us,sync=0us")
    assert [p.swept["disk"] for p in swept.points()] == list(swept.disks())
    ladder = spec(
        'workload = "tpcc"\n[[ladder]]\nname = "a"\n[[ladder]]\nname = "b"\ndisk = "sata-ssd"'
    )
    assert ladder.disks() == (None, "sata-ssd")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[machine]\ndisk = "floppy"',
            r'machine.disk: invalid value "floppy": unknown disk preset',
        ),
        ('[sweep]\ndisk = ["nvme", "floppy"]', r"sweep.disk: invalid value \"floppy\""),
        (
            '[sweep]\ndisk = [{ read_latency = "1ms" }, { read_latency = "1000us" }]',
            r"sweep.disk: .*repeats a value: the same as",
        ),
    ],
)
def test_bad_spec_disks_are_one_line(text, message):
    with pytest.raises(UserError, match=message):
        spec(text)


def test_disk_option_overrides_the_spec_unless_it_sweeps_disks():
    fixed = spec('[machine]\ndisk = "nvme"')
    fixed.set_disk("hdd-7200")
    assert fixed.disks() == ("hdd-7200",)
    with pytest.raises(UserError, match="--disk: the spec .* sweeps the disk"):
        spec('[sweep]\ndisk = ["nvme", "host"]').set_disk("hdd-7200")
