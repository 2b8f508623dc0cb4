"""Experiment specs: TOML in, validated points out. Pure logic, no servers.

A spec names the workload, fixed server settings and workload parameters, the swept ones,
repetitions and order. Every problem is one UserError naming file, key, value and the fix.

schema.py: the tables as pydantic models (values.py: what one value may be; rules.py: rules
across tables; errors.py: their one-line messages); load.py reads a file into an
ExperimentSpec; plan.py expands it into points and their order; server_settings.py checks its
settings against a server's catalogue.
"""

from pgcachelab.spec.load import load_spec, parse_spec
from pgcachelab.spec.plan import (
    ExperimentSpec,
    Point,
    data_group,
    expand_points,
    huge_pages_on,
    schedule,
)
from pgcachelab.spec.rules import (
    CACHE_WASH_SWEEPABLE,
    DATA_KEYS,
    SWEEPABLE_WORKLOAD_KEYS,
    TPCC_SWEEPABLE,
    WORKLOAD_TABLES,
)
from pgcachelab.spec.schema import InspectOptions
from pgcachelab.spec.server_settings import validate_settings
from pgcachelab.spec.sweeps import exact_size_text
from pgcachelab.spec.values import parse_inspect_method
from pgcachelab.workloads.values import Script

__all__ = [
    "CACHE_WASH_SWEEPABLE",
    "DATA_KEYS",
    "SWEEPABLE_WORKLOAD_KEYS",
    "TPCC_SWEEPABLE",
    "WORKLOAD_TABLES",
    "ExperimentSpec",
    "InspectOptions",
    "Point",
    "Script",
    "data_group",
    "exact_size_text",
    "expand_points",
    "huge_pages_on",
    "load_spec",
    "parse_inspect_method",
    "parse_spec",
    "schedule",
    "validate_settings",
]
