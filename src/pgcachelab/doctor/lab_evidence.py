"""The lab's own measurements as evidence for doctor's shared_buffers check (seed 000).

A cache-split run (workload "cache-wash") measures a throwaway cluster the lab created and
removed, so no stored run can be "this server" by identity (its system identifier is gone with
it). What can honestly carry over is a run made on the same machine with the same PostgreSQL
major version: same host name and the same MemTotal (the run's environment records both), and
the same major version. The memory the run's server had (its cgroup limit, or the RAM) is
compared with the memory this server has; only when they are equal is the measured best
shared_buffers a setting to recommend, otherwise it is cited as context.

Pure functions, apart from `read_cache_split_evidence`, which reads the results store.
"""

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from pgcachelab.analysis.advice import choose, format_interval
from pgcachelab.analysis.cache_split import index_survives_from
from pgcachelab.analysis.run_data import RunData, load_run
from pgcachelab.analysis.summary import Summary
from pgcachelab.store.location import STORE_FILE
from pgcachelab.store.records import Run
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies.cache_wash.repetitions import repetitions
from pgcachelab.units import format_bytes


@dataclass(frozen=True)
class HostIdentity:
    """What a stored run's environment must share with this server to count as evidence."""

    hostname: str
    memory_total_bytes: int | None
    server_major: str  # "18", "9.6"


@dataclass(frozen=True)
class CacheSplitEvidence:
    run_id: str
    run_name: str
    server_version: str
    memory_bytes: float  # what the run's server had: its memory limit, else the RAM
    memory_limited: bool
    huge_pages: str  # the huge_pages cell the figures come from ("" when not swept)
    best_shared_buffers_bytes: int
    best_idx2: Summary  # the per-repetition idx2 medians at the best setting, in ms
    tied_bytes: list[int]  # settings the intervals cannot tell from the best
    survives_from_bytes: int | None  # idx2 within 10% of idx1 from here up
    caveats: list[str] = field(default_factory=list)

    measured_bytes: list[int] = field(default_factory=list)  # every shared_buffers measured

    def as_good_as_best(self, shared_buffers_bytes: float) -> bool:
        return int(shared_buffers_bytes) in {self.best_shared_buffers_bytes, *self.tied_bytes}

    @property
    def singles_out(self) -> bool:
        """False when every other measured setting's interval overlaps the best's."""
        return len(self.tied_bytes) < len(self.measured_bytes) - 1

    def measured(self, shared_buffers_bytes: float) -> bool:
        return int(shared_buffers_bytes) in self.measured_bytes

    def text(self) -> str:
        """One sentence: 'the lab measured ...', with the interval and what it cannot tell."""
        memory = format_bytes(self.memory_bytes) + (" limit" if self.memory_limited else " RAM")
        cell = f", huge_pages={self.huge_pages}" if self.huge_pages else ""
        best = self.best_shared_buffers_bytes
        parts = [
            f"the lab measured (run {self.run_id} '{self.run_name}', PostgreSQL "
            f"{self.server_version} on this host, {memory}{cell}) the fastest index lookups "
            f"after a large scan at shared_buffers = {format_bytes(best)} "
            f"({best / self.memory_bytes:.0%} of its memory): idx2 median "
            f"{format_interval(self.best_idx2, ' ms')}"
        ]
        if self.tied_bytes:
            tied = ", ".join(format_bytes(b) for b in sorted(self.tied_bytes))
            parts.append(f"as good within the intervals: {tied}")
        if self.survives_from_bytes is not None:
            survives = format_bytes(self.survives_from_bytes)
            parts.append(f"the index survives the scan from {survives}")
        parts += self.caveats
        return "; ".join(parts)


def major_of(version: str) -> str:
    """'9.6.24' -> '9.6', '18.0' -> '18': major versions as the lab names them."""
    numbers = version.split()[-1].split(".") if version else [""]
    return ".".join(numbers[:2]) if numbers[0].isdigit() and int(numbers[0]) < 10 else numbers[0]


def major_of_version_num(version_num: int) -> str:
    """server_version_num 90624 -> '9.6', 180001 -> '18'."""
    if version_num >= 100000:
        return str(version_num // 10000)
    return f"{version_num // 10000}.{version_num // 100 % 100}"


def why_not_evidence(run: Run, identity: HostIdentity) -> str | None:
    """None when the stored run can speak for this server; else the reason it cannot."""
    environment = run.environment
    if run.study != "cache-wash":
        return "not a cache-split run"
    if run.target.get("kind") != "managed" or run.target.get("source") == "versions":
        return "not a single-version managed cluster"
    if environment.get("hostname") != identity.hostname:
        return f"measured on host {environment.get('hostname')!r}"
    if environment.get("memory_total_bytes") != identity.memory_total_bytes:
        return "measured on a machine with other RAM"
    if major_of(environment.get("server_version", "")) != identity.server_major:
        return f"measured PostgreSQL {environment.get('server_version')}"
    return None


def evidence_from_run(data: RunData, huge_pages_in_use: str | None) -> CacheSplitEvidence | None:
    """The best shared_buffers for idx2 (as `advise` finds it) in the huge pages cell closest
    to the server's: the same setting if measured, else off, else the only one."""
    reps = repetitions(data)
    cells = sorted({r.huge_pages for r in reps})
    if not cells:
        return None
    cell = next((c for c in (huge_pages_in_use, "off") if c in cells), cells[0])
    mine = [r for r in reps if r.huge_pages == cell]
    samples: dict[int, list[float]] = {}
    for rep in mine:
        samples.setdefault(rep.shared_buffers_bytes, []).append(rep.median("idx2"))
    choice = choose(samples, higher_is_better=False, show=format_bytes)
    if choice is None or len(samples) < 2:
        return None  # a single shared_buffers measured favours nothing
    memory_bytes = data.memory_available_bytes
    if memory_bytes is None:
        return None  # the run does not say what memory its server had: nothing to compare
    survives, _ = index_survives_from(mine, cell)
    return CacheSplitEvidence(
        run_id=data.run.run_id,
        run_name=data.run.name,
        server_version=data.run.environment.get("server_version", "?"),
        memory_bytes=memory_bytes,
        memory_limited=bool(data.memory_limit_bytes),
        huge_pages=cell if len(cells) > 1 else "",
        best_shared_buffers_bytes=choice.best,
        best_idx2=choice.best_summary,
        tied_bytes=list(choice.indistinguishable),
        survives_from_bytes=survives,
        caveats=[c for c in choice.caveats if not c.startswith("the intervals of")],
        measured_bytes=sorted(samples),
    )


def read_cache_split_evidence(
    lab_dir: Path, identity: HostIdentity, huge_pages_in_use: str | None
) -> tuple[CacheSplitEvidence | None, str]:
    """The newest matching cache-split run's evidence, or None and why there is none."""
    path = Path(lab_dir) / STORE_FILE
    if not path.is_file():
        return None, f"no results store at {path}"
    try:
        store = SqliteResultStore.open_read_only(path)
    except sqlite3.Error as error:
        return None, f"cannot read the results store {path}: {error}"
    try:
        reasons = []
        for run in reversed(store.runs()):
            reason = why_not_evidence(run, identity)
            if reason is None:
                evidence = evidence_from_run(load_run(store, run.run_id), huge_pages_in_use)
                if evidence is not None:
                    return evidence, ""
                reason = "fewer than two shared_buffers settings measured"
            if reason != "not a cache-split run":
                reasons.append(f"run {run.run_id}: {reason}")
    except sqlite3.Error as error:
        return None, f"cannot read the results store {path}: {error}"
    finally:
        store.close()
    if not reasons:
        return None, f"no cache-split run in {path}"
    return None, "no cache-split run for this server in the lab: " + "; ".join(reasons[:3])
