"""Keying and think times (clause 5.2.5), as pgbench sleeps before a transaction. Pure.

A terminal's cycle is keying time (fixed per type), the transaction, think time (negative
exponential per clause 5.2.5.4, truncated at ten times its mean). With the specification's
times a terminal makes about 2.86 transactions a minute, so 10 terminals per warehouse give
at most 12.86 tpmC (clauses 4.2.2 and 5.2.5.7): "W warehouses, 10 terminals each".

Each script sleeps its think time and then its keying time before its statements: the same
cycle turned so that pgbench logs a transaction's end when its last statement is answered.
pgbench ends a -T run only between scripts and lets a sleeping terminal finish its sleep, so
the driver counts the transactions that ended within the duration (results.within).

pgbench counts a script's sleeps in the latency it logs. The response time is what is left
once the sleeps are taken out: pgbench's per-command report (-r) gives each sleep's mean
exactly, so the mean response time per type is exact; its percentiles cannot be had from
pgbench's log and are not reported.
"""

import math

from pgcachelab.workloads.pgbench_output import StatementLatency

# Clause 5.2.5.7: minimum keying time and mean think time, seconds.
KEYING_TIME_S = {
    "new_order": 18,
    "payment": 3,
    "order_status": 2,
    "delivery": 2,
    "stock_level": 2,
}
MEAN_THINK_TIME_S = {
    "new_order": 12,
    "payment": 12,
    "order_status": 10,
    "delivery": 5,
    "stock_level": 5,
}
# Clause 5.2.5.4: the think time distribution is truncated at ten times its mean.
THINK_TIME_CAP = 10
# r in (0, 1] for -ln(r): a millionth is the smallest draw, -ln of it 13.8 means: beyond the cap
UNIFORM_STEPS = 1_000_000
TERMINALS_PER_WAREHOUSE = 10


def with_terminal_times(name: str, script: str) -> str:
    """`script` after a think time and the keying time of `name`."""
    keying_ms = KEYING_TIME_S[name] * 1000
    mean_ms = MEAN_THINK_TIME_S[name] * 1000
    # Named per transaction: the run's one script (deck.py) holds all five, and each type's
    # sleeps are told apart in pgbench's per-command report by their variables' names.
    think = (
        f"\\set think_ms_{name} int(least(-ln(random(1, {UNIFORM_STEPS}) / {UNIFORM_STEPS}.0)"
        f" * {mean_ms}, {THINK_TIME_CAP * mean_ms}))"
    )
    return (
        f"{think}\n\\sleep :think_ms_{name} ms\n\\set keying_ms_{name} {keying_ms}\n"
        f"\\sleep :keying_ms_{name} ms\n{script}"
    )


def mean_cycle_s(weights: dict[str, int]) -> float:
    """A terminal's mean time per transaction under the mix (keying + think, not the work)."""
    total = sum(weights.values())
    return sum(
        weight * (KEYING_TIME_S[name] + MEAN_THINK_TIME_S[name]) / total
        for name, weight in weights.items()
    )


def too_short_for_a_new_order(weights: dict[str, int], duration_s: float) -> str | None:
    """Why a timed run of `duration_s` with the specification's times cannot give a tpmC, or
    None: a New-Order ends no sooner than its keying time, so a shorter run completes none and
    its tpmC of 0 would describe the sleeps, not the server."""
    keying_s = KEYING_TIME_S["new_order"]
    if weights.get("new_order", 0) <= 0 or duration_s >= keying_s:
        return None
    return (
        f"shorter than one New-Order's keying time ({keying_s} s, clause 5.2.5.7), so no"
        " New-Order could complete and tpmC would be 0"
    )


def suggested_duration_s(weights: dict[str, int], cycles: int = 10) -> int:
    """Whole minutes for each terminal to go through `cycles` mean cycles of the mix."""
    return max(60, math.ceil(cycles * mean_cycle_s(weights) / 60) * 60)


def mean_sleep_ms(statements: list[StatementLatency], name: str) -> float:
    """The mean time a transaction `name` sleeps: its \\sleep commands, each run once per
    transaction of that type, from pgbench's per-command report."""
    sleeps = [
        s.latency_ms
        for s in statements
        if s.command.lstrip().startswith("\\sleep") and s.command.rstrip().endswith(f"_{name} ms")
    ]
    return sum(sleeps) if sleeps else math.nan
