"""doctor's shared_buffers check citing the lab's own cache-split runs (seed 000).

Stored runs are built through the store API, as the runner writes them; the end-to-end case,
on a real cache-wash run, is in test_doctor_advise.py.
"""

import platform
import sqlite3
from pathlib import Path

import pytest

from pgcachelab.doctor.findings import Finding
from pgcachelab.doctor.lab_evidence import (
    HostIdentity,
    major_of,
    major_of_version_num,
    read_cache_split_evidence,
)
from pgcachelab.doctor.server_checks import check_shared_buffers
from pgcachelab.doctor.server_facts import ServerFacts
from pgcachelab.spec import Point, parse_spec
from pgcachelab.store.records import Measurement
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.workloads.parameters import CacheWashParameters

MB = 1024**2
GB = 1024**3
RAM = 8 * GB
HOST = HostIdentity(platform.node(), RAM, "18")
CACHE_WASH_SPEC = 'name = "split"\nworkload = "cache-wash"\n'
# idx2 medians per shared_buffers, three repetitions: 256MB is best, 512MB cannot be told from
# it, 32MB is clearly slower.
IDX2_MS = {"32MB": [0.90, 0.95, 0.92], "256MB": [0.20, 0.21, 0.22], "512MB": [0.21, 0.23, 0.26]}


def environment(**changes) -> dict:
    return {"hostname": platform.node(), "memory_total_bytes": RAM, "server_version": "18.0",
            **changes}  # fmt: skip


def store_run(lab_dir, env=None, target=None, spec=CACHE_WASH_SPEC, idx2=IDX2_MS) -> str:
    """A finished cache-wash run as the runner stores it: points, then a measurement per
    repetition with every phase latency."""
    store = SqliteResultStore.in_lab_dir(lab_dir)
    points = [
        Point(index, CacheWashParameters(), {"shared_buffers": size, "huge_pages": "off"},
              {"shared_buffers": size})
        for index, size in enumerate(idx2)
    ]  # fmt: skip
    target = target or {"kind": "managed", "source": "wheel", "memory_limit_bytes": None}
    study = parse_spec(spec, Path("split.toml")).study  # as the runner records it
    run_id = store.create_run(
        "split", "split.toml", spec, target, env or environment(), points, study
    )
    for point, latencies in zip(points, idx2.values(), strict=True):
        for repetition, idx2_ms in enumerate(latencies):
            wash = {"idx1_ms": [0.2] * 5, "seq_ms": [900.0], "idx2_ms": [idx2_ms] * 5}
            store.record_measurement(
                run_id,
                Measurement(point.index, repetition, "ok", None, 0.0, 1.0, 1.0, "restart",
                            None, None, None, {"cache_wash": wash}),
            )  # fmt: skip
    store.finish_run(run_id, "done")
    store.close()
    return run_id


def facts(shared_buffers_bytes: float) -> ServerFacts:
    return ServerFacts(180000, "18.0", {"shared_buffers": float(shared_buffers_bytes)},
                       {"shared_buffers": f"{shared_buffers_bytes // MB:.0f}MB"})  # fmt: skip


def test_major_versions_as_the_lab_names_them():
    assert [major_of(v) for v in ("9.6.24", "13.22", "18.0", "")] == ["9.6", "13", "18", ""]
    assert major_of_version_num(90624) == "9.6"
    assert major_of_version_num(180001) == "18"


def test_the_newest_matching_run_is_the_evidence(tmp_path):
    store_run(tmp_path, env=environment(hostname="elsewhere"))
    store_run(tmp_path, env=environment(server_version="13.22"))
    store_run(tmp_path, spec='name = "x"\nworkload = "pgbench"\n')
    wanted = store_run(tmp_path)
    store_run(tmp_path, target={"kind": "existing", "conninfo": "host=/tmp"})
    evidence, note = read_cache_split_evidence(tmp_path, HOST, "off")
    assert note == ""
    assert evidence.run_id == wanted
    assert evidence.best_shared_buffers_bytes == 256 * MB
    assert evidence.tied_bytes == [512 * MB]
    assert evidence.measured_bytes == [32 * MB, 256 * MB, 512 * MB]
    text = evidence.text()
    assert text.startswith(f"the lab measured (run {wanted} 'split', PostgreSQL 18.0 on this host")
    assert "shared_buffers = 256MB (3% of its memory): idx2 median 0.21 ms [95% CI" in text
    assert "(n=3); as good within the intervals: 512MB" in text


def test_no_evidence_says_why(tmp_path):
    assert read_cache_split_evidence(tmp_path, HOST, "off") == (
        None, f"no results store at {tmp_path / 'results.sqlite'}"
    )  # fmt: skip
    other = store_run(tmp_path, env=environment(hostname="elsewhere"))
    evidence, note = read_cache_split_evidence(tmp_path, HOST, "off")
    assert evidence is None
    assert note == (
        f"no cache-split run for this server in the lab: run {other}: measured on host 'elsewhere'"
    )
    # doctor only reads: the store is opened read-only, and a read-only open writes nothing
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        SqliteResultStore.open_read_only(tmp_path / "results.sqlite").db.execute("delete from runs")
    # a store of an older version is not migrated by doctor, which only reads: it says so
    path = tmp_path / "results.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("pragma user_version = 2")
    assert read_cache_split_evidence(tmp_path, HOST, "off") == (
        None,
        f"cannot read the results store {path}: written by an older pgcachelab (v2):"
        " `pgcachelab runs` migrates it",
    )


def test_measured_with_the_same_memory_the_evidence_decides(tmp_path):
    store_run(tmp_path)
    evidence, _ = read_cache_split_evidence(tmp_path, HOST, "off")
    # 32MB was measured and is slower: recommend the best, whatever the 25% rule says
    slower = check_shared_buffers(facts(32 * MB), RAM, "RAM", evidence)
    assert slower.severity == "info"
    assert slower.fix == "ALTER SYSTEM SET shared_buffers = '256MB'; then restart the server"
    assert "fastest for index lookups after a large scan" in slower.recommendation
    assert "faster than 32MB" in slower.recommendation
    assert slower.evidence == evidence.text()
    # 512MB is as good within the intervals: nothing to change
    tied = check_shared_buffers(facts(512 * MB), RAM, "RAM", evidence)
    assert (tied.severity, tied.fix) == ("ok", "")
    assert tied.found.endswith("; as good as the best the lab measured")
    # a value the lab did not measure: it says so rather than claim it is slower
    unmeasured = check_shared_buffers(facts(128 * MB), RAM, "RAM", evidence)
    assert unmeasured.severity == "info"
    assert "and did not measure 128MB" in unmeasured.recommendation


def test_measured_with_other_memory_is_cited_not_followed(tmp_path):
    store_run(tmp_path)
    evidence, _ = read_cache_split_evidence(tmp_path, HOST, "off")
    outcome = check_shared_buffers(facts(128 * MB), 16 * GB, "RAM", evidence)
    assert isinstance(outcome, Finding)
    assert outcome.severity == "info"  # the docs' rule: 128MB of 16GB is below 5%
    assert outcome.fix == "ALTER SYSTEM SET shared_buffers = '4096MB'; then restart the server"
    assert outcome.evidence.startswith("the lab measured")
    assert outcome.evidence.endswith(
        "that server had 8GB, this one 16GB: the figure does not carry over as it is"
    )


def test_a_run_that_tells_no_setting_apart_leaves_the_rule_standing(tmp_path):
    noisy = {"32MB": [0.2, 0.9, 0.4], "256MB": [0.2, 0.5, 0.3]}
    store_run(tmp_path, idx2=noisy)
    evidence, _ = read_cache_split_evidence(tmp_path, HOST, "off")
    assert not evidence.singles_out
    outcome = check_shared_buffers(facts(4 * GB), RAM, "RAM", evidence)
    assert outcome.severity == "warning"  # 50% of 8GB: the docs' rule, not the run
    assert outcome.evidence.endswith("the run does not tell the settings apart, so the rule "
                                     "below stands")  # fmt: skip
