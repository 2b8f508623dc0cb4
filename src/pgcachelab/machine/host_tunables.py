"""The host (OS) settings a rung may set (seed 002's OS rung): each one's file, the values it
takes, how its file reads, and what to write to put the host back. Pure: no file is read or
written here; machine/host_settings.py does that.

A spec names them as the seed's sysctl names (`vm.swappiness`) or by what they are
(`transparent_hugepage`, `readahead`, `io_scheduler`); values are checked here, once, for the
spec (spec/values.py) and converted to the text their file takes.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.units import MAX_BYTES, parse_bytes

THP_DIR = "/sys/kernel/mm/transparent_hugepage"
THP_ENABLED = ("always", "madvise", "never")
THP_DEFRAG = ("always", "defer", "defer+madvise", "madvise", "never")
READAHEAD = "readahead"
IO_SCHEDULER = "io_scheduler"
# The kernel's floors (mm/page-writeback.c): dirty_bytes takes at least two pages,
# dirty_background_bytes at least one byte; 0 is refused, as "use the ratio instead" is written
# by setting the ratio.
DIRTY_BYTES_MIN = 2 * 4096
SECTOR_BYTES = 512  # blockdev --setra counts 512-byte sectors
ULONG_MAX = 2**64 - 1  # what a sysctl of the kernel's unsigned long takes at most
# The kernel's elevator names (mq-deadline, bfq, kyber, none; before 5.0 deadline, cfq, noop)
SCHEDULER_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}", re.ASCII | re.IGNORECASE)


class HostValueError(ValueError):
    """A spec value a host setting cannot take: why, and the hint to fix it."""

    def __init__(self, why: str, hint: str):
        super().__init__(why)
        self.why, self.hint = why, hint


def bracketed_choice(text: str) -> str | None:
    """'always [madvise] never' -> 'madvise' (THP settings and the IO scheduler)."""
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    words = text.split()
    return words[0] if len(words) == 1 else None  # a single choice has no brackets


def listed_choices(text: str) -> list[str]:
    """'none [mq-deadline] kyber bfq' -> every choice the file offers, the selected one too."""
    return [word.strip("[]") for word in text.split()]


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _choice(choices: tuple[str, ...]) -> Callable[[object], str]:
    def convert(value) -> str:
        if value not in choices:
            raise HostValueError("not one of its values", f"use one of {', '.join(choices)}")
        return value

    return convert


def _scheduler(value) -> str:
    # The shape of a name here; which schedulers exist depends on the device and the kernel:
    # checked against the device's own list before the run (experiments/preflight.py). A
    # newline or a control character passed --plan and failed the run (issue 48).
    name = value.strip() if isinstance(value, str) else ""
    if not SCHEDULER_NAME.fullmatch(name):
        raise HostValueError(
            "not a scheduler name", 'write one name, e.g. "mq-deadline" or "none" (no spaces)'
        )
    return name


def _integer(low: int, high: int | None, hint: str) -> Callable[[object], str]:
    def convert(value) -> str:
        if isinstance(value, bool):
            value = int(value)
        if not _is_int(value) or value < low or (high is not None and value > high):
            span = f"between {low} and {high}" if high is not None else f">= {low}"
            raise HostValueError(f"not an integer {span}", hint)
        return str(value)

    return convert


def _bytes(minimum: int, hint: str, maximum: int = MAX_BYTES) -> Callable[[object], str]:
    def convert(value) -> str:
        if not _is_int(value) and not isinstance(value, str):
            raise HostValueError("not a size", hint)
        try:
            amount = parse_bytes(value, "B", maximum)  # 400 digits: refused, not written
        except ValueError as error:
            raise HostValueError(str(error), hint) from None
        if amount < minimum:
            raise HostValueError(f"below the kernel's minimum of {minimum} bytes", hint)
        return str(amount)

    return convert


def _readahead(value) -> str:
    """A size ("8MB") or, as `blockdev --setra`, a number of 512-byte sectors; as kB."""
    hint = 'write a size such as "8MB", or sectors as blockdev --setra takes them (16384)'
    if _is_int(value):
        if value < 0:
            raise HostValueError("not a number of sectors >= 0", hint)
        if value > MAX_BYTES // SECTOR_BYTES:
            raise HostValueError(f"above {MAX_BYTES // SECTOR_BYTES} sectors (1024TB)", hint)
        amount = value * SECTOR_BYTES
    elif isinstance(value, str):
        try:
            amount = parse_bytes(value)
        except ValueError as error:
            raise HostValueError(str(error), hint) from None
    else:
        raise HostValueError("not a size", hint)
    if amount % 1024:
        raise HostValueError("not a whole number of kB", hint)
    return str(amount // 1024)


@dataclass(frozen=True)
class Tunable:
    name: str
    path: str | None  # None: the file of the device holding the data (found when a point runs)
    convert: Callable[[object], str]  # spec value -> the text the file takes
    choice_file: bool = False  # the file lists its choices and brackets the one in force
    pair: str | None = None  # the setting that writing this one zeroes (the kernel couples them)


def sysctl_path(name: str) -> str:
    """The file of a sysctl: "vm.swappiness" -> "/proc/sys/vm/swappiness"."""
    return "/proc/sys/" + name.replace(".", "/")


def _sysctl(name: str, convert, pair: str | None = None) -> Tunable:
    return Tunable(name, sysctl_path(name), convert, pair=pair)


_RATIO = _integer(0, 100, "a percentage of the reclaimable memory, 0 to 100")
TUNABLES = {
    t.name: t
    for t in (
        Tunable("transparent_hugepage", f"{THP_DIR}/enabled", _choice(THP_ENABLED), True),
        Tunable("transparent_hugepage_defrag", f"{THP_DIR}/defrag", _choice(THP_DEFRAG), True),
        Tunable(READAHEAD, None, _readahead),
        Tunable(IO_SCHEDULER, None, _scheduler, choice_file=True),
        _sysctl(
            "vm.dirty_background_bytes",
            _bytes(1, 'write a size such as "64MB" (or set vm.dirty_background_ratio)'),
            pair="vm.dirty_background_ratio",
        ),
        _sysctl(
            "vm.dirty_bytes",
            _bytes(DIRTY_BYTES_MIN, 'write a size such as "256MB" (or set vm.dirty_ratio)'),
            pair="vm.dirty_ratio",
        ),
        _sysctl("vm.dirty_background_ratio", _RATIO, pair="vm.dirty_background_bytes"),
        _sysctl("vm.dirty_ratio", _RATIO, pair="vm.dirty_bytes"),
        _sysctl(
            "vm.swappiness", _integer(0, 200, "0 to 200; the seed's database hosts use 1 to 10")
        ),
        _sysctl("kernel.numa_balancing", _integer(0, 1, "0 (off, as the seed sets it) or 1")),
        # the kernel's own default is near ULONG_MAX: a spec may write it back
        _sysctl("kernel.shmmax", _bytes(1, 'write a size such as "16GB"', ULONG_MAX)),
        _sysctl("kernel.shmall", _integer(1, ULONG_MAX, "a number of pages, e.g. 4194304")),
    )
}


def flatten(table: dict, prefix: str = "") -> dict:
    """TOML reads `vm.swappiness = 10` as {"vm": {"swappiness": 10}}: back to the sysctl name."""
    flat = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def convert(name: str, value) -> str:
    """The text `name`'s file takes for a spec `value`; raises KeyError for an unknown name and
    HostValueError for a value it cannot take."""
    return TUNABLES[name].convert(value)


def coupled(names) -> tuple[str, str] | None:
    """Two settings of `names` that the kernel couples (writing one zeroes the other)."""
    names = list(names)
    for name in names:
        pair = TUNABLES[name].pair
        if pair is not None and pair in names:
            return name, pair
    return None


def read_value(tunable: Tunable, text: str) -> str:
    """The value in force, from the file's text: the bracketed choice, or the number."""
    if tunable.choice_file:
        return bracketed_choice(text) or text.strip()
    return text.strip()


def same(now: str, wanted: str) -> bool:
    return now.split() == wanted.split()


def restore_writes(
    tunable: Tunable, path: str, original: str, pair_path: str | None, pair_original: str | None
) -> list[tuple[str, str]]:
    """What to write, in order, to put back the value a setting had before the lab wrote it.

    A coupled pair (vm.dirty_bytes and vm.dirty_ratio; the background ones) is restored by
    writing the member that was non-zero: the kernel zeroes the other as it did before, and
    writing 0 to a *_bytes file is refused anyway. Both zero cannot happen; the ratio is put
    back then."""
    if tunable.pair is None or pair_path is None or pair_original is None:
        return [(path, original)]
    members = {tunable.name: (path, original), tunable.pair: (pair_path, pair_original)}
    bytes_name = next(name for name in members if name.endswith("_bytes"))
    ratio_name = next(name for name in members if name.endswith("_ratio"))
    bytes_path, bytes_value = members[bytes_name]
    if bytes_value.strip() not in ("", "0"):
        return [(bytes_path, bytes_value)]
    return [members[ratio_name]]


def choice_refusal(wanted: str, file_text: str, offered_by: str = "the device") -> str | None:
    """Why a choice file (a device's scheduler, THP's) cannot take `wanted` (None when it
    lists it): which schedulers and THP modes exist depends on the kernel and the device."""
    choices = listed_choices(file_text)
    if wanted in choices:
        return None
    said = f"{offered_by} offers {', '.join(choices) or 'no choice'}, not {wanted}"
    if f"mq-{wanted}" in choices:  # the seed's "deadline" on a multi-queue kernel (5.0+)
        said += f" (mq-{wanted} is its multi-queue successor)"
    return said


def queue_dir_of(device_dir: str, is_partition: bool) -> str:
    """The queue/ of a block device's sysfs directory: a partition's is its parent disk's."""
    parent = device_dir.rsplit("/", 1)[0] if is_partition else device_dir
    return f"{parent}/queue"
