"""`pgcachelab run SPEC --plan`: what the run would do, in order, without starting anything.

Reads the spec and this host's memory and huge page size; asks `postgres --version` of the
binaries a run without a version sweep would use, to pick the huge pages formula. No server,
no initdb, no cgroup, no store, no install: it works without root for any spec.
"""

from pgcachelab.clusters.binaries import find_install
from pgcachelab.errors import UserError
from pgcachelab.experiments.plan_view import PlanMachine, build_plan, major_of
from pgcachelab.machine.host_facts import memory_total_bytes, read_hugepages
from pgcachelab.machine.hugepages_estimate import DEFAULT_PAGE_SIZE_BYTES
from pgcachelab.spec import load_spec


def refuse_with_plan(resume: str | None, queue: bool, dsn: str | None) -> None:
    """--plan shows a new run on servers the lab manages: not one to finish, queue or borrow."""
    for given, option, hint in (
        (resume, "--resume", "a plan is of a new run: pgcachelab run SPEC --plan"),
        (queue, "--queue", "see the plan first, then queue: pgcachelab run SPEC --queue"),
        (dsn, "--dsn", "the plan is of a run on clusters the lab manages: drop --dsn"),
    ):
        if given:
            raise UserError(f"--plan with {option}", hint)


def _server_major(pg_bin: str | None) -> int | None:
    """The major version of the server a run without a version sweep uses; None if unknown."""
    major = major_of(pg_bin)
    if major is not None:
        return major
    try:
        return find_install(pg_bin).major  # `postgres --version`: the wheel's when None
    except UserError:
        return None


def plan_output(
    spec_path, memory_bytes: int | None, disk: str | None, pg_bin: str | None, export, out
) -> None:
    """The plan to `out` by `export` (an exporter's plan). `memory_bytes` and `disk` are
    --memory and --disk, checked."""
    spec = load_spec(spec_path)
    if disk is not None:
        spec.set_disk(disk)
    machine = PlanMachine(
        ram_bytes=memory_bytes or spec.memory_bytes,
        ram_source="--memory" if memory_bytes else "machine.memory" if spec.memory_bytes else None,
        host_memory_bytes=memory_total_bytes(),
        page_size_bytes=read_hugepages().get("page_size_bytes", DEFAULT_PAGE_SIZE_BYTES),
        server_major=None if spec.versions else _server_major(pg_bin or spec.pg_bin),
    )
    export(build_plan(spec, machine), out)
