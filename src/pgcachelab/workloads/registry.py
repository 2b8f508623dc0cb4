"""The workloads by the name a spec gives them ([experiment] workload)."""

from typing import Any

from pgcachelab.workloads import cache_wash, pgbench_workload, tpcc_workload
from pgcachelab.workloads.protocol import Workload

WORKLOADS: dict[str, Workload[Any]] = {
    "pgbench": pgbench_workload,
    "cache-wash": cache_wash,
    "tpcc": tpcc_workload,
}
