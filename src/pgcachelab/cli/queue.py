"""`pgcachelab queue status | cancel | retry`: the queue of runs measured by agents (run
--queue, agent), in the shared PostgreSQL store."""

from pathlib import Path
from typing import Annotated

import typer

from pgcachelab.cli.options import DEFAULT_LAB_DIR, LabDir, StoreOption
from pgcachelab.cli.output import echo_text, note
from pgcachelab.errors import UserError

HELP = "The queue of runs measured by agents on many hosts (run --queue, agent)."

RunArgument = Annotated[str, typer.Argument(help="A queued run's id (see: pgcachelab runs).")]


def _queue(lab_dir: Path, store_url: str | None):
    from pgcachelab.cli.stores import location_of, writable_store
    from pgcachelab.experiments.fleet import check_queue_location
    from pgcachelab.store.queue import UnitQueue

    check_queue_location(*location_of(lab_dir, store_url))
    return UnitQueue(writable_store(lab_dir, store_url))


def _queued_run(queue, run_id: str):
    from pgcachelab.cli.stores import run_of

    run = run_of(queue.store, run_id)
    if (
        queue.store.db.execute(
            "select 1 from fleet_runs where run_id = %s", (run.run_id,)
        ).fetchone()
        is None
    ):
        raise UserError(
            f"run {run.run_id!r} was not queued (it was measured by `run`)",
            "queued runs are those `pgcachelab runs` lists under 'queued runs'",
        )
    return run


def status(lab_dir: LabDir = DEFAULT_LAB_DIR, store_url: StoreOption = None) -> None:
    """Queued runs with their units by state and host, and the agents running now."""
    from pgcachelab.report.tables import fleet_line, format_table

    queue = _queue(lab_dir, store_url)
    progress = queue.progress()
    if not progress:
        note(f"no queued run in {queue.store.location}")
    lines = []
    for run_id, units in progress.items():
        run = queue.store.run(run_id)
        lines.append(f"{run_id} ({run.name if run else '?'}, {run.status if run else '?'}):")
        lines.append(f"  {fleet_line(units)}")
        lines += [
            f"  {unit} try {tried} on {host or '?'}: {outcome}: {reason or ''}".rstrip(": ")
            for unit, tried, host, outcome, reason in queue.tries(run_id)
        ]
    agents = queue.agents()
    if agents:
        rows = [
            (
                host_id,
                host_name,
                host_class,
                pid,
                f"{age:.0f} s ago" + (", stale: its units went back" if stale else ""),
                f"{lease:g} s",
                unit or "-",
            )
            for _, host_id, host_name, host_class, pid, age, lease, unit, stale in agents
        ]
        head = ["host id", "host", "class", "pid", "heartbeat", "lease", "measuring"]
        lines += ["", "agents:", format_table(head, rows)]
    else:
        lines += ["", "no agent is running"]
    echo_text("\n".join(lines))


def cancel(
    run_id: RunArgument, lab_dir: LabDir = DEFAULT_LAB_DIR, store_url: StoreOption = None
) -> None:
    """Cancel a queued run: its waiting units are dropped, a unit being measured is discarded
    when its agent finishes it. The run's stored measurements stay."""
    queue = _queue(lab_dir, store_url)
    run = _queued_run(queue, run_id)
    cancelled, aborting = queue.cancel(run.run_id)
    note(
        f"run {run.run_id}: {cancelled} waiting unit(s) cancelled, {aborting} being measured"
        " (their agents discard them)"
    )


def retry(
    unit: Annotated[str, typer.Argument(help="The unit given up: RUN/POINT/REPETITION.")],
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store_url: StoreOption = None,
) -> None:
    """Queue a unit that was given up (its tries failed) again, with all its tries."""
    run_id, point, repetition = _parse_unit(unit)
    queue = _queue(lab_dir, store_url)
    run = _queued_run(queue, run_id)
    try:
        queue.retry(run.run_id, point, repetition)
    except LookupError as why:
        raise UserError(
            f"queue retry: unit {unit!r}: {why}",
            "only a failed unit is retried: see them with: pgcachelab queue status",
        ) from None
    note(f"unit {unit} queued again: an agent takes it")


def _parse_unit(text: str) -> tuple[str, int, int]:
    from pgcachelab.quantities import INT_MAX, NumberError, whole_number

    hint = "name it RUN/POINT/REPETITION as queue status shows it, e.g. 20261127-ab12/0/1"
    parts = text.rsplit("/", 2)
    if len(parts) != 3 or not parts[0]:
        raise UserError(f"queue retry: invalid unit {text!r}", hint)
    try:  # ASCII digits: isdigit() also takes "²", which int() refuses (issue 48)
        point, repetition = (whole_number(part, "", 0, INT_MAX) for part in parts[1:])
    except NumberError as error:
        raise UserError(f"queue retry: invalid unit {text!r}: {error.why}", hint) from None
    return parts[0], point, repetition
