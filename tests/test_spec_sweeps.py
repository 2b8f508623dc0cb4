"""A swept value takes the same path as a fixed one (issue 16): same type, same value, for every
sweepable key of every workload; values equal once converted are one value. Pure, no server."""

import re

import pytest
from test_spec import error_of, spec

from pgcachelab.spec import (
    CACHE_WASH_SWEEPABLE,
    SWEEPABLE_WORKLOAD_KEYS,
    TPCC_SWEEPABLE,
)

# workload -> its sweepable keys, and the [table] that holds each workload's fixed parameters
SWEEPABLE = {"pgbench": SWEEPABLE_WORKLOAD_KEYS, "cache-wash": CACHE_WASH_SWEEPABLE,
             "tpcc": TPCC_SWEEPABLE}  # fmt: skip
WORKLOAD_TABLE = {"pgbench": "pgbench", "cache-wash": "cache_wash", "tpcc": "tpcc"}
# key -> a value in TOML that is not the default, as a user would write it
SAMPLES = {
    "scale": "3", "scale_class": '"small"', "clients": "3", "threads": "2",
    "duration": '"2min"', "transactions": "100", "mode": '"simple-update"', "rate": "500",
    "protocol": '"prepared"', "os_cache": '"drop-cluster"', "prewarm": "false",
    "inspect_method": '"pg_buffercache"', "lookups": "50", "warehouses": "2", "warmup": '"5s"',
    "weights": "[44, 44, 4, 4, 4]", "home_warehouse": "false", "rate_tpm": "300",
    "version": '"9.6"', "disk": '{ read_latency = "0.5ms", sync_latency = "1ms" }',
    "terminal_times": '"spec"', "checkpoint": "true",
}  # fmt: skip
# where a workload's key of the same name takes other values (pgbench's mode, TPC-C's mode)
WORKLOAD_SAMPLES = {("tpcc", "mode"): '"client"'}


def fixed_form(workload: str, key: str, value: str) -> str:
    """The spec that sets `key` without sweeping it."""
    head = f'workload = "{workload}"\n'
    if key in ("os_cache", "prewarm", "disk"):
        return f"{head}[machine]\n{key} = {value}\n"
    if key == "inspect_method":
        return f"{head}[inspect]\nmethod = {value}\n"
    return f"{head}[{WORKLOAD_TABLE[workload]}]\n{key} = {value}\n"


def swept_form(workload: str, key: str, value: str) -> str:
    inspect = "[inspect]\n" if key == "inspect_method" else ""
    return f'workload = "{workload}"\n{inspect}[sweep]\n{key} = [{value}]\n'


CASES = [(workload, key) for workload, keys in SWEEPABLE.items() for key in keys]


@pytest.mark.parametrize(("workload", "key"), CASES, ids=[f"{w}-{k}" for w, k in CASES])
def test_a_swept_value_is_converted_exactly_as_the_fixed_one(workload, key):
    assert key in SAMPLES, f"give {key} a sample value in SAMPLES"
    sample = WORKLOAD_SAMPLES.get((workload, key), SAMPLES[key])
    swept = spec(swept_form(workload, key, sample)).points()
    assert len(swept) == 1
    value = getattr(swept[0].workload, key)
    if key == "version":
        # no fixed form: a single server is [server] pg_bin; the point names its major version
        assert value == "9.6"
        return
    fixed = getattr(spec(fixed_form(workload, key, sample)).points()[0].workload, key)
    assert type(value) is type(fixed), (value, fixed)
    assert value == fixed
    assert (
        swept[0].label == f"{key}={spec(swept_form(workload, key, sample)).sweep_workload[key][0]}"
    )


def test_tpcc_warmup_and_weights_sweeps_resolve_like_the_fixed_values():
    parsed = spec('workload = "tpcc"\n[sweep]\nwarmup = ["0s", "5s"]\n'
                  "weights = [[45, 43, 4, 4, 4], \"44,44,4,4,4\"]\n")  # fmt: skip
    points = parsed.points()
    assert [p.workload.warmup for p in points] == [0.0, 0.0, 5.0, 5.0]
    assert [p.workload.weights for p in points][:2] == ["45,43,4,4,4", "44,44,4,4,4"]
    assert points[0].label == "warmup=0s, weights=[45, 43, 4, 4, 4]"  # as written


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[sweep.settings]\nwork_mem = ["1MB", "1024kB"]',
         r'^exp.toml: sweep.settings.work_mem: invalid value "1024kB": repeats a value: the same '
         r'as "1MB"$'),
        ('[sweep.settings]\ncheckpoint_timeout = ["5min", "300s"]',
         r'"300s": repeats a value: the same as "5min"'),
        # only the server's units tell these apart: work_mem counts kB
        ('[sweep.settings]\nwork_mem = ["1MB", "1024"]',
         r'"1024": repeats a value: the same as "1MB"'),
        ('[sweep.settings]\nfsync = ["on", "true"]', r'"true": repeats a value: the same as "on"'),
        ('[sweep.settings]\nwal_level = ["replica", "REPLICA"]',
         r'"REPLICA": repeats a value: the same as "replica"'),
        ('[sweep]\nduration = ["60s", "1min"]',
         r'sweep.duration: invalid value "1min": repeats a value: the same as "60s"'),
        ('workload = "tpcc"\n[sweep]\nweights = [[45, 43, 4, 4, 4], "45,43,4,4,4"]',
         r"sweep.weights: .*repeats a value"),
    ],
)  # fmt: skip
def test_values_equal_once_converted_are_refused_as_repeats(text, message):
    error = error_of(text)
    assert "\n" not in error.message
    assert re.search(message, error.message), error.message
    assert error.hint == "list each value once"


SEED_000_VALUES = ["14GB", "13GB", "12GB", "11GB", "10GB", "9GB", "8GB", "7GB", "6GB", "5GB",
                   "4GB", "3GB", "2GB", "1GB", "512MB", "256MB", "128MB", "64MB", "32MB", "16MB",
                   "8MB", "4MB", "2MB", "1MB", "512kB", "256kB", "128kB"]  # fmt: skip


def blocks_spec(values: list[str], hp: str = '["on", "off"]', extra: str = "") -> str:
    listed = ", ".join(f'"{v}"' for v in values)
    return (
        f'workload = "cache-wash"\nrepetitions = 2\norder = "blocks"\n{extra}'
        f"[sweep.settings]\nshared_buffers = [{listed}]\nhuge_pages = {hp}\n"
    )


def test_blocks_run_the_block_key_s_values_in_turn_the_others_as_written():
    """Seed 000: every shared_buffers with huge pages, largest first, then every one without;
    the seed's list of 27 values as written; one round after the other."""
    parsed = spec(blocks_spec(SEED_000_VALUES, extra='block_by = "huge_pages"\n'))
    points = parsed.points()
    order = [(points[p].swept["huge_pages"], points[p].swept["shared_buffers"], r)
             for p, r in parsed.schedule()]  # fmt: skip
    expected = [(hp, value, r) for r in (0, 1) for hp in ("on", "off") for value in SEED_000_VALUES]
    assert order == expected


def test_blocks_keep_a_written_ascending_order_which_other_orders_sort_down_for_huge_pages():
    ascending = ["1MB", "8MB", "256MB"]
    parsed = spec(blocks_spec(ascending, hp='["off", "on"]', extra='block_by = "huge_pages"\n'))
    assert [p.swept["shared_buffers"] for p in parsed.points()][:3] == ascending
    assert [p.swept["huge_pages"] for p in parsed.points()] == ["off"] * 3 + ["on"] * 3
    interleaved = spec(blocks_spec(ascending).replace('"blocks"', '"interleaved"'))
    assert [p.swept["shared_buffers"] for p in interleaved.points()][::2] == ascending[::-1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (blocks_spec(["1MB"]), r'order: order = "blocks" needs block_by.*add e.g. block_by'),
        (
            blocks_spec(["1MB"], extra='block_by = "clients"\n'),
            r'block_by: invalid value "clients": not a swept key.*shared_buffers, huge_pages',
        ),
        (
            blocks_spec(["1MB"], extra='block_by = "huge_pages"\n').replace(
                'order = "blocks"', 'order = "interleaved"'
            ),
            r'block_by: invalid value "huge_pages": only used with order = "blocks"',
        ),
    ],
)
def test_blocks_order_needs_a_swept_key_to_block_by(text, message):
    error = error_of(text)
    assert re.search(message, f"{error} {error.hint}", re.S), f"{error} / {error.hint}"


def test_blocks_by_a_data_key_are_refused():
    text = (
        'order = "blocks"\nblock_by = "scale"\n[pgbench]\nduration = "1s"\n'
        "[sweep]\nscale = [1, 2]\n"
    )
    error = error_of(text)
    assert re.search(r'block_by: invalid value "scale": points that need other data', str(error))
