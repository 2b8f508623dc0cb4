"""pgbench's per-transaction log (--log): one latency per transaction. Pure functions.

Each line is `client_id transaction_no time script_no time_epoch time_us [schedule_lag]
[retries]`, `time` being the transaction's latency in microseconds; a failed transaction (15+)
writes `failed` or `serialization`/`deadlock`/`other` in that column instead of a number, and one
skipped under -R with --latency-limit `skipped`. The schedule lag is there only with -R (which
the caller knows: the column count alone cannot tell it from the retries).
"""

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class LoggedTransaction:
    client: int
    number: int
    latency_us: int | None  # None for a failed transaction
    script: int
    epoch_s: int
    epoch_us: int
    lag_us: int | None = None  # -R only
    skipped: bool = False  # -R with --latency-limit: never sent, too late already

    @property
    def latency_ms(self) -> float | None:
        return None if self.latency_us is None else self.latency_us / 1000.0


def log_fields(text: str) -> Iterator[list[str]]:
    """The fields of each line of a log (blank lines skipped); a short line is refused."""
    for line_number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 6:
            raise ValueError(f"line {line_number} of a pgbench log has {len(fields)} fields")
        yield fields


def parse_transaction_log(text: str, with_lag: bool = False) -> list[LoggedTransaction]:
    transactions = []
    for fields in log_fields(text):
        latency = int(fields[2]) if fields[2].isdigit() else None
        lag = int(fields[6]) if with_lag and len(fields) > 6 and fields[6].isdigit() else None
        transactions.append(
            LoggedTransaction(
                client=int(fields[0]),
                number=int(fields[1]),
                latency_us=latency,
                script=int(fields[3]),
                epoch_s=int(fields[4]),
                epoch_us=int(fields[5]),
                lag_us=lag,
                skipped=fields[2] == "skipped",
            )
        )
    return transactions


def latencies_ms(logs: list[str]) -> list[float]:
    """Latencies of the successful transactions of every log file, in the order they ended."""
    transactions = [t for text in logs for t in parse_transaction_log(text)]
    transactions.sort(key=lambda t: (t.epoch_s, t.epoch_us))
    return [t.latency_ms for t in transactions if t.latency_ms is not None]
