"""The numbers a user gives the lab (CLI options, spec values), read one way and refused one way.

Python's int() and float() take more than a number: float() takes "nan", "inf", "infinity" and
"1e999" (infinity), both take "1_000" and other scripts' digits ("٣"), and str.isdigit() takes
"²", which int() then refuses. TOML itself writes nan and inf, and integers of any length. Each
of those went on to pgbench's C ints, time.sleep or a float conversion and failed there, or was
measured (issue 48). Here a number is ASCII digits with an optional minus sign and fraction (a
size or a duration also a unit: units.py), finite, and within the range its option allows;
anything else is a NumberError, a UserError (one line, exit 2) that names the option or key,
quotes the value and says the range.
"""

import math
import re

from pgcachelab.errors import UserError
from pgcachelab.units import MAX_BYTES, MAX_SECONDS, exact_amount_text, parse_bytes, parse_seconds

# pgbench reads its counts as C ints (option_parse_int(..., 1, INT_MAX)).
INT_MAX = 2**31 - 1
# A rate in transactions per second or minute: finite, and beyond any server (pgbench's -R
# turns it into a delay in microseconds).
MAX_RATE = 1e9

_WHOLE = re.compile(r"^\s*-?[0-9]+\s*$", re.ASCII)
_DECIMAL = re.compile(r"^\s*-?[0-9]+(?:\.[0-9]+)?\s*$", re.ASCII)
_MOST_DIGITS = 30


class NumberError(UserError):
    """A number refused: `why` it is not one the option takes, and `allowed`, its range, also
    apart (a spec's error line puts its key before them: spec/values.py)."""

    def __init__(self, name: str, value, why: str, allowed: str, example: str | None = None):
        self.name, self.value, self.why, self.allowed = name, value, why, allowed
        prefix = f"{name}: " if name else ""
        hint = f"{allowed}, e.g. {example}" if example else allowed
        super().__init__(f"{prefix}invalid value {value!r}: {why}", hint)


def _why(value, error: ValueError) -> str:
    """Why units.py refused `value`, in words that do not quote it again; what Python's float()
    would have taken named as what it is."""
    try:
        as_float = float(value)
    except (TypeError, ValueError, OverflowError):
        as_float = 0.0
    if math.isnan(as_float):
        return "not a number (NaN)"
    if math.isinf(as_float) and not _DECIMAL.match(str(value)):
        return "infinite"  # "inf", "infinity", "1e999"
    return str(error).removesuffix(f": {value!r}")


def _not_ascii(value) -> bool:
    return isinstance(value, str) and not value.isascii()


NOT_ASCII = "not ASCII: write its digits as 0-9"


def whole_number(
    value: str | int, name: str, low: int, high: int = INT_MAX, example: str | None = None
) -> int:
    """An integer from `low` to `high`: ASCII digits (an optional minus sign), or an int."""
    allowed = f"a whole number from {low} to {high}"
    if isinstance(value, str) and _WHOLE.match(value):
        text = value.strip()
        # far beyond any low or high here; int() itself refuses a text of over 4300 digits
        if len(text.lstrip("-").lstrip("0")) > _MOST_DIGITS:
            why = f"below {low}" if text.startswith("-") else f"above {high}"
            raise NumberError(name, value, why, allowed, example)
        number = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        why = NOT_ASCII if _not_ascii(value) else _why(value, ValueError("not a whole number"))
        raise NumberError(name, value, why, allowed, example)
    if number < low:
        raise NumberError(name, value, f"below {low}", allowed, example)
    if number > high:
        raise NumberError(name, value, f"above {high}", allowed, example)
    return number


def _number_text(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.0f}"


def number(
    value: str | float,
    name: str,
    low: float,
    high: float,
    *,
    above: bool = False,
    example: str | None = None,
) -> float:
    """A finite number from `low` (excluded when `above`) to `high`: ASCII digits with an
    optional minus sign and fraction, or an int or float that is not NaN or infinite."""
    allowed = (
        f"a number above {_number_text(low)}, at most {_number_text(high)}"
        if above
        else f"a number from {_number_text(low)} to {_number_text(high)}"
    )
    if isinstance(value, str) and _DECIMAL.match(value):
        parsed = float(value)  # 400 digits are infinity here: above any high
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            raise NumberError(name, value, "not a number (NaN)", allowed, example)
        if isinstance(value, float) and math.isinf(value):
            raise NumberError(name, value, "infinite", allowed, example)
        parsed = value  # an int is compared as it is: a long one never becomes a float
    else:
        why = NOT_ASCII if _not_ascii(value) else _why(value, ValueError("not a number"))
        raise NumberError(name, value, why, allowed, example)
    if parsed < low or (above and parsed == low):
        why = f"not above {_number_text(low)}" if above else f"below {_number_text(low)}"
        raise NumberError(name, value, why, allowed, example)
    if parsed > high:
        raise NumberError(name, value, f"above {_number_text(high)}", allowed, example)
    return float(parsed)


def _bytes_text(amount: int) -> str:
    return exact_amount_text(amount, "B") or f"{amount}B"


def size(
    value: str | int,
    name: str,
    low: int,
    high: int = MAX_BYTES,
    example: str | None = None,
    default_unit: str = "B",
) -> int:
    """A memory amount ("64MB", "1GiB", or an int in `default_unit`) in bytes, from `low` to
    `high`."""
    allowed = f"a size from {_bytes_text(low)} to {_bytes_text(high)}"
    if _not_ascii(value):
        raise NumberError(name, value, NOT_ASCII, allowed, example)
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise NumberError(name, value, "not a size", allowed, example)
    try:
        amount = parse_bytes(value, default_unit, high)
    except ValueError as error:
        raise NumberError(name, value, _why(value, error), allowed, example) from None
    if amount < low:
        raise NumberError(name, value, f"below {_bytes_text(low)}", allowed, example)
    return amount


def _seconds_text(seconds: float) -> str:
    return exact_amount_text(seconds, "s") or f"{seconds:g}s"


def duration(
    value: str | float,
    name: str,
    low: float,
    high: float = MAX_SECONDS,
    *,
    whole: bool = False,
    example: str | None = None,
) -> float:
    """A duration ("20s", "2min", or a number of seconds) in seconds, from `low` to `high`;
    `whole`: a whole number of seconds."""
    what = "a whole number of seconds" if whole else "a duration"
    allowed = f"{what} from {_seconds_text(low)} to {_seconds_text(high)}"
    if _not_ascii(value):
        raise NumberError(name, value, NOT_ASCII, allowed, example)
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise NumberError(name, value, "not a duration", allowed, example)
    try:
        seconds = parse_seconds(value, "s", high)
    except ValueError as error:
        raise NumberError(name, value, _why(value, error), allowed, example) from None
    if whole and seconds != int(seconds):
        raise NumberError(name, value, "not a whole number of seconds", allowed, example)
    if seconds < low:
        raise NumberError(name, value, f"below {_seconds_text(low)}", allowed, example)
    return seconds
