"""The `pgcachelab` command: a thin layer that parses options and calls one module per job.

Each command is a plain function in a module of its own (cli/run.py, cli/doctor.py, ...) that
tests can call; COMMANDS below is the one place that names them, in the order `--help` lists
them. A group (`pg`, `tpcc`, ...) is a module with a HELP line and a function per subcommand.
"""

import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import typer

from pgcachelab.cli import (
    advise,
    agent,
    compare,
    doctor,
    export,
    extension,
    hugepages,
    inspect,
    kept,
    pg,
    queue,
    report,
    reproduce,
    run,
    runs,
    show,
    store,
    stores,
    tpcc,
)
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


@dataclass(frozen=True)
class Group:
    """Subcommands under one name: `pgcachelab NAME SUBCOMMAND`."""

    help: str
    commands: dict[str, Callable]


COMMANDS: dict[str, Callable | Group] = {
    "run": run.run,
    "runs": runs.list_runs,
    "kept": kept.kept,
    "show": show.show,
    "export": export.export,
    "report": report.report,
    "inspect": inspect.inspect,
    "extension": Group(extension.HELP, {"install": extension.install}),
    "pg": Group(pg.HELP, {"install": pg.install, "list": pg.list_installs}),
    "tpcc": Group(tpcc.HELP, {"load": tpcc.load, "run": tpcc.run}),
    "doctor": doctor.doctor,
    "hugepages": hugepages.hugepages,
    "advise": advise.advise,
    "compare": compare.compare,
    "reproduce": reproduce.reproduce,
    "store": Group(store.HELP, {"copy": store.copy}),
    "agent": agent.agent,
    "queue": Group(
        queue.HELP, {"status": queue.status, "cancel": queue.cancel, "retry": queue.retry}
    ),
}


def _register(app: typer.Typer, commands: Mapping[str, Callable | Group]) -> None:
    for name, command in commands.items():
        if isinstance(command, Group):
            group = typer.Typer(help=command.help)
            _register(group, command.commands)
            app.add_typer(group, name=name)
        else:
            app.command(name)(command)


_register(app, COMMANDS)


def _exit_interrupted() -> None:
    from pgcachelab import interrupts

    # said only when a server was running (an agent waiting for units, a report, runs none)
    stopped = "; the server was stopped" if interrupts.stopped_servers() else ""
    print(f"pgcachelab: interrupted{stopped}", file=sys.stderr)
    sys.exit(128 + (interrupts.received() or signal.SIGINT))  # 130, or 143 for SIGTERM


def _environment_failure(error: BaseException) -> tuple[str, str] | None:
    """(message, hint) for an OSError, sqlite3 or psycopg error that reached the top."""
    import sqlite3

    import psycopg

    from pgcachelab.failures import decode_error_line, os_error_line, store_error_line

    if isinstance(error, OSError):
        return os_error_line(error)
    if isinstance(error, sqlite3.Error | psycopg.Error):
        return store_error_line(error, stores.opened_location)
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
    try:
        _run_command()
    finally:
        # Every command makes the owned registry (machine/owned.py) to lock it: one that
        # leaves nothing owned leaves no directory either (/tmp/pgcachelab-owned-UID, issue 48).
        from pgcachelab.machine import owned

        owned.remove_if_empty()


def _run_command() -> None:
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
