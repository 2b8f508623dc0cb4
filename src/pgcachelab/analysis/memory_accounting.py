"""Whether the huge pages on and off points of a run had machines of the same size. Pure.

A server's huge pages pool is memory the OS cache cannot use. On the emulated machine a point
that reserves huge pages has its memory cgroup capped at RAM − pool, and each measurement
records how (metrics machine.memory_accounting); before that the pool came on top of the cap,
so an on point had a bigger machine than its off twin, and their comparison was between two
machines.
"""

import dataclasses
from dataclasses import dataclass

from pgcachelab.store.metric_types import MemoryAccounting
from pgcachelab.units import format_bytes

# Examples of the on side in the line: the largest and smallest pools say the range.
MAX_EXAMPLES = 3


@dataclass(frozen=True)
class MeasuredMemory:
    """One measurement's memory accounting, with its point's huge pages and shared_buffers."""

    huge_pages: str
    shared_buffers_bytes: int
    # metrics machine.memory_accounting: ram_bytes (None: no limit, the host's RAM),
    # huge_pages_pool_bytes, cap_bytes, accounting, os_cache_room_bytes; None: stored before it
    accounting: MemoryAccounting | None


@dataclass(frozen=True)
class RamCheck:
    same: bool  # True: both sides had the same RAM; False: they did not, or it is not known
    text: str


def same_ram_check(measured: list[MeasuredMemory], memory_limited: bool) -> RamCheck | None:
    """Whether every point of an on/off sweep had the same RAM; None for a run that does not
    compare huge pages on and off. `memory_limited`: the run capped the server's memory."""
    if not {"on", "off"} <= {m.huge_pages for m in measured}:
        return None
    missing = [m for m in measured if m.accounting is None]
    if missing and not memory_limited:
        return RamCheck(
            True,
            "Both sides had the same RAM: the host's, with no memory limit; the on points' "
            "huge pages pool came out of it.",
        )
    if missing:
        share = (
            ""
            if len(missing) == len(measured)
            else f" ({len(missing)} of its {len(measured)} measurements)"
        )
        return RamCheck(
            False,
            f"This run was measured before huge pages were charged to the emulated RAM{share}: "
            "the on points had their pool on top of the memory limit; the on/off comparison is "
            "between machines of different sizes.",
        )
    rams = {_accounting(m).get("ram_bytes") for m in measured}
    if len(rams) > 1:
        return RamCheck(False, _differing(measured))
    broken = next((m for m in measured if not _split_holds(m)), None)
    if broken is not None:
        return RamCheck(False, _unsplit(broken))
    return RamCheck(True, _same(measured, rams.pop()))


PAGE = 4096  # a cgroup's limit is held in whole pages


def _accounting(m: MeasuredMemory) -> MemoryAccounting:
    """A measurement's accounting, once same_ram_check has returned for any without one."""
    assert m.accounting is not None
    return m.accounting


def _split_holds(m: MeasuredMemory) -> bool:
    """The point's cap is its RAM less its pool, as the kernel holds it; an off point has no
    pool. (No memory limit: nothing to split.)"""
    ram, pool = _accounting(m).get("ram_bytes"), _accounting(m).get("huge_pages_pool_bytes") or 0
    if ram is None:
        return True
    cap, read_back = _accounting(m).get("cap_bytes"), _accounting(m).get("cap_read_back_bytes")
    if (m.huge_pages != "on" and pool) or cap is None or cap + pool != ram:
        return False
    return read_back is None or 0 <= cap - read_back < PAGE


def _unsplit(m: MeasuredMemory) -> str:
    a = _accounting(m)
    return (
        f"The sides did not have the RAM they were said to have: at huge_pages={m.huge_pages}, "
        f"shared_buffers={format_bytes(m.shared_buffers_bytes)} the RAM was "
        f"{_bytes(a.get('ram_bytes'))}, the pool {_bytes(a.get('huge_pages_pool_bytes'))}, the "
        f"cap {_bytes(a.get('cap_bytes'))} (the kernel held "
        f"{_bytes(a.get('cap_read_back_bytes'))}). The on/off comparison is between machines "
        "of different sizes."
    )


def ladder_ram_check(measured: list[MeasuredMemory], memory_limited: bool) -> RamCheck | None:
    """A ladder's huge pages step against the steps before it, which reserve no pool (their
    huge_pages is the default "try", or off): whether every step had the same machine."""
    as_on_off = [
        dataclasses.replace(m, huge_pages="on" if m.huge_pages == "on" else "off") for m in measured
    ]
    check = same_ram_check(as_on_off, memory_limited)
    if check is None:
        return None
    return RamCheck(check.same, check.text.replace("Both sides", "Every step", 1))


def _ram(ram_bytes: int | None) -> str:
    return "the host's, with no memory limit" if ram_bytes is None else format_bytes(ram_bytes)


def _bytes(value: int | None) -> str:
    return "?" if value is None else format_bytes(value)


def _per_point(measured: list[MeasuredMemory], mode: str) -> dict[int, MemoryAccounting]:
    """shared_buffers -> its first measurement's accounting, largest shared_buffers first."""
    points: dict[int, MemoryAccounting] = {}
    for m in sorted(measured, key=lambda m: -m.shared_buffers_bytes):
        if m.huge_pages == mode:
            points.setdefault(m.shared_buffers_bytes, _accounting(m))
    return points


def _same(measured: list[MeasuredMemory], ram_bytes: int | None) -> str:
    on = []
    for size, accounting in _per_point(measured, "on").items():
        pool = f"pool {_bytes(accounting.get('huge_pages_pool_bytes'))}"
        cap = accounting.get("cap_bytes")
        on.append(f"{'' if cap is None else f'cap {_bytes(cap)} + '}{pool} at {format_bytes(size)}")
    caps = {a.get("cap_bytes") for a in _per_point(measured, "off").values()}
    caps_text = ", ".join(_bytes(cap) for cap in sorted(cap for cap in caps if cap is not None))
    off = f"cap {caps_text}, no pool" if caps_text else "no pool"
    # how an on point was charged: what the line is about
    on_points = (_accounting(m) for m in measured if m.huge_pages == "on")
    charged = next((a.get("accounting") for a in on_points), None)
    return (
        f"Both sides had the same RAM: {_ram(ram_bytes)} "
        f"(huge pages on: {_examples(on, '; ')}; off: {off})"
        + (f"; {charged}." if charged else ".")
    )


def _differing(measured: list[MeasuredMemory]) -> str:
    """Each RAM the points had, with the points that had it."""
    points: dict[int | None, dict[str, list[str]]] = {}
    for m in sorted(measured, key=lambda m: (m.huge_pages != "on", -m.shared_buffers_bytes)):
        by_mode = points.setdefault(_accounting(m).get("ram_bytes"), {})
        sizes = by_mode.setdefault(m.huge_pages, [])
        if format_bytes(m.shared_buffers_bytes) not in sizes:
            sizes.append(format_bytes(m.shared_buffers_bytes))
    rams = "; ".join(
        f"{_ram(ram)}: "
        + " and ".join(
            f"huge pages {mode} at {_examples(sizes)}" for mode, sizes in by_mode.items()
        )
        for ram, by_mode in points.items()
    )
    return (
        f"The sides did not have the same RAM: {rams}. The on/off comparison is between "
        "machines of different sizes."
    )


def _examples(texts: list[str], separator: str = ", ") -> str:
    """Up to MAX_EXAMPLES of them: the first ones, and the last after "…"."""
    if len(texts) > MAX_EXAMPLES:
        texts = [*texts[: MAX_EXAMPLES - 1], "…", texts[-1]]
    return separator.join(texts)
