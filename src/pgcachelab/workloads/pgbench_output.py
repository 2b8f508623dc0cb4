"""Parse the text pgbench prints (stdout and stderr together) into plain values.

Pure functions only: running pgbench is someone else's job. The patterns follow the formats
of pgbench 9.6 to 18; the tests read real outputs of pgbench 15 and 18 captured by
tests/data/pgbench/capture.sh, so the older formats are covered only by reading pgbench's
source.

Every line is matched on its own, so progress and error lines (stderr) may land anywhere among
the summary lines (stdout). Only the per-script blocks and the statement latency tables depend
on the lines before them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "InitResult",
    "PgbenchOutputError",
    "PgbenchResult",
    "ProgressSample",
    "ScriptResult",
    "StatementLatency",
    "parse_pgbench_init_output",
    "parse_pgbench_output",
    "parse_progress_line",
]

# pgbench prints NaN/Infinity through PostgreSQL's snprintf (and "-nan" through libc's before
# PostgreSQL 12), e.g. when an interval or a script saw no transaction.
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+|(?i:nan|inf(?:inity)?))"
_INT = r"\d+"

_PROGRESS_RE = re.compile(rf"^progress: (?P<elapsed>{_NUM}) s, (?P<tps>{_NUM}) tps(?P<rest>.*)$")
# The optional parts of a progress line depend on the version and on -R, -L and --max-tries,
# so each is looked for on its own rather than in one fixed sequence.
_PROGRESS_LAT_RE = re.compile(rf"\blat (?P<avg>{_NUM}) ms stddev (?P<stddev>{_NUM})")
_PROGRESS_LAG_RE = re.compile(rf"\blag (?P<lag>{_NUM}) ms")
_PROGRESS_FAILED_RE = re.compile(rf", (?P<n>{_INT}) failed\b")
_PROGRESS_RETRIED_RE = re.compile(rf", (?P<n>{_INT}) retried\b")

_TRANSACTION_TYPE_RE = re.compile(r"^transaction type: (?P<v>.+)$")
_SCALE_RE = re.compile(rf"^scaling factor: (?P<v>{_INT})$")
_QUERY_MODE_RE = re.compile(r"^query mode: (?P<v>\S+)$")
_CLIENTS_RE = re.compile(rf"^number of clients: (?P<v>{_INT})$")
_THREADS_RE = re.compile(rf"^number of threads: (?P<v>{_INT})$")
_MAX_TRIES_RE = re.compile(rf"^maximum number of tries: (?P<v>{_INT})$")
_DURATION_RE = re.compile(rf"^duration: (?P<v>{_NUM}) s$")
_PER_CLIENT_RE = re.compile(rf"^number of transactions per client: (?P<v>{_INT})$")
# "N/M" with -t (M = clients * transactions per client), plain "N" with -T.
_PROCESSED_RE = re.compile(
    rf"^number of transactions actually processed: (?P<v>{_INT})(?:/{_INT})?$"
)
_FAILED_RE = re.compile(rf"^number of failed transactions: (?P<v>{_INT})\b")
# --failures-detailed: serialization and deadlock (15+), other (with --continue-on-error).
_FAILURE_KIND_RE = re.compile(rf"^number of (?P<kind>\w+) failures: (?P<v>{_INT})\b")
_RETRIED_RE = re.compile(rf"^number of transactions retried: (?P<v>{_INT})\b")
_RETRIES_RE = re.compile(rf"^total number of retries: (?P<v>{_INT})$")
# With failures and no per-transaction measurement pgbench appends " (including failures)".
_LATENCY_AVG_RE = re.compile(rf"^latency average = (?P<v>{_NUM}) ms\b")
_LATENCY_STDDEV_RE = re.compile(rf"^latency stddev = (?P<v>{_NUM}) ms\b")
_CONNECTION_TIME_RE = re.compile(rf"^initial connection time = (?P<v>{_NUM}) ms$")
# One line since 14: "(without initial connection time)", or "(including reconnection
# times)" under -C. Before 14: both "(including connections establishing)" and
# "(excluding connections establishing)".
_TPS_RE = re.compile(rf"^tps = (?P<v>{_NUM}) \((?P<what>[^)]*)\)$")
_TPS_INCLUDING = "including connections establishing"

_SCRIPT_RE = re.compile(rf"^SQL script (?P<n>{_INT}): (?P<name>.*)$")
_SCRIPT_WEIGHT_RE = re.compile(rf"^ - weight: (?P<v>{_INT})\b")
# pgbench 15 (and older) puts the script's tps on this line. pgbench 18 does not, counts failed
# transactions in, and gives the successful count and tps on the "actually processed" line.
_SCRIPT_TRANSACTIONS_RE = re.compile(
    rf"^ - (?P<v>{_INT}) transactions \([^,)]*of total(?:, tps = (?P<tps>{_NUM}))?\)$"
)
_SCRIPT_PROCESSED_RE = re.compile(
    rf"^ - number of transactions actually processed: (?P<v>{_INT}) \(tps = (?P<tps>{_NUM})\)$"
)
_SCRIPT_FAILED_RE = re.compile(rf"^ - number of failed transactions: (?P<v>{_INT})\b")
_SCRIPT_LATENCY_AVG_RE = re.compile(rf"^ - latency average = (?P<v>{_NUM}) ms\b")
_SCRIPT_LATENCY_STDDEV_RE = re.compile(rf"^ - latency stddev = (?P<v>{_NUM}) ms\b")

# The header says which count columns the table rows carry: none before 15, failures from 15
# on, failures and retries when --max-tries is not 1.
_STATEMENTS_HEADER_RE = re.compile(
    r"^(?: - )?statement latencies in milliseconds(?P<columns>[^:]*):$"
)
# Rows are indented; the command text is the first line of the command, as written.
_STATEMENT_RES = {
    0: re.compile(rf"^\s+(?P<lat>{_NUM})\s+(?P<cmd>\S.*)$"),
    1: re.compile(rf"^\s+(?P<lat>{_NUM})\s+(?P<failures>{_INT})\s+(?P<cmd>\S.*)$"),
    2: re.compile(
        rf"^\s+(?P<lat>{_NUM})\s+(?P<failures>{_INT})\s+(?P<retries>{_INT})\s+(?P<cmd>\S.*)$"
    ),
}

_INIT_DONE_RE = re.compile(rf"^done in (?P<total>{_NUM}) s \((?P<steps>.*)\)\.$")
_INIT_STEP_RE = re.compile(rf"^(?P<name>.+?) (?P<v>{_NUM}) s$")


class PgbenchOutputError(ValueError):
    """The text holds no pgbench result summary, e.g. because pgbench failed."""


@dataclass(frozen=True)
class ProgressSample:
    """One --progress line; values cover the interval since the previous line."""

    # Seconds since the start, or a Unix timestamp under --progress-timestamp.
    elapsed_s: float
    tps: float
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    # Only with --rate.
    lag_ms: float | None
    # Only from pgbench 15 on.
    failed: int | None
    # Only when --max-tries is not 1.
    retried: int | None


@dataclass(frozen=True)
class StatementLatency:
    """One row of the -r/--report-per-command table."""

    latency_ms: float
    # Printed from pgbench 15 on.
    failures: int | None
    # Printed when --max-tries is not 1.
    retries: int | None
    command: str


@dataclass
class ScriptResult:
    """One script's share of the run.

    With several scripts these come from the "SQL script N:" blocks. With a single script and
    -r, pgbench prints no such block, so the one entry carries the run's totals.
    """

    name: str
    weight: int | None
    # Successful transactions, like PgbenchResult.transactions_processed.
    transactions: int | None
    tps: float | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    failed: int | None
    statements: list[StatementLatency] = field(default_factory=list)


@dataclass
class PgbenchResult:
    """The summary pgbench prints at the end of a benchmark run."""

    transaction_type: str | None
    scaling_factor: int | None
    query_mode: str | None
    clients: int | None
    threads: int | None
    max_tries: int | None
    duration_s: float | None
    transactions_per_client: int | None
    transactions_processed: int
    transactions_failed: int
    transactions_retried: int | None
    total_retries: int | None
    failures_by_kind: dict[str, int]
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    initial_connection_time_ms: float | None
    # Excludes connection set-up, except under -C where pgbench counts reconnections in.
    tps: float
    # Only printed before pgbench 14.
    tps_including_connections: float | None
    progress: list[ProgressSample]
    # Empty when pgbench printed no per-script block and no -r table.
    scripts: list[ScriptResult]
    statements: list[StatementLatency]


@dataclass(frozen=True)
class InitResult:
    """The timings pgbench -i prints on its last line (pgbench 13 and later)."""

    total_s: float
    steps_s: dict[str, float]


def parse_progress_line(line: str) -> ProgressSample | None:
    """Parse one "progress: ..." line; None for any other line."""
    m = _PROGRESS_RE.match(line.strip())
    if m is None:
        return None
    rest = m["rest"]
    lat = _PROGRESS_LAT_RE.search(rest)
    lag = _PROGRESS_LAG_RE.search(rest)
    failed = _PROGRESS_FAILED_RE.search(rest)
    retried = _PROGRESS_RETRIED_RE.search(rest)
    return ProgressSample(
        elapsed_s=float(m["elapsed"]),
        tps=float(m["tps"]),
        latency_avg_ms=float(lat["avg"]) if lat else None,
        latency_stddev_ms=float(lat["stddev"]) if lat else None,
        lag_ms=float(lag["lag"]) if lag else None,
        failed=int(failed["n"]) if failed else None,
        retried=int(retried["n"]) if retried else None,
    )


@dataclass
class _Summary:
    transaction_type: str | None = None
    scaling_factor: int | None = None
    query_mode: str | None = None
    clients: int | None = None
    threads: int | None = None
    max_tries: int | None = None
    duration_s: float | None = None
    transactions_per_client: int | None = None
    processed: int | None = None
    failed: int = 0
    retried: int | None = None
    retries: int | None = None
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    connection_time_ms: float | None = None
    tps: float | None = None
    tps_including: float | None = None


@dataclass
class _ScriptBuilder:
    name: str
    implicit: bool
    weight: int | None = None
    transactions: int | None = None
    tps: float | None = None
    # The "actually processed" line (pgbench 18) beats the "N transactions" line, which counts
    # failed transactions too there.
    processed_seen: bool = False
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    failed: int | None = None
    statements: list[StatementLatency] = field(default_factory=list)


def _statement_columns(header: str) -> int:
    if "retries" in header:
        return 2
    if "failures" in header:
        return 1
    return 0


def _lines(text: str) -> list[str]:
    # Not str.splitlines(): it also breaks on form feeds and other separators that may sit
    # inside a printed SQL command.
    return [line.rstrip("\r") for line in text.split("\n")]


def _last_line(text: str) -> str:
    for line in reversed(_lines(text)):
        if line.strip():
            return line.strip()
    return ""


def _missing(what: str, text: str) -> PgbenchOutputError:
    last = _last_line(text)
    if not last:
        return PgbenchOutputError(f"no {what} in pgbench output: the output is empty")
    return PgbenchOutputError(f"no {what} in pgbench output; its last line is: {last!r}")


def _parse_script_line(line: str, script: _ScriptBuilder) -> None:
    # Lines not listed (retries, skipped, failures by kind) have no field in ScriptResult.
    if m := _SCRIPT_WEIGHT_RE.match(line):
        script.weight = int(m["v"])
    elif m := _SCRIPT_PROCESSED_RE.match(line):
        script.transactions = int(m["v"])
        script.tps = float(m["tps"])
        script.processed_seen = True
    elif m := _SCRIPT_TRANSACTIONS_RE.match(line):
        if not script.processed_seen:
            script.transactions = int(m["v"])
            if m["tps"] is not None:
                script.tps = float(m["tps"])
    elif m := _SCRIPT_FAILED_RE.match(line):
        script.failed = int(m["v"])
    elif m := _SCRIPT_LATENCY_AVG_RE.match(line):
        script.latency_avg_ms = float(m["v"])
    elif m := _SCRIPT_LATENCY_STDDEV_RE.match(line):
        script.latency_stddev_ms = float(m["v"])


def _parse_summary_line(line: str, summary: _Summary) -> None:
    if m := _TRANSACTION_TYPE_RE.match(line):
        summary.transaction_type = m["v"]
    elif m := _SCALE_RE.match(line):
        summary.scaling_factor = int(m["v"])
    elif m := _QUERY_MODE_RE.match(line):
        summary.query_mode = m["v"]
    elif m := _CLIENTS_RE.match(line):
        summary.clients = int(m["v"])
    elif m := _THREADS_RE.match(line):
        summary.threads = int(m["v"])
    elif m := _MAX_TRIES_RE.match(line):
        summary.max_tries = int(m["v"])
    elif m := _DURATION_RE.match(line):
        summary.duration_s = float(m["v"])
    elif m := _PER_CLIENT_RE.match(line):
        summary.transactions_per_client = int(m["v"])
    elif m := _PROCESSED_RE.match(line):
        summary.processed = int(m["v"])
    elif m := _FAILED_RE.match(line):
        summary.failed = int(m["v"])
    elif m := _FAILURE_KIND_RE.match(line):
        summary.failures_by_kind[m["kind"]] = int(m["v"])
    elif m := _RETRIED_RE.match(line):
        summary.retried = int(m["v"])
    elif m := _RETRIES_RE.match(line):
        summary.retries = int(m["v"])
    elif m := _LATENCY_AVG_RE.match(line):
        summary.latency_avg_ms = float(m["v"])
    elif m := _LATENCY_STDDEV_RE.match(line):
        summary.latency_stddev_ms = float(m["v"])
    elif m := _CONNECTION_TIME_RE.match(line):
        summary.connection_time_ms = float(m["v"])
    elif m := _TPS_RE.match(line):
        if m["what"] == _TPS_INCLUDING:
            summary.tps_including = float(m["v"])
        else:
            summary.tps = float(m["v"])


def _script_result(script: _ScriptBuilder, summary: _Summary) -> ScriptResult:
    if script.implicit:
        # A lone script's statistics are the run's, so pgbench does not repeat them.
        return ScriptResult(
            name=summary.transaction_type or "",
            weight=None,
            transactions=summary.processed,
            tps=summary.tps,
            latency_avg_ms=summary.latency_avg_ms,
            latency_stddev_ms=summary.latency_stddev_ms,
            failed=summary.failed,
            statements=script.statements,
        )
    return ScriptResult(
        name=script.name,
        weight=script.weight,
        transactions=script.transactions,
        tps=script.tps,
        latency_avg_ms=script.latency_avg_ms,
        latency_stddev_ms=script.latency_stddev_ms,
        failed=script.failed,
        statements=script.statements,
    )


def parse_pgbench_output(text: str) -> PgbenchResult:
    """Parse the output of a pgbench benchmark run (not -i; see parse_pgbench_init_output).

    Raises PgbenchOutputError when the summary's transaction count or tps line is missing.
    A run that pgbench reports as aborted ("Run was aborted; the above results are
    incomplete.") still parses when it printed a summary; its exit status tells it apart.
    """
    summary = _Summary()
    progress: list[ProgressSample] = []
    scripts: list[_ScriptBuilder] = []
    script: _ScriptBuilder | None = None
    # Count columns of the statement table being read, None outside of one.
    table_columns: int | None = None

    for line in _lines(text):
        sample = parse_progress_line(line)
        if sample is not None:
            progress.append(sample)
            continue
        if table_columns is not None and script is not None:
            m = _STATEMENT_RES[table_columns].match(line)
            if m:
                script.statements.append(
                    StatementLatency(
                        latency_ms=float(m["lat"]),
                        failures=int(m["failures"]) if table_columns >= 1 else None,
                        retries=int(m["retries"]) if table_columns >= 2 else None,
                        command=m["cmd"],
                    )
                )
                continue
        table_columns = None

        if m := _STATEMENTS_HEADER_RE.match(line):
            if script is None:
                script = _ScriptBuilder(name="", implicit=True)
                scripts.append(script)
            table_columns = _statement_columns(m["columns"])
        elif m := _SCRIPT_RE.match(line):
            script = _ScriptBuilder(name=m["name"], implicit=False)
            scripts.append(script)
        elif line.startswith(" - "):
            if script is not None:
                _parse_script_line(line, script)
        else:
            _parse_summary_line(line, summary)

    if summary.processed is None:
        raise _missing("'number of transactions actually processed' line", text)
    if summary.tps is None:
        raise _missing("'tps = ...' line", text)

    results = [_script_result(s, summary) for s in scripts]
    return PgbenchResult(
        transaction_type=summary.transaction_type,
        scaling_factor=summary.scaling_factor,
        query_mode=summary.query_mode,
        clients=summary.clients,
        threads=summary.threads,
        max_tries=summary.max_tries,
        duration_s=summary.duration_s,
        transactions_per_client=summary.transactions_per_client,
        transactions_processed=summary.processed,
        transactions_failed=summary.failed,
        transactions_retried=summary.retried,
        total_retries=summary.retries,
        failures_by_kind=summary.failures_by_kind,
        latency_avg_ms=summary.latency_avg_ms,
        latency_stddev_ms=summary.latency_stddev_ms,
        initial_connection_time_ms=summary.connection_time_ms,
        tps=summary.tps,
        tps_including_connections=summary.tps_including,
        progress=progress,
        scripts=results,
        statements=[st for r in results for st in r.statements],
    )


def parse_pgbench_init_output(text: str) -> InitResult:
    """Parse the "done in X s (step Y s, ...)." line pgbench -i prints since pgbench 13."""
    for line in _lines(text):
        m = _INIT_DONE_RE.match(line.strip())
        if m is None:
            continue
        steps: dict[str, float] = {}
        for part in m["steps"].split(", "):
            step = _INIT_STEP_RE.match(part.strip())
            if step is None:
                raise PgbenchOutputError(
                    f"unrecognised step timing {part!r} in pgbench -i output line {line.strip()!r}"
                )
            steps[step["name"]] = float(step["v"])
        return InitResult(total_s=float(m["total"]), steps_s=steps)
    raise _missing("'done in ... s (...)' line", text)
