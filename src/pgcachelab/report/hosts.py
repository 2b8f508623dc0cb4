"""The report's host-class table: which hosts measured a run queued for agents (issue 21), a
warning when point and host class are confounded (issue 38), and each point's median by class
when more than one class measured it."""

from markupsafe import Markup

from pgcachelab.analysis.hosts import (
    CLASS_FACTS,
    CONFOUNDING_REMEDY,
    OVERLAP_REMEDY,
    HostSplit,
    overlap_warning,
    run_confounding,
    run_host_split,
    run_overlaps,
)
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section, macro, table
from pgcachelab.units import format_bytes

TITLE = "Host classes: who measured the run"


def host_classes_section(data: RunData) -> Section:
    """Empty for a run measured by `run` on one host: its context says which host."""
    split = run_host_split(data)
    if not split.classes:
        return Section(TITLE)
    warnings = [text for text in (_confounding(data), _overlaps(data)) if text is not None]
    body = macro("hosts.html.j2", "hosts")(
        *_summary(split), warnings, Markup(_classes_table(split)), _by_class(split)
    )
    return Section(TITLE, body)


def _confounding(data: RunData) -> str | None:
    """The WARNING when classes measured the points unevenly (the points' medians then compare
    machines as much as points); None when they did not."""
    confounding = run_confounding(data)
    if confounding is None:
        return None
    sentence = confounding.text()
    text = sentence[:1].upper() + sentence[1:] + "."
    if not confounding.complete:
        text += " The medians by class below compare the points on one class at a time."
    return text + f" Measure it again with {CONFOUNDING_REMEDY}."


def _overlaps(data: RunData) -> str | None:
    """The WARNING when two agents measured on one host at once; None when none did."""
    overlaps = run_overlaps(data)
    if not overlaps:
        return None
    text = overlap_warning(overlaps).problem
    return text[:1].upper() + text[1:] + f". Measure it again with {OVERLAP_REMEDY}."


def _summary(split: HostSplit) -> tuple[str, str]:
    """Who measured the run, and that the context above is the host that queued it."""
    hosts = sorted({host for use in split.classes for host in use.hosts})
    queued = "The context above is the host that queued the run; agents on these hosts measured it."
    if not split.mixed:
        text = f"One host class measured every unit, on {len(hosts)} host(s): {', '.join(hosts)}."
    else:
        differ = ", ".join(split.differing_facts()) or "their names only"
        text = (
            f"{len(split.classes)} host classes measured this run; they differ in {differ}."
            " Each point's figures mix them: the medians by class below tell them apart."
            ' [fleet] hosts = "same" keeps a run on one class (host_class names it);'
            " [fleet] classes spreads every point over every class alike."
        )
    return text, queued


def _fact(key: str, value: object) -> str:
    if value is None:
        return "?"
    if key == "memory_total_bytes" and isinstance(value, int | float):
        return format_bytes(value)
    return str(value)


def _binaries(facts: dict[str, object]) -> str:
    """The host's PostgreSQL binaries as its agent listed them; "?" for none."""
    listed = facts.get("postgresql")
    return "; ".join(listed if isinstance(listed, list) else []) or "?"


def _classes_table(split: HostSplit) -> str:
    head = ["host class", "hosts", "ok", "failed", *(name for _, name in CLASS_FACTS)]
    head += ["storage (probe)", "PostgreSQL binaries"]
    rows = [
        [
            use.host_class,
            ", ".join(sorted(use.hosts)),
            use.ok,
            use.failed,
            *(_fact(key, use.facts.get(key)) for key, _ in CLASS_FACTS),
            use.facts.get("storage") or "?",
            _binaries(use.facts),
        ]
        for use in split.classes
    ]
    return table(head, rows, text_columns={0, 1, 4, 7, 8, 9})


def _by_class(split: HostSplit) -> Markup | None:
    if not split.mixed:
        return None
    names = [use.host_class for use in split.classes]
    rows = [
        [label, *(_tps(by_class.get(name)) for name in names)]
        for label, by_class in split.medians.items()
    ]
    return Markup(table(["point", *names], rows, text_columns={0}))


def _tps(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"
