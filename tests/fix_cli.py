"""The CLI tier: `pgcachelab ARGS` through its real entry point, as a new process or a fork.

The CLI gets a server-reachable directory as TMPDIR (`lab_tmp`), so the work directories of the
clusters it creates land there and are reaped when the test ends.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from fix_processes import server_reachable_dir

SPECS_DIR = Path(__file__).parent / "data" / "specs"
CLI_TIMEOUT_S = 300  # a safety net against a hung test, not an expectation of speed
# Environment variables that would change what the CLI does or where it connects.
_CLI_ENV_DROP = ("PGCACHELAB_DIR", "PGCACHELAB_STORE", "PGHOST", "PGPORT", "PGUSER",
                 "PGDATABASE", "PGOPTIONS", "PGPASSWORD", "PGSERVICE", "COLUMNS")  # fmt: skip


def cli_command(*args) -> list[str]:
    return [sys.executable, "-m", "pgcachelab.cli.main", *map(str, args)]


def cli_env(tmpdir: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _CLI_ENV_DROP}
    env["NO_COLOR"] = "1"
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


# What the reaper says when a lab command cleans up after another lab that was killed on this
# machine (a fault test, or another suite sharing it): not part of the command's own answer.
# (the reaper marks a killed lab's run in a store it finds: experiments/reaping.py KILLED)
REAPER_LINE = re.compile(r"a killed lab|^marked run \S+ interrupted: the lab process was killed$")


def own_lines(stderr: str) -> list[str]:
    """The command's stderr lines, without the reaper's notes about other labs' leftovers."""
    return [line for line in stderr.splitlines() if not REAPER_LINE.search(line)]


def run_cli(*args, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    """Run `pgcachelab ARGS` through its real entry point and wait for it: in a forked child
    (`run_cli_forked`) when the test runs no other thread, else in a new interpreter. An
    interpreter start and the lab's imports took 1-1.5 s of each of the suite's ~110 calls."""
    if threading.active_count() == 1:  # a fork copies only this thread, and no lock it holds
        return run_cli_forked(*args, tmpdir=tmpdir)
    return subprocess.run(
        cli_command(*args),
        env=cli_env(tmpdir),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def _as_a_new_interpreter(tmpdir: Path | None) -> None:
    """In the forked child: what a new `pgcachelab` process would start with, not the test's.
    Its environment and TMPDIR, no stdin, Python's default warning filters (not pytest's
    "error"), no logging handler of pytest's."""
    environment = cli_env(tmpdir)  # before the clear: it starts from ours
    os.environ.clear()
    os.environ.update(environment)
    tempfile.tempdir = None  # TMPDIR is read again, as a new process would
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    warnings.resetwarnings()  # then `python -W` nothing's filters, the last added first
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    if "logging" in sys.modules:
        import logging

        logging.root.handlers.clear()
        logging.root.setLevel(logging.WARNING)


def run_cli_forked(*args, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    """`pgcachelab ARGS` through its entry point (main) in a forked child of the test process:
    a real process with its own exit code, stderr and environment, without an interpreter start
    and the imports per case (the bad-input tables have about a hundred: 1.5 s each otherwise).
    """
    from pgcachelab.cli import main as cli_main
    from pgcachelab.experiments import runner  # noqa: F401  (imported once, before the forks)
    from pgcachelab.report import build  # noqa: F401  (matplotlib: ~1 s of every report)

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        child = os.fork()
        if child == 0:  # pragma: no cover (reports through its exit code and files)
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                _as_a_new_interpreter(tmpdir)
                sys.argv = ["pgcachelab", *map(str, args)]
                try:
                    cli_main.main()
                    code = 0
                except SystemExit as done:
                    code = done.code if isinstance(done.code, int) else (0 if done.code is None
                                                                         else 1)  # fmt: skip
                except BaseException:  # noqa: BLE001 (a traceback, as the real command prints)
                    import traceback

                    traceback.print_exc()
                    code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        status = _wait_or_kill(child, args)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["pgcachelab", *map(str, args)], os.waitstatus_to_exitcode(status),
            out.read().decode(errors="replace"), err.read().decode(errors="replace"),
        )  # fmt: skip


def _wait_or_kill(child: int, args) -> int:
    """The child's wait status; killed after CLI_TIMEOUT_S, as subprocess.run's timeout does."""
    deadline = time.monotonic() + CLI_TIMEOUT_S
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            raise subprocess.TimeoutExpired(["pgcachelab", *map(str, args)], CLI_TIMEOUT_S)
        time.sleep(0.02)


@pytest.fixture
def lab_tmp() -> Iterator[Path]:
    """TMPDIR for the lab: where the clusters it creates get their work directories."""
    with server_reachable_dir() as base:
        yield base
