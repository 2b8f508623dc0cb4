"""A TPC-C-like workload (seed 002): in-server loader, the five transactions as PL/pgSQL
functions, pgbench scripts, consistency checks and tpmC from pgbench's per-transaction log.

Not an audited TPC-C: no keying or think times, stored procedures, terminals are pgbench
clients, and the measurement interval is whatever the run asks for (see DIFFERENCES).
"""

DIFFERENCES = (
    "no keying or think times: each terminal submits its next transaction at once",
    "transactions are server-side PL/pgSQL functions, one round trip each",
    "terminals are pgbench clients; the pgbench scripts generate the terminal inputs",
    "Delivery runs in the terminal's transaction, not deferred to a queue",
    "random strings are substrings of a random pool, not independent characters",
    "an extra index on orders (warehouse, district, customer, order) serves Order-Status",
    "no ramp-up, steady-state or 2-hour measurement rules; no pricing, no ACID tests",
)
