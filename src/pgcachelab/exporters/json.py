"""JSON: every command's result through one encoder (`encode`).

The documents are versioned where a format is read by programs: doctor's "format" and the run
export's "format" key say which shape they have."""

import dataclasses
import json
import math
import time
from typing import Any, TextIO

# doctor's JSON format history: 1 — findings and skipped checks, context;
# 2 — a finding's "evidence" (the lab's own measurements: a cache-split run for shared_buffers).
DOCTOR_FORMAT_VERSION = 2
RUN_EXPORT_FORMAT = "pgcachelab-run/1"


def _plain(value: Any) -> Any:
    """What json cannot encode by itself: a dataclass as its fields, a set in order, the rest
    (dates, Decimals, paths) as their str(): the text every command printed before (issue 50)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def _finite(value: Any) -> Any:
    """`value` with every float that is not finite made null, in dicts, lists and dataclasses at
    any depth: JSON has no NaN (a share or mean of nothing is null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _finite(dataclasses.asdict(value))
    return value


def encode(value: Any, indent: int | None = 2) -> str:
    """The one way a result becomes JSON text: strict JSON (NaN and infinities null).

    The C encoder does the work; only a document that holds a NaN is walked in Python first,
    so a run's 10,000 measurements export at the encoder's speed (issue 24)."""
    try:
        text = json.dumps(value, indent=indent, default=_plain, allow_nan=False)
    except ValueError:  # a float that is not finite somewhere in it
        text = json.dumps(_finite(value), indent=indent, default=_plain, allow_nan=False)
    # ensure_ascii escapes every control character but DEL; escaped too, the text is safe to
    # print to a terminal as it is (the text exporter escapes names for the same reason)
    return text.replace("\x7f", "\\u007f")


def _write(document: Any, out: TextIO) -> None:
    out.write(encode(document) + "\n")


def diagnosis(diagnosis, out: TextIO) -> None:
    """`doctor`: findings worst first, then the checks skipped, and the context read."""
    from pgcachelab.doctor.findings import Finding, Skipped
    from pgcachelab.doctor.render import ordered

    findings = [o.as_dict() for o in ordered(diagnosis) if isinstance(o, Finding)]
    skipped = [o.as_dict() for o in diagnosis.outcomes if isinstance(o, Skipped)]
    document = {
        "format": DOCTOR_FORMAT_VERSION,
        "context": diagnosis.context,
        "findings": findings,
        "skipped": skipped,
    }
    _write(document, out)


def comparison(comparison, out: TextIO) -> None:
    """`compare`: B/A per matched point, with intervals and verdicts."""
    from pgcachelab.report.compare_text import as_dict

    _write(as_dict(comparison), out)


def tpcc_run(run, load, out: TextIO) -> None:
    """`tpcc run`: the run (and its load, when the command loaded), with what differs from
    TPC-C."""
    from pgcachelab.studies.tpcc.text import DISCLAIMER
    from pgcachelab.workloads.tpcc import differences

    document = {
        "disclaimer": DISCLAIMER,
        "differences": list(differences(run.options.mode, run.options.terminal_times)),
        "run": dataclasses.asdict(run),
        "rollback_share": run.rollback_share,
        "client_cpu_ms_per_transaction": run.client_cpu_ms_per_transaction,
        "mix_meets_minimums": run.mix.met,
    }
    if load is not None:
        document["load"] = dataclasses.asdict(load)
    _write(document, out)


def reproduction(results, machine: dict, out: TextIO) -> None:
    """`reproduce`: each study's run and its claims' verdicts, and the machine they ran on."""
    from pgcachelab.experiments.reproduce_page import as_dict

    _write(as_dict(results, machine), out)


def plan(plan: dict, out: TextIO) -> None:
    """`run --plan`: the measurements in order, with their settings and estimates."""
    _write(plan, out)


def snapshot(snapshot, out: TextIO, one_line: bool) -> None:
    """`inspect`: one snapshot as it is taken, with what its method cost; one line each under
    --watch, so a stream of them is JSON lines."""
    from pgcachelab.report.cache_table import snapshot_cost

    document = {
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **snapshot.to_dict(),
        "method_cost": snapshot_cost(snapshot),
    }
    out.write(encode(document, indent=None if one_line else 2) + "\n")


def run_measurements(store, run_id: str, out: TextIO) -> None:
    """`export`: the whole run, its context, points, every measurement with all metrics.

    One measurement a line: json's C encoder writes a line at a time, where an indented
    document went through its pure-Python encoder (25 s for 10,000 cache-wash measurements,
    issue 24), and a line per measurement still reads and greps well."""
    from pgcachelab.store.records import gc_paused

    run = store.run(run_id)
    assert run is not None, f"no run {run_id}"  # callers look it up first
    head = {
        "format": RUN_EXPORT_FORMAT,
        "run": {
            "run_id": run.run_id,
            "name": run.name,
            "status": run.status,
            "created_at": run.created_at,
            "finished_at": run.finished_at,
            "spec": run.spec_text,
            "target": run.target,
            "environment": run.environment,
        },
        "points": [
            {
                "point_index": p.point_index,
                "label": p.label,
                "swept": p.swept,
                "workload": dict(sorted(p.workload.record().items())),  # as stored
                "settings": p.settings,
            }
            for p in store.points(run_id)
        ],
    }
    out.write("{\n")
    for key, value in head.items():
        # indented one level deeper; a newline inside a JSON string is escaped, never raw
        text = encode(value, indent=1).replace("\n", "\n ")
        out.write(f" {encode(key)}: {text},\n")
    out.write(' "measurements": [')
    separator = "\n  "
    with gc_paused():
        measurements = store.measurements(run_id)
    for m in measurements:
        out.write(separator + encode(m.__dict__, indent=None))
        separator = ",\n  "
    out.write("\n ]\n}\n")
