"""TPC-C constants and the validation of run and load parameters. Pure functions."""

import random
from dataclasses import dataclass
from typing import Literal, get_args

from pgcachelab.errors import UserError
from pgcachelab.quantities import NumberError, duration, whole_number

# The order of the pgbench scripts, hence their number in pgbench's --log.
TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
DEFAULT_WEIGHTS = {
    "new_order": 45,
    "payment": 43,
    "order_status": 4,
    "delivery": 4,
    "stock_level": 4,
}
ITEMS = 100_000
DISTRICTS_PER_WAREHOUSE = 10
CUSTOMERS_PER_DISTRICT = 3_000
ORDERS_PER_DISTRICT = 3_000
NEW_ORDERS_PER_DISTRICT = 900
# Clause 2.4.1.5: an item id that no item has, for the 1% of New-Orders that roll back.
UNUSED_ITEM_ID = ITEMS + 1
MAX_WAREHOUSES = 10_000
BYTES_PER_WAREHOUSE = 100 * 1024**2  # about: what the help and hints tell the user
# Clause 2.1.6.1: C-Delta = |C-Run - C-Load| for C_LAST must lie in [65, 119], not 96 or 112.
C_LAST_DELTA_RANGE = (65, 119)
C_LAST_DELTA_EXCLUDED = (96, 112)
# How a terminal sends a transaction (issue 39): one call of a server-side function, or the
# transaction's statements one by one from the client.
Mode = Literal["procedures", "client"]
MODES: tuple[str, ...] = get_args(Mode)
# Keying and think times (clause 5.2.5): none, or the specification's.
TerminalTimes = Literal["off", "spec"]
TERMINAL_TIMES: tuple[str, ...] = get_args(TerminalTimes)
NO_LIMIT = "off"  # rate_tpm: no rate limit (a ladder step lifts one the steps before it set)


@dataclass(frozen=True)
class LoadConstants:
    """The NURand constants C recorded at load time (clause 2.1.6)."""

    c_last_load: int  # 0..255
    c_id: int  # 0..1023
    c_ol_i_id: int  # 0..8191


def choose_load_constants(rng: random.Random) -> LoadConstants:
    return LoadConstants(rng.randint(0, 255), rng.randint(0, 1023), rng.randint(0, 8191))


def valid_c_last_run(c_last_load: int, c_last_run: int) -> bool:
    delta = abs(c_last_run - c_last_load)
    low, high = C_LAST_DELTA_RANGE
    return 0 <= c_last_run <= 255 and low <= delta <= high and delta not in C_LAST_DELTA_EXCLUDED


def choose_c_last_run(c_last_load: int, rng: random.Random) -> int:
    """A C-Run for C_LAST that satisfies clause 2.1.6.1 against `c_last_load`."""
    candidates = [c for c in range(256) if valid_c_last_run(c_last_load, c)]
    return rng.choice(candidates)


def check_warehouses(warehouses: int, option: str = "--warehouses") -> int:
    if not 1 <= warehouses <= MAX_WAREHOUSES:
        raise UserError(
            f"{option}: invalid value {warehouses!r}: must be between 1 and {MAX_WAREHOUSES}",
            f"e.g. {option} 2 (each warehouse is about 100 MB)",
        )
    return warehouses


def parse_weights(text: str, option: str = "--weights") -> dict[str, int]:
    """'45,43,4,4,4' (New-Order, Payment, Order-Status, Delivery, Stock-Level) → weights.

    Whole percentages that sum to 100; a zero leaves a transaction out of the mix.
    """
    hint = f"give five whole percentages summing to 100, e.g. {option} 45,43,4,4,4"
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != len(TRANSACTIONS):
        raise UserError(f"{option}: invalid value {text!r}", hint)
    try:  # ASCII digits: isdigit() also takes "²", which int() refuses (issue 48)
        numbers = [whole_number(part, "", 0, 100) for part in parts]
    except NumberError as error:
        why = f"{error.value!r} is {error.why}"
        raise UserError(f"{option}: invalid value {text!r}: {why}", hint) from None
    weights = dict(zip(TRANSACTIONS, numbers, strict=True))
    if sum(weights.values()) != 100:
        raise UserError(
            f"{option}: invalid value {text!r}: the weights sum to {sum(weights.values())}", hint
        )
    return weights


def format_weights(weights: dict[str, int]) -> str:
    return ",".join(str(weights[name]) for name in TRANSACTIONS)


def expected_row_counts(warehouses: int) -> dict[str, int]:
    """Rows per table right after a load (clause 4.3.3.1); order_line varies (5..15 per order)."""
    districts = warehouses * DISTRICTS_PER_WAREHOUSE
    return {
        "warehouse": warehouses,
        "district": districts,
        "customer": districts * CUSTOMERS_PER_DISTRICT,
        "history": districts * CUSTOMERS_PER_DISTRICT,
        "orders": districts * ORDERS_PER_DISTRICT,
        "new_order": districts * NEW_ORDERS_PER_DISTRICT,
        "item": ITEMS,
        "stock": warehouses * ITEMS,
    }


def parse_duration_option(text: str, option: str = "--duration") -> int:
    """Whole seconds from "5s", "2min" or a bare number of seconds, as specs write durations:
    from 1 s to a year (quantities.duration)."""
    return int(duration(text, option, 1, whole=True, example=f"{option} 60s"))


def check_choice(value: str, choices: tuple[str, ...], option: str) -> str:
    """`value` if it is one of `choices`, else a UserError naming the option."""
    if value not in choices:
        raise UserError(
            f"{option}: invalid value {value!r}: must be {' or '.join(choices)}",
            f"e.g. {option} {choices[-1]}",
        )
    return value
