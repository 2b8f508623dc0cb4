"""The sizes a run is checked against before it starts (issue 35): pure, no server."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from test_spec import captured_catalogue

from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.clusters.guc import SettingInfo
from pgcachelab.clusters.targets import VersionedTarget
from pgcachelab.errors import UserError
from pgcachelab.experiments import preflight
from pgcachelab.spec import parse_spec
from pgcachelab.workloads.scale_class import BYTES_PER_SCALE

GIB = 1024**3


def spec_of(text: str):
    return parse_spec('name = "t"\n' + text, Path("spec.toml"))


def test_the_largest_scale_is_the_data_a_cluster_holds():
    spec = spec_of("[sweep]\nscale = [1, 10, 5]\n")
    assert preflight.data_on_disk(spec, GIB)[:2] == (10 * BYTES_PER_SCALE, "pgbench.scale")


def test_a_version_sweep_keeps_a_cluster_and_its_data_per_version():
    spec = spec_of('[pgbench]\nscale = 10\n[sweep]\nversion = ["15", "16", "17"]\n')
    needed, _, _, clusters = preflight.data_on_disk(spec, GIB)
    assert (needed, clusters) == (3 * 10 * BYTES_PER_SCALE, 3)


def test_tpcc_and_cache_wash_data_use_the_plan_s_estimates():
    tpcc = spec_of('workload = "tpcc"\n[tpcc]\nwarehouses = 3\n')
    assert preflight.data_on_disk(tpcc, GIB)[0] == 3 * 100 * 1024**2
    wash = spec_of('workload = "cache-wash"\n[cache_wash]\ntable_size = 0.5\n')
    assert preflight.data_on_disk(wash, 4 * GIB)[0] == 2 * GIB


def test_data_beyond_the_free_space_is_refused_with_its_estimate():
    spec = spec_of("[pgbench]\nscale = 100\n")
    preflight.check_data_fits(spec, GIB, 2 * GIB, "/tmp")  # about 1.4 GB: fits
    with pytest.raises(UserError) as refused:
        preflight.check_data_fits(spec, GIB, GIB, "/tmp")
    assert refused.value.message == (
        "spec.toml: pgbench.scale: invalid value 100 (about 14.7MB per unit of scale): the data "
        "would take about 1.43GB, more than the 1GB free in /tmp"
    )


def test_clients_leave_the_lab_one_connection():
    # a managed cluster gets room for its clients (connection_room), up to 5,000 connections
    seeds = spec_of("[pgbench]\nclients = 250\n")
    preflight.check_clients_fit(seeds, preflight.managed_max_connections, "the server")
    raised = spec_of('[server.settings]\nmax_connections = "300"\n[pgbench]\nclients = 200\n')
    preflight.check_clients_fit(raised, preflight.managed_max_connections, "the server")
    with pytest.raises(
        UserError, match=r"pgbench\.clients: invalid value 5000: .*max_connections 5000"
    ):
        preflight.check_clients_fit(
            spec_of("[pgbench]\nclients = 5000\n"), preflight.managed_max_connections, "the server"
        )
    # what the spec sets is kept: the server given by --dsn, or a spec's own max_connections
    with pytest.raises(UserError, match=r"invalid value 100: .*max_connections 100"):
        preflight.check_clients_fit(
            spec_of("[pgbench]\nclients = 100\n"), lambda point: 100, "the server given by --dsn"
        )
    fixed = spec_of('[server.settings]\nmax_connections = "50"\n[pgbench]\nclients = 60\n')
    with pytest.raises(UserError, match=r"invalid value 60: .*max_connections 50"):
        preflight.check_clients_fit(fixed, preflight.managed_max_connections, "the server")


def test_shared_buffers_beyond_the_memory_limit_is_refused_only_when_no_point_fits():
    some_fit = spec_of('[sweep.settings]\nshared_buffers = ["64MB", "1GB"]\n')
    preflight.check_shared_buffers_fit(some_fit, 256 * 1024**2)  # the 1GB point is an outcome
    none_fit = spec_of('[sweep.settings]\nshared_buffers = ["512MB", "1GB"]\n')
    with pytest.raises(UserError, match=r"sweep\.settings\.shared_buffers: invalid value 512MB"):
        preflight.check_shared_buffers_fit(none_fit, 256 * 1024**2)
    preflight.check_shared_buffers_fit(none_fit, None)  # no limit: nothing to exceed


class _Install:
    """A version's install as VersionedTarget.preflight reads it: its catalogue, its version."""

    def __init__(self, version: str, catalogue: dict):
        self.install = PgInstall(Path(f"/pg/{version}/bin"), version, int(version.split(".")[0]),
                                 "test")  # fmt: skip
        self._catalogue = catalogue

    def catalogue(self) -> dict:
        return self._catalogue


def test_a_version_sweep_runs_each_setting_as_each_version_knows_it():
    """Seed 001: one spec for every version. 9.3 knows max_wal_size as checkpoint_segments and
    has no hash_mem_multiplier: the target says so in its preflight facts and keeps it for
    apply(); the pass validates each version without them and says each once."""
    newer = captured_catalogue("15")
    older = {n: i for n, i in newer.items() if n not in ("max_wal_size", "hash_mem_multiplier")}
    older["checkpoint_segments"] = SettingInfo("checkpoint_segments", "sighup", "integer")
    target = object.__new__(VersionedTarget)  # its installs, without finding them on disk
    target.targets = {"9.3": _Install("9.3.5", older), "15": _Install("15.8", newer)}  # type: ignore[dict-item]
    spec = spec_of(
        '[server.settings]\nmax_wal_size = "1GB"\nhash_mem_multiplier = 2.0\n'
        '[sweep]\nversion = ["9.3", "15"]\n'
    )
    facts = target.preflight(spec.setting_names())
    assert target.skipped_settings == {"9.3": ["hash_mem_multiplier"]}
    assert target.translated_settings == {"9.3": {"max_wal_size": "checkpoint_segments"}}
    assert [(s.name, s.skipped, s.translated) for s in facts.servers] == [
        ("PostgreSQL 9.3", ("hash_mem_multiplier",), {"max_wal_size": "checkpoint_segments"}),
        ("PostgreSQL 15", (), {}),
    ]
    notes: list[str] = []
    preflight._check_settings(spec, facts, SimpleNamespace(note=notes.append))  # type: ignore[arg-type]
    assert notes == [
        "PostgreSQL 9.3 does not know hash_mem_multiplier: its points run without it",
        "PostgreSQL 9.3 knows max_wal_size as checkpoint_segments: its points run with those",
    ]
    # a setting no version knows is refused, naming the first version's catalogue
    typo = spec_of(
        '[server.settings]\nhash_mem_multiplyer = 2.0\n[sweep]\nversion = ["9.3", "15"]\n'
    )
    with pytest.raises(UserError, match='unknown server setting "hash_mem_multiplyer"'):
        preflight._check_settings(typo, target.preflight(typo.setting_names()), None)
