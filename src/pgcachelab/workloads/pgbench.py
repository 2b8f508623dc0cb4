"""Running pgbench, the load engine: building its command lines (pure) and calling it."""

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.clusters.client import PgbenchTarget
from pgcachelab.errors import PointError
from pgcachelab.workloads.parameters import PgbenchParameters
from pgcachelab.workloads.pgbench_output import (
    PgbenchOutputError,
    PgbenchResult,
    parse_pgbench_output,
)

BUILTIN_SCRIPTS = {
    "select-only": "select-only",
    "simple-update": "simple-update",
    "tpcb-like": "tpcb-like",
}


class PgbenchError(PointError):
    """pgbench failed; the message is the reason recorded for the point."""


def default_init_steps(server_major: int) -> str:
    """Server-side generation ('G') exists from PostgreSQL 13; older servers get 'g'."""
    return "dtGvp" if server_major >= 13 else "dtgvp"


def init_args(scale: int, init_steps: str | None, server_major: int) -> list[str]:
    steps = init_steps or default_init_steps(server_major)
    return ["-i", "-s", str(scale), "-I", steps]


def run_args(
    parameters: PgbenchParameters, duration_s: float | None = None, with_reports: bool = True
) -> list:
    """pgbench options for one measurement; `duration_s` overrides (warm-up runs)."""
    args = []
    if parameters.mode == "custom":
        for script in parameters.scripts:
            args += ["-f", f"{script.file}@{script.weight}"]
        args.append("-n")  # custom scripts need not have pgbench's tables to vacuum
        if not parameters.brings_own_data:
            # The lab built pgbench's tables at this scale; pgbench detects it for its builtin
            # scripts only, and a custom script's :scale would otherwise be 1.
            args += ["-s", str(parameters.scale)]
    else:
        args += ["-b", BUILTIN_SCRIPTS[parameters.mode]]
    clients = parameters.clients
    threads = threads_for(parameters.threads, clients)
    args += ["-c", str(clients), "-j", str(threads)]
    if duration_s is not None:
        args += ["-T", str(int(duration_s))]
    elif parameters.transactions:
        args += ["-t", str(parameters.transactions)]
    else:
        args += ["-T", str(int(parameters.duration))]
    if parameters.rate:
        args += ["-R", str(parameters.rate)]
    if parameters.latency_limit:
        args += ["--latency-limit", f"{parameters.latency_limit:g}"]
    if parameters.protocol != "simple":
        args += ["-M", parameters.protocol]
    if parameters.max_tries:
        args += ["--max-tries", str(parameters.max_tries)]
    if with_reports:
        if parameters.progress:
            args += ["-P", str(parameters.progress)]
            if parameters.progress_timestamp:
                args.append("--progress-timestamp")  # Unix times: to line up with other clocks
        if parameters.per_statement:
            args.append("-r")
    return args


def threads_for(threads: int | str, clients: int) -> int:
    """pgbench refuses more threads than clients; "auto" is one per client up to the cores."""
    if threads == "auto":
        return max(1, min(clients, os.cpu_count() or 1))
    return min(int(threads), clients)


@dataclass
class PgbenchRun:
    args: list[str]
    output: str
    wall_s: float
    result: PgbenchResult


def run_pgbench(
    pgbench: Path,
    args: list[str],
    target: PgbenchTarget,
    on_line: Callable[[str], None] | None = None,
    timeout_s: float | None = None,
) -> PgbenchRun:
    """Run pgbench to the end, feeding each output line to `on_line`; parse what it printed."""
    command = [str(pgbench), *args, target.connection_string()]  # no secret: the environment's
    started = time.monotonic()
    lines = []
    with (
        target.child_environment() as env,
        subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        ) as process,
    ):
        assert process.stdout is not None  # stdout=PIPE
        for line in process.stdout:
            lines.append(line)
            if on_line:
                on_line(line)
            if timeout_s and time.monotonic() - started > timeout_s:
                process.kill()
        returncode = process.wait()
    wall_s = time.monotonic() - started
    output = "".join(lines)
    if returncode != 0:
        raise PgbenchError(f"pgbench exited with {returncode}: {failure_line(output)}")
    try:
        result = parse_pgbench_output(output)
    except PgbenchOutputError as error:
        raise PgbenchError(str(error)) from None
    return PgbenchRun(args=args, output=output, wall_s=wall_s, result=result)


def run_pgbench_init(pgbench: Path, args: list[str], target: PgbenchTarget) -> tuple[str, float]:
    """`pgbench -i ...`; returns its output and wall time."""
    started = time.monotonic()
    with target.child_environment() as env:
        result = subprocess.run(
            [str(pgbench), *args, target.connection_string()],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
        )
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise PgbenchError(f"pgbench -i exited with {result.returncode}: {_last_line(output)}")
    return output, time.monotonic() - started


def failure_line(output: str) -> str:
    """Why pgbench stopped: its first server error (a client's abort names the command), not
    its closing "Run was aborted" line, which says only that something went wrong."""
    for line in output.splitlines():
        cause = line.strip()
        while cause.startswith("pgbench: error: "):
            cause = cause.removeprefix("pgbench: error: ")
        if "ERROR:" in cause or "FATAL:" in cause or "aborted in command" in cause:
            return " ".join(cause.split())
    return _last_line(output)


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"
