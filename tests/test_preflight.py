"""The sizes a run is checked against before it starts (issue 35): pure, no server."""

from pathlib import Path

import pytest

from pgcachelab.errors import UserError
from pgcachelab.experiments import preflight
from pgcachelab.experiments.spec import parse_spec
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
