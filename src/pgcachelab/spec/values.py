"""What one spec value may be besides a workload's parameters (workloads/values.py: those,
and the helpers each check uses): each type here checks a value, converts it, and says why not.
A refusal is a PydanticCustomError whose context carries our sentence and its hint; errors.py
renders it as one line.
"""

import math

from pgcachelab.clusters.guc import setting_value_text
from pgcachelab.errors import UserError
from pgcachelab.machine import host_tunables
from pgcachelab.printable import has_control_characters
from pgcachelab.spec.ladder import memory_share
from pgcachelab.units import beyond_limits
from pgcachelab.workloads.values import checked, invalid, is_int, is_number, plain, refuse, version

# Repetitions of a point: each is a measurement the plan lists; 2**31 of them never finished.
MAX_REPETITIONS = 10_000


def _fraction(value) -> float:
    if not is_number(value) or not 0 < value < 1:
        raise invalid(
            "not a fraction between 0 and 1",
            "write the half-width relative to the median, e.g. 0.02 for ±2%",
        )
    return float(value)


def _repetitions(value) -> int | str:
    if value != "auto" and (not is_int(value) or not 1 <= value <= MAX_REPETITIONS):
        raise invalid(
            f'neither an integer from 1 to {MAX_REPETITIONS} nor "auto"',
            'use 1 or more, or "auto" with target_ci and max_repetitions',
        )
    return value


def _control(value) -> bool | str:
    """control = true | false | a version: the A/A control of a version sweep (issue 19)."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, str | int | float):
        raise invalid("not true, false or a version", "use true, or one of the swept versions")
    return version(value)


def setting_text(value) -> str:
    """A server setting's value as postgresql.conf text; checked against a server later."""
    if isinstance(value, dict | list):
        raise invalid("not a setting value", "use a string, number or bool")
    if isinstance(value, float) and not math.isfinite(value):
        # TOML writes nan and inf; no server setting takes them
        raise invalid("not a finite number", 'write the setting\'s value, e.g. 0.5 or "64MB"')
    text = setting_value_text(value)
    beyond = beyond_limits(text)
    if beyond:  # 400 digits were a float's infinity in the plan's sums (issue 48)
        raise invalid(beyond, 'sizes go up to 1024TB and durations up to 365d, e.g. "64MB"')
    if has_control_characters(text):
        # postgresql.conf holds one setting per line: the server would not start (issue 35)
        raise invalid(
            "a server setting cannot hold a newline or other control character",
            "remove it from the value",
        )
    if "%" in text and "memory" in text.lower():
        share = memory_share(text)
        if share is None or not 0 < share < 1:
            raise invalid(
                "not a share of memory", 'write e.g. "25% of memory" (more than 0, below 100)'
            )
    return text


def _store(value) -> str:
    """The spec's store, checked now; a password is refused: the spec text is stored."""
    from pgcachelab.store.location import STORE_HINT, parse_store

    if not isinstance(value, str):
        raise invalid("not a string", STORE_HINT)
    try:
        location = parse_store(value, "store")
    except UserError as error:
        raise plain(error.message.removeprefix("store: "), error.hint) from None
    if location.password_in_url():
        raise plain(
            f"a password in {location.masked()!r} would be stored with the run's spec",
            "leave it out of the URL and put it in PGPASSWORD or ~/.pgpass",
        )
    return value


def _step_name(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise plain("a step needs a name", 'e.g. name = "io"')
    return value


def steps_list(value) -> list:
    if not isinstance(value, list) or not value or not all(isinstance(s, dict) for s in value):
        raise plain(
            "not a list of steps", 'write [[ladder]] tables, each with name = "..." and its changes'
        )
    return value


def _host_settings(value) -> dict[str, str]:
    """[machine.host] or [ladder.host]: host settings as the text their files take.
    `vm.swappiness = 10` arrives as TOML's nested {"vm": {"swappiness": 10}}."""
    if not isinstance(value, dict):
        raise plain("must be a table", "write it as [ladder.host] with e.g. vm.swappiness = 10")
    converted = {}
    for name, item in host_tunables.flatten(value).items():
        if name not in host_tunables.TUNABLES:
            raise refuse(
                (name,),
                f'unknown host setting "{name}"',
                f"use one of {', '.join(host_tunables.TUNABLES)}",
            )
        try:
            converted[name] = host_tunables.convert(name, item)
        except host_tunables.HostValueError as error:
            raise invalid(error.why, error.hint, at=(name,), value=item) from None
    both = host_tunables.coupled(converted)
    if both:
        raise refuse(
            (both[1],),
            f"cannot be set with {both[0]}: the kernel zeroes one when the other is written",
            "keep one of them",
        )
    return converted


Fraction = checked(float, _fraction)
Repetitions = checked(int | str, _repetitions)
Control = checked(object, _control)
SettingText = checked(str, setting_text)
Store = checked(str, _store)
StepName = checked(str, _step_name)
HostTable = checked(dict, _host_settings)


def parse_inspect_method(value: str) -> tuple[str, str] | None:
    """ "extension/fast" -> ("extension", "fast"); "pg_buffercache" -> (.., "consistent");
    "none" -> None (no snapshot at all: the baseline of the overhead experiment)."""
    if value == "none":
        return None
    method, _, mode = value.partition("/")
    return method, mode or "consistent"
