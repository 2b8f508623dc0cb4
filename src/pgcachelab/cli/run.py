"""`pgcachelab run SPEC`: run an experiment (or --resume one) and write its report; --plan
shows what it would run (cli/plan.py)."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from pgcachelab.cli.options import (
    DEFAULT_LAB_DIR,
    JsonOption,
    LabDir,
    StoreOption,
    format_option,
    output_format,
)
from pgcachelab.cli.output import note
from pgcachelab.cli.stores import location_of, writable_store
from pgcachelab.errors import UserError


def run(
    spec: Annotated[Path | None, typer.Argument(help="Experiment TOML file.")] = None,
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    pg_bin: Annotated[
        str | None,
        typer.Option(help="bin directory of the PostgreSQL to manage, or a major version."),
    ] = None,
    dsn: Annotated[
        str | None, typer.Option(help="Measure this existing server; it is never reconfigured.")
    ] = None,
    resume: Annotated[str | None, typer.Option(help="Finish an interrupted run.")] = None,
    memory: Annotated[
        str | None,
        typer.Option(help="Cap the server's memory (cgroup), e.g. 1GiB; overrides the spec."),
    ] = None,
    disk: Annotated[
        str | None,
        typer.Option(
            help="Emulate this disk (FUSE; root): a preset such as nvme, hdd-7200, host, or "
            "read_latency=0.5ms,sync_latency=1ms; overrides the spec."
        ),
    ] = None,
    report: Annotated[bool, typer.Option(help="Write the HTML report at the end.")] = True,
    store: StoreOption = None,
    queue: Annotated[
        bool,
        typer.Option(
            help="Only queue the run's units in the PostgreSQL store, for agents on any number"
            " of hosts (pgcachelab agent) to measure."
        ),
    ] = False,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Start nothing: print the measurements in the order they would run, with their"
            " settings, memory, huge pages and an estimate of their time.",
        ),
    ] = False,
    format: Annotated[
        str | None, format_option("With --plan: text or json (default text).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Run an experiment (or --resume one) and write its report; --plan shows what it would run."""
    from pgcachelab.cli.progress import make_progress
    from pgcachelab.experiments import runner
    from pgcachelab.spec import load_spec

    for given, option in ((json_output, "--json"), (format, "--format")):
        if given and not plan:
            raise UserError(
                f"{option} without --plan", f"use --plan {option}; a run's results: export"
            )
    if plan:
        from pgcachelab.cli.plan import plan_output, refuse_with_plan
        from pgcachelab.exporters import json, text

        offered = {"text": text.plan, "json": json.plan}
        export = output_format("run --plan", format, json_output, offered, "text")
        refuse_with_plan(resume, queue, dsn)
        if spec is None:
            raise UserError("--plan needs a spec file", "e.g. pgcachelab run x.toml --plan")
        memory_bytes, disk_text = memory_option(memory), disk_option(disk)
        plan_output(spec, memory_bytes, disk_text, pg_bin, export, sys.stdout)
        return
    if (spec is None) == (resume is None):
        raise UserError("give either a spec file or --resume RUN", "e.g. pgcachelab run x.toml")
    progress = make_progress()
    if queue and resume:
        raise UserError("--queue with --resume", "agents finish a queued run: pgcachelab agent")
    if resume:
        if disk is not None:
            raise UserError("--disk with --resume", "a resumed run keeps the disk it started with")
        results = writable_store(lab_dir, store)
        run_id = runner.resume_run(resume, results, progress, pg_bin=pg_bin, dsn=dsn)
    else:
        assert spec is not None  # a spec or --resume, checked above
        experiment = load_spec(spec)
        if queue:
            from pgcachelab.experiments.fleet import check_queue_location

            check_queue_location(*location_of(lab_dir, store, experiment.store))
        results = writable_store(lab_dir, store, experiment.store)
        target = runner.make_target(
            experiment, pg_bin, dsn, memory_option(memory), progress.note, disk_option(disk)
        )
        if queue:
            from pgcachelab.experiments.fleet import queue_run

            run_id = queue_run(experiment, target, results, progress)
            typer.echo(f"run {run_id} queued: start agents with pgcachelab agent", err=True)
            return
        run_id = runner.start_run(experiment, target, results, progress)
    outcome = _outcome(results, run_id)
    if outcome.nothing_measured:
        from pgcachelab.experiments.run_outcome import nothing_measured

        raise nothing_measured(run_id, outcome)  # no report: it would be empty tables
    if report:
        try:
            _write_report(results, lab_dir, run_id)
        except OSError as error:  # the run is stored: only its report is missing
            from pgcachelab.errors import RunFailed
            from pgcachelab.failures import os_error_line

            message, hint = os_error_line(error)
            raise RunFailed(
                f"the report of run {run_id}: {message}",
                f"{hint}; then: pgcachelab report {run_id}",
            ) from None
    from pgcachelab.experiments.run_outcome import finished_line

    note(finished_line(run_id, outcome))  # last: where a reader of a log looks


def _outcome(store, run_id: str):
    from pgcachelab.experiments.run_outcome import run_outcome

    # one figure per measurement is enough, and cheap to read: not their hundreds (issue 24)
    return run_outcome(len(store.points(run_id)), store.measurements(run_id, ["warm"]))


def memory_option(memory: str | None) -> int | None:
    """--memory in bytes (None when not given), from 64MB to quantities' most."""
    from pgcachelab.quantities import size

    if memory is None:
        return None
    return size(memory, "--memory", 64 * 1024 * 1024, example="--memory 1GiB")


def disk_option(disk: str | None) -> str | None:
    """--disk as the canonical text of a disk profile (None when not given)."""
    from pgcachelab.machine.disk_profiles import DiskProfileError, parse_disk_option

    if disk is None:
        return None
    try:
        return parse_disk_option(disk)
    except DiskProfileError as error:
        raise UserError(
            f"--disk: invalid value {disk!r}: {error}",
            "e.g. --disk nvme (the presets: docs/machine.md)",
        ) from None


def _write_report(store, lab_dir: Path, run_id: str) -> None:
    from pgcachelab.studies.pages import build_report

    html = build_report(store, run_id, lab_dir / "reports" / run_id)
    typer.echo(str(html.resolve()))
