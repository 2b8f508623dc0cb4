"""A TPC-C-like workload (seed 002): in-server loader, the five transactions as PL/pgSQL
functions or as statements sent from the client, pgbench scripts, consistency checks and
tpmC from pgbench's per-transaction log.

Not an audited TPC-C: terminals are pgbench clients, and the measurement interval is
whatever the run asks for (see differences()).
"""

_COMMON = (
    "terminals are pgbench clients; the pgbench scripts generate the terminal inputs",
    "each terminal deals the mix from clause 5.2.4.2's deck; a card whose transaction failed"
    " after its retries is dealt again",
    "Delivery runs in the terminal's transaction, not deferred to a queue",
    "random strings are substrings of a random pool, not independent characters",
    "an extra index on orders (warehouse, district, customer, order) serves Order-Status",
    "no ramp-up, steady-state or 2-hour measurement rules; no pricing, no ACID tests",
)
_BY_MODE = {
    "procedures": "transactions are server-side PL/pgSQL functions, one round trip each",
    "client": "transactions are sent statement by statement from pgbench scripts, which"
    " cannot loop: New-Order's lines and Delivery's districts are written out; a step of a"
    " transaction is one statement and what the script need not read is pipelined",
}
_BY_TERMINAL_TIMES = {
    "off": "no keying or think times: each terminal submits its next transaction at once",
    "spec": "keying and think times as clause 5.2.5; only the mean response time per"
    " transaction is reported (pgbench logs the whole cycle)",
}


def differences(mode: str = "procedures", terminal_times: str = "off") -> tuple[str, ...]:
    """How a run in `mode` with `terminal_times` differs from the specification."""
    return (_BY_TERMINAL_TIMES[terminal_times], _BY_MODE[mode], *_COMMON)


# The default run's differences, for reports that describe TPC-C runs in general.
DIFFERENCES = differences()
