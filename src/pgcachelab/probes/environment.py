"""The context of a run: machine, kernel, versions, commit. Collected once per run."""

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pgcachelab
from pgcachelab.machine.host_facts import memory_total_bytes, read_cpu_model


def _cpu_model() -> str | None:
    try:
        model = read_cpu_model()
    except OSError:
        model = None
    return model or platform.processor() or None


def _git_commit() -> str | None:
    source_dir = Path(pgcachelab.__file__).resolve().parent
    try:
        result = subprocess.run(
            ["git", "-C", str(source_dir), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def _tool_version(path: str) -> str | None:
    try:
        return subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return None


def host_facts() -> dict:
    """What tells one host's hardware and kernel from another's: an agent records them in the
    fleet's hosts table (issue 21); the run's environment has them too."""
    return {
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_total_bytes": memory_total_bytes(),
        "kernel": platform.release(),
    }


def collect_environment(server_version: str, pgbench_path: str, server_source: str) -> dict:
    return {
        "server_version": server_version,
        "server_source": server_source,
        "pgbench": pgbench_path,
        "pgbench_version": _tool_version(pgbench_path),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_total_bytes": memory_total_bytes(),
        "python": sys.version.split()[0],
        "lab_version": pgcachelab.__version__,
        "git_commit": _git_commit(),
        "hostname": platform.node(),
        "collected_at": time.time(),
    }
