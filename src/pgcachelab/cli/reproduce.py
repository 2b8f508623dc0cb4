"""`pgcachelab reproduce [STUDY ...]`: every study's spec run on this machine, one after another,
then each published claim graded, on one page (experiments/reproduce.py and reproduce_page.py)."""

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
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
from pgcachelab.cli.stores import writable_store
from pgcachelab.errors import UserError


def reproduce(
    studies: Annotated[
        list[str] | None,
        typer.Argument(help="Studies to reproduce (default: all of them), e.g. big-cache tpcc."),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick/--full",
            help="Quick: each study's small spec (the emulated small machine where root). Full:"
            " the seed's design scaled to this host (hours).",
        ),
    ] = True,
    again: Annotated[
        bool,
        typer.Option(help="Measure again even where a finished run of the same spec is stored."),
    ] = False,
    lab_dir: LabDir = DEFAULT_LAB_DIR,
    store: StoreOption = None,
    format: Annotated[str | None, format_option("text or json (default text).")] = None,
    json_output: JsonOption = False,
) -> None:
    """Run each study's spec here and grade its article's claims: reproduced, contradicted, not
    shown beyond the noise, or cannot be shown here (with the reason)."""
    from pgcachelab.cli.progress import make_progress
    from pgcachelab.experiments.reproduce import FULL, QUICK
    from pgcachelab.exporters import json, text

    offered = {"text": text.reproduction, "json": json.reproduction}
    export = output_format("reproduce", format, json_output, offered, "text")
    chosen = _chosen_studies(studies or [])
    results_store = writable_store(lab_dir, store)
    progress = make_progress()
    mode = QUICK if quick else FULL
    # From here the command has started: a disk or store that fails is exit 1, as for `run`
    with _started(results_store.location):
        _reproduce(chosen, mode, again, lab_dir, results_store, progress, export)


@contextlib.contextmanager
def _started(store_location: str) -> Iterator[None]:
    """An environment failure once reproducing has begun (the disk filled while a study ran or
    its page was written, the store went away) as one line with exit 1 (RunFailed): every run
    it measured is stored and is reused or resumed by the same command."""
    import sqlite3

    import psycopg

    from pgcachelab.errors import RunFailed
    from pgcachelab.failures import os_error_line, store_error_line

    try:
        yield
    except OSError as error:
        message, hint = os_error_line(error)
    except (sqlite3.Error, psycopg.Error) as error:
        message, hint = store_error_line(error, store_location)
    else:
        return
    raise RunFailed(
        message, f"{hint}; then run the same reproduce again: finished runs are reused"
    ) from None


def _reproduce(chosen, mode, again, lab_dir, results_store, progress, export) -> None:
    from pgcachelab.experiments.reproduce import judge_across, reproduce_study
    from pgcachelab.experiments.reproduce_page import busy_warning, render_html
    from pgcachelab.studies.pages import build_report

    results = []
    for number, study in enumerate(chosen, 1):
        head = f"[{number}/{len(chosen)}] {study.name}"
        note(f"{head}: reproducing seed {study.seed}'s claims ({mode})")
        result = reproduce_study(study, mode, results_store, progress, again=again)
        if result.run_id is not None:
            try:
                build_report(results_store, result.run_id, lab_dir / "reports" / result.run_id)
            except OSError as error:  # the run is stored: its report can be built later
                note(f"{head}: the report of run {result.run_id} failed: {error}")
        outcomes = ", ".join(c.verdict.outcome for c in result.claims)
        took = f"{result.seconds / 60:.1f} min"
        note(f"{head}: {took}; " + (f"{result.reason}; " if result.reason else "") + outcomes)
        if busy := busy_warning(result):
            note(f"{head}: {busy}")
        results.append(result)
    judge_across(results, results_store, mode)
    machine = _machine(mode)
    reports = lab_dir / "reports"
    page = render_html(results, machine, results_store, reports, reports / "reproduce")
    export(results, machine, sys.stdout)
    note(f"the page: {page.resolve()}")
    failed = [r.environment_failure for r in results if r.environment_failure is not None]
    if failed:  # graded without that run's rest: the command did not finish what it started
        raise failed[0]


def _chosen_studies(names: list[str]):
    from pgcachelab.studies.registry import STUDIES

    known = [study for study in STUDIES if study.reproduction is not None]
    by_name = {study.name: study for study in known}
    for name in names:
        if name not in by_name:
            raise UserError(
                f"reproduce: unknown study {name!r}",
                "choose from " + ", ".join(by_name) + " (or none for all)",
            )
    return [study for study in known if not names or study.name in names]


def _machine(mode: str) -> dict:
    from pgcachelab.machine.host_facts import memory_total_bytes
    from pgcachelab.units import format_bytes

    memory = memory_total_bytes()
    return {
        "host": socket.gethostname(),
        "cores": os.cpu_count(),
        "memory": format_bytes(memory) if memory else "unknown",
        "root": os.geteuid() == 0,
        "mode": mode,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "commit": _commit(),
    }


def _commit() -> str:
    """The checkout's commit, when the lab runs from one."""
    checkout = Path(__file__).resolve().parents[3]
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "(no git)"
    return done.stdout.strip() if done.returncode == 0 else "(not a checkout)"
