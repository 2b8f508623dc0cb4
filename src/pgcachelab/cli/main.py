"""The `pgcachelab` command: a thin layer that parses options and calls one module per job."""

import os
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from pgcachelab.cli import inspect as inspect_cli
from pgcachelab.cli.tpcc import tpcc_app
from pgcachelab.errors import UserError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="A laboratory for PostgreSQL performance and caches.",
)


@app.callback()
def _reap_what_killed_labs_left() -> None:
    """A laboratory for PostgreSQL performance and caches."""
    # Every command first reaps what dead labs left (servers, directories, cgroups, mounts,
    # huge pages), whatever store or --lab-dir they used: experiments/reaping.py.
    from pgcachelab.experiments.reaping import reap_everything

    reap_everything(lambda line: print(line, file=sys.stderr, flush=True))


LabDir = Annotated[
    Path,
    typer.Option("--lab-dir", envvar="PGCACHELAB_DIR", help="Where results and reports live."),
]
DEFAULT_LAB_DIR = Path("lab")


StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Where runs are kept: postgresql://user@host/dbname, or a SQLite file or lab"
        " directory. Default: $PGCACHELAB_STORE, else results.sqlite in --lab-dir.",
        show_default=False,
    ),
]


def _location(lab_dir: Path, store: str | None, spec_store: str | None = None):
    """(where the runs are, the option or key that said so: for messages)."""
    from pgcachelab.store.location import ENV_VAR, choose_store

    location = choose_store(store, spec_store, os.environ.get(ENV_VAR), lab_dir)
    if store:
        return location, "--store"
    if spec_store:
        return location, "store"
    return location, ENV_VAR if os.environ.get(ENV_VAR) else "--lab-dir"


# The store the command opened last: a sqlite3 or psycopg error at the edge names it.
_opened_store_location: str | None = None


def _store(lab_dir: Path, store: str | None = None, spec_store: str | None = None):
    """The store to write runs to, created if new."""
    from pgcachelab.store.open import open_store

    global _opened_store_location
    location, option = _location(lab_dir, store, spec_store)
    _opened_store_location = location.masked()
    return open_store(location, option=option)


def _existing_store(lab_dir: Path, store: str | None = None):
    """The store to read runs from, opened read-only; one that does not exist is a user error."""
    from pgcachelab.store.open import open_store

    global _opened_store_location
    location, option = _location(lab_dir, store)
    _opened_store_location = location.masked()
    return open_store(location, create=False, option=option)


def _run_of(store, run_id: str):
    if run_id == "last":
        runs = store.runs()
        if not runs:
            raise UserError(f"no runs in {store.location}", "run an experiment first")
        return runs[-1]
    run = store.run(run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in {store.location}", "list runs with: pgcachelab runs")
    return run


@app.command()
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
    json_output: Annotated[bool, typer.Option("--json", help="With --plan: as JSON.")] = False,
) -> None:
    """Run an experiment (or --resume one) and write its report; --plan shows what it would run."""
    from pgcachelab.cli.progress import make_progress
    from pgcachelab.experiments import runner
    from pgcachelab.experiments.spec import load_spec

    if json_output and not plan:
        raise UserError("--json without --plan", "use --plan --json; a run's results: export")
    if plan:
        from pgcachelab.cli.plan import plan_output, refuse_with_plan

        refuse_with_plan(resume, queue, dsn)
        if spec is None:
            raise UserError("--plan needs a spec file", "e.g. pgcachelab run x.toml --plan")
        memory_bytes, disk_text = _memory_option(memory), _disk_option(disk)
        _echo_text(plan_output(spec, memory_bytes, disk_text, pg_bin, json_output))
        return
    if (spec is None) == (resume is None):
        raise UserError("give either a spec file or --resume RUN", "e.g. pgcachelab run x.toml")
    progress = make_progress()
    if queue and resume:
        raise UserError("--queue with --resume", "agents finish a queued run: pgcachelab agent")
    if resume:
        if disk is not None:
            raise UserError("--disk with --resume", "a resumed run keeps the disk it started with")
        results = _store(lab_dir, store)
        run_id = runner.resume_run(resume, results, progress, pg_bin=pg_bin, dsn=dsn)
    else:
        assert spec is not None  # a spec or --resume, checked above
        experiment = load_spec(spec)
        if queue:
            from pgcachelab.experiments.fleet import check_queue_location

            check_queue_location(*_location(lab_dir, store, experiment.store))
        results = _store(lab_dir, store, experiment.store)
        target = runner.make_target(
            experiment, pg_bin, dsn, _memory_option(memory), progress.note, _disk_option(disk)
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

    _note(finished_line(run_id, outcome))  # last: where a reader of a log looks


def _outcome(store, run_id: str):
    from pgcachelab.experiments.run_outcome import run_outcome

    # one figure per measurement is enough, and cheap to read: not their hundreds (issue 24)
    return run_outcome(len(store.points(run_id)), store.measurements(run_id, ["warm"]))


def _note(line: str) -> None:
    from pgcachelab.printable import printable

    typer.echo(printable(line), err=True)


def _echo_text(text: str) -> None:
    """Text for a reader: names and labels from specs and stores with their control
    characters escaped (JSON escapes its own)."""
    from pgcachelab.printable import printable_lines

    typer.echo(printable_lines(text))


def _memory_option(memory: str | None) -> int | None:
    from pgcachelab.units import parse_bytes

    if memory is None:
        return None
    try:
        amount = parse_bytes(memory)
    except ValueError as error:
        raise UserError(
            f"--memory: invalid value {memory!r}: {error}", "e.g. --memory 1GiB"
        ) from None
    if amount < 64 * 1024 * 1024:
        raise UserError(f"--memory: invalid value {memory!r}: below 64MB", "e.g. --memory 1GiB")
    return amount


def _disk_option(disk: str | None) -> str | None:
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
    from pgcachelab.report.build import build_report

    html = build_report(store, run_id, lab_dir / "reports" / run_id)
    typer.echo(str(html.resolve()))


@app.command("runs")
def list_runs(lab_dir: LabDir = DEFAULT_LAB_DIR, store: StoreOption = None) -> None:
    """List the runs in the store."""
    from pgcachelab.report.tables import runs_table

    _echo_text(runs_table(_existing_store(lab_dir, store)))


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
) -> None:
    """Print a run's points and measurements as a table."""
    from pgcachelab.report.tables import run_table

    results = _existing_store(lab_dir, store)
    _echo_text(run_table(results, _run_of(results, run_id).run_id))


@app.command()
def export(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    format: Annotated[str, typer.Option("--format", help="csv or json.")] = "csv",
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
) -> None:
    """Write a run's measurements to stdout as CSV or JSON."""
    from pgcachelab.report import export as exporters

    if format not in exporters.FORMATS:
        raise UserError(f"--format: unknown format {format!r}", "use csv or json")
    results = _existing_store(lab_dir, store)
    exporters.FORMATS[format](results, _run_of(results, run_id).run_id, sys.stdout)


@app.command("report")
def report_command(
    run_id: Annotated[str, typer.Argument(help="Run id, or 'last'.")],
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    output: Annotated[Path | None, typer.Option(help="Folder to write the report in.")] = None,
    store: StoreOption = None,
    point: Annotated[
        int | None,
        typer.Option(help="Plot this point's run second by second instead (see `show`)."),
    ] = None,
    repetition: Annotated[
        int | None,
        typer.Option(help="With --point: this repetition (from 0); default its median one."),
    ] = None,
) -> None:
    """Write a run's report folder (PNG and SVG plots, one self-contained HTML page)."""
    results = _existing_store(lab_dir, store)
    run = _run_of(results, run_id)
    out_dir = output or lab_dir / "reports" / run.run_id
    if point is not None:
        from pgcachelab.report.point_series import (
            SERIES_METRICS,
            chosen_measurement,
            point_series_plot,
        )

        measurements = results.measurements(run.run_id, SERIES_METRICS)
        measurement = chosen_measurement(measurements, point, repetition)
        labels = {p.point_index: p.label for p in results.points(run.run_id)}
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = point_series_plot(measurement, labels.get(point, str(point)), out_dir)
        typer.echo(str(paths[0].resolve()))
        return
    if repetition is not None:
        raise UserError("--repetition: only with --point", "add --point N (see `show`)")
    from pgcachelab.report.build import build_report

    html = build_report(results, run.run_id, out_dir)
    typer.echo(str(html.resolve()))


inspect_cli.register(app)

pg_app = typer.Typer(help="PostgreSQL versions: install and list server binaries.")
app.add_typer(pg_app, name="pg")
app.add_typer(tpcc_app, name="tpcc")


@pg_app.command("install")
def pg_install(
    versions: Annotated[list[str], typer.Argument(help="Major versions, e.g. 9.6 10 16.")],
) -> None:
    """Fetch server binaries (zonky builds from Maven Central) into the lab's cache."""
    from pgcachelab.clusters import installs

    for version in versions:
        installs.normalise_major(version)  # every argument checked before any download
    for version in versions:
        installs.install(version, note=lambda line: typer.echo(line, err=True))


@pg_app.command("list")
def pg_list() -> None:
    """Every PostgreSQL server the lab can use, and where it came from."""
    from pgcachelab.clusters import installs
    from pgcachelab.report.tables import format_table

    rows = [[k.major, k.version, k.source, str(k.bin_dir)] for k in installs.installed()]
    typer.echo(format_table(["major", "version", "source", "bin directory (--pg-bin)"], rows))


from pgcachelab.cli import advise as advise_command  # noqa: E402  (commands in their own module)
from pgcachelab.cli import agent as agent_command  # noqa: E402
from pgcachelab.cli import compare as compare_command  # noqa: E402
from pgcachelab.cli import doctor as doctor_commands  # noqa: E402
from pgcachelab.cli import store as store_commands  # noqa: E402

doctor_commands.register(app)
advise_command.register(app, _existing_store, _run_of, StoreOption)
compare_command.register(app, _existing_store, _run_of, StoreOption)
store_commands.register(app)
agent_command.register(app, _location, _store, StoreOption)


def _exit_interrupted() -> None:
    from pgcachelab import interrupts

    print("pgcachelab: interrupted; the server was stopped", file=sys.stderr)
    sys.exit(128 + (interrupts.received() or signal.SIGINT))  # 130, or 143 for SIGTERM


def _environment_failure(error: BaseException) -> tuple[str, str] | None:
    """(message, hint) for an OSError, sqlite3 or psycopg error that reached the top."""
    import sqlite3

    import psycopg

    from pgcachelab.failures import decode_error_line, os_error_line, store_error_line

    if isinstance(error, OSError):
        return os_error_line(error)
    if isinstance(error, sqlite3.Error | psycopg.Error):
        return store_error_line(error, _opened_store_location)
    if isinstance(error, UnicodeDecodeError):
        return decode_error_line(error, None)
    return None


def _exit_with_line(message: str, hint: str | None, exit_code: int) -> None:
    from pgcachelab.printable import printable

    # A bad value is quoted in the message: a newline or an escape in it stays on this line
    print(f"pgcachelab: {printable(message)}", file=sys.stderr)
    if hint:
        print(f"hint: {printable(hint)}", file=sys.stderr)
    sys.exit(exit_code)


def main() -> None:
    from pgcachelab import interrupts

    interrupts.install()
    try:
        exit_code = app(standalone_mode=False)
    except UserError as error:
        _exit_with_line(error.message, error.hint, error.exit_code)
    except KeyboardInterrupt:
        _exit_interrupted()
    except Exception as error:  # click's usage errors, the environment's failures
        # typer >= 0.2x vendors click as typer._click and raises its exceptions; a separate
        # click may be installed beside it (import-linter brings one), so typer's comes first.
        try:
            from typer._click.exceptions import ClickException
        except ModuleNotFoundError:
            # an older typer's click: the same class under its own name
            from click.exceptions import ClickException  # type: ignore[assignment]

        if isinstance(error, ClickException):
            error.show()
            sys.exit(2)
        if isinstance(error, typer.Abort):  # older click's form of Ctrl-C
            _exit_interrupted()
        failure = _environment_failure(error)
        if failure is None:
            raise
        _exit_with_line(*failure, 2)
    # Without standalone mode typer turns Ctrl-C into Exit(130) and returns that code.
    if isinstance(exit_code, int) and exit_code:
        if exit_code == 130:
            _exit_interrupted()
        sys.exit(exit_code)


if __name__ == "__main__":
    main()
