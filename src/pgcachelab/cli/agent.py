"""`pgcachelab agent`: measure the units of queued runs (run --queue) on this host."""

from typing import Annotated

import typer

from pgcachelab.cli.options import DEFAULT_LAB_DIR, LabDir, StoreOption
from pgcachelab.cli.stores import location_of, writable_store
from pgcachelab.errors import UserError

MAX_CLASS_LENGTH = 200  # as [fleet] host_class


def parse_lease(text: str) -> float:
    """--lease: a duration ("5s", "2min") from fleet's MIN_LEASE_S to MAX_LEASE_S."""
    from pgcachelab.experiments.fleet import lease_seconds

    return lease_seconds(text)


def parse_class(text: str | None) -> str | None:
    if text is not None and not (0 < len(text.strip()) == len(text) <= MAX_CLASS_LENGTH):
        raise UserError(
            f"--class: invalid value {text!r}",
            f"give the class's name, 1-{MAX_CLASS_LENGTH} characters, no surrounding spaces",
        )
    return text


def agent(
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store_url: StoreOption = None,
    run_id: Annotated[
        str | None, typer.Option("--run", help="Only this queued run's units: its id, or 'last'.")
    ] = None,
    once: Annotated[bool, typer.Option(help="Measure one unit, then stop.")] = False,
    wait: Annotated[
        bool,
        typer.Option(
            help="When the queue is empty, wait for new units; when another agent holds this"
            " host, wait for it."
        ),
    ] = False,
    lease: Annotated[
        str,
        typer.Option(
            help="How long this agent's units stay its own without a heartbeat; an agent killed"
            " mid-unit gives it back after this."
        ),
    ] = "60s",
    host_id: Annotated[
        str | None,
        typer.Option(
            "--host-id",
            help="This host's identity (default: /etc/machine-id): one measuring agent per"
            " identity at a time.",
        ),
    ] = None,
    class_name: Annotated[
        str | None,
        typer.Option(
            "--class",
            help="This host's class, as a spec's [fleet] host_class or classes name it"
            " (default: from its CPU, cores, memory and kernel).",
        ),
    ] = None,
) -> None:
    """Take units of queued runs from the shared PostgreSQL store and measure them here."""
    from pgcachelab.cli.progress import make_progress
    from pgcachelab.experiments.fleet import (
        Agent,
        check_given_class,
        check_queue_location,
        host_identity,
    )
    from pgcachelab.store.queue import UnitQueue

    if once and wait:
        raise UserError("--once with --wait", "give one: --once stops after one unit")
    lease_s = parse_lease(lease)
    host_identity(host_id)  # a bad --host-id before the store is opened
    given_class = parse_class(class_name)
    check_queue_location(*location_of(lab_dir, store_url))
    results = writable_store(lab_dir, store_url)
    check_given_class(given_class, UnitQueue(results).known_classes())
    queued_run = None if run_id is None else _queued_run(results, run_id)
    worker = Agent(
        results,
        make_progress(),
        lease_s,
        queued_run,
        wait,
        once,
        host_id=host_id,
        given_class=given_class,
        wait_for_host=wait,
    )
    measured = worker.work()
    typer.echo(f"agent measured {measured} unit(s)", err=True)


def _queued_run(results, run_id: str) -> str:
    """--run: a queued run's id, or 'last' (the newest run) as every command takes it."""
    from pgcachelab.cli.stores import run_of
    from pgcachelab.store.queue import UnitQueue

    try:
        run = run_of(results, run_id)
    except UserError as error:
        raise UserError(f"--run: {error.message}", error.hint) from None
    if not UnitQueue(results).is_queued(run.run_id):
        raise UserError(
            f"--run: run {run.run_id!r} was not queued (it was measured by `run`)",
            "queued runs are those `pgcachelab runs` lists under 'queued runs'",
        )
    return run.run_id
