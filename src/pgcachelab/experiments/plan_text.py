"""The plan of a run (experiments/plan_view.py) as text: a header, one line per measurement in
run order, then the total and what it leaves out."""

from pgcachelab.report.tables import format_table
from pgcachelab.units import format_bytes

HEADER = [
    "#",
    "point",
    "swept",
    "huge pages (est.)",
    "memory",
    "time (est.)",
    "built first (+)",
    "other settings in force",  # last: a ladder's can be long
]


def duration_text(seconds: float) -> str:
    """~45 s, ~12 min, ~3.4 h."""
    if seconds < 120:
        return f"~{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"


def plan_text(plan: dict) -> str:
    lines = [*_header(plan), "", format_table(HEADER, [_row(e) for e in plan["points"]]), ""]
    left_out = list(plan["not_estimated"])
    if plan["builds_not_estimated"]:
        left_out.append(f"the {len(plan['builds_not_estimated'])} builds (built first)")
    total = plan["estimated_seconds"]
    more = " + what it leaves out" if left_out else ""
    lines.append(f"total: {duration_text(total)} ({total:,.0f} s){more}; {plan['estimate']}")
    if left_out:
        lines.append("left out (+): " + "; ".join(left_out))
    lines += [f"note: {note}" for note in plan["notes"]]
    return "\n".join(lines)


def _header(plan: dict) -> list[str]:
    repetitions = plan["repetitions"]
    if repetitions == "auto":
        repetitions = f"auto (at most {plan['max_repetitions']})"
    memory = plan["memory"]
    ram = "no memory limit"
    if memory["ram_bytes"]:
        ram = f"RAM {format_bytes(memory['ram_bytes'])} ({memory['ram_source']})"
    return [
        f"plan of {plan['name']} ({plan['spec']}): {plan['workload']}, "
        f"{plan['point_count']} points, {plan['measurement_count']} measurements in order "
        f"{plan['order']} (seed {plan['seed']}); repetitions {repetitions}, warm-up "
        f"repetitions {plan['warmup_repetitions']}",
        f"machine: {ram}; huge pages of {format_bytes(memory['huge_page_size_bytes'])}",
    ]


def _row(entry: dict) -> list[str]:
    repetition = f"#{entry['repetition'] + 1}"
    if entry["warmup_repetition"]:
        repetition += " warm-up"
    time = duration_text(entry["estimated_seconds"]) + (" +" if entry["not_estimated"] else "")
    others = [f"{k}={v}" for k, v in entry["settings"].items() if k not in entry["swept"]]
    if entry.get("checkpoint_before_run") and "checkpoint" not in entry["swept"]:
        others.insert(0, "CHECKPOINT first")
    others += [
        f"host {k}={v}{' kB' if k == 'readahead' else ''}" for k, v in entry.get("host", {}).items()
    ]
    return [
        str(entry["position"]),
        f"{entry['point']} {repetition}",
        entry["label"],
        _huge_pages_text(entry),
        _memory_text(entry),
        time,
        "; ".join(entry["builds_not_estimated"]) or "-",
        ", ".join(others) or "-",
    ]


def _huge_pages_text(entry: dict) -> str:
    estimate = entry["huge_pages_estimate"]
    if estimate is None:
        return entry["settings"].get("huge_pages", "try (default)")
    size = format_bytes(estimate["page_size_bytes"])
    return f"~{estimate['pages']:,} x {size} = {format_bytes(estimate['bytes'])}"


def _memory_text(entry: dict) -> str:
    memory = entry["memory"]
    if memory["ram_bytes"] is None:
        return "no limit"
    if memory["cap_bytes"] is None:
        return f"fails: {format_bytes(memory['ram_bytes'])} too small"
    if memory["huge_pages_pool_bytes"]:
        return f"cap ~{format_bytes(memory['cap_bytes'])} of {format_bytes(memory['ram_bytes'])}"
    return f"cap {format_bytes(memory['ram_bytes'])}"
