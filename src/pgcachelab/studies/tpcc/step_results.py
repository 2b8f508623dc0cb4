"""A tuning ladder's steps (seed 002): tpmC per step and what each step changed. Pure functions.

Each step is compared with the step before it as a ratio of geometric means with Welch's 95%
interval on the logarithms (as versions are, analysis/versions.py): a step "mattered" when its
interval excludes 1. A step that ran at its rate limit measured the limit, not the server.
"""

import math
import statistics
from dataclasses import dataclass, field

from pgcachelab.analysis.versions import welch_log_ratio

# Settings that trade durability or maintenance away for speed (seed 002 uses some of them).
RISKY_SETTINGS = {
    "fsync": ("off", "a crash can corrupt the database"),
    "full_page_writes": ("off", "a crash can leave torn pages that recovery cannot repair"),
    "synchronous_commit": ("off", "a crash loses the last commits (up to 3 × wal_writer_delay)"),
    "autovacuum": ("off", "tables bloat and transaction ids wrap around without vacuum"),
}


def step_changes(
    previous: dict[str, str], current: dict[str, str]
) -> list[tuple[str, str | None, str]]:
    """(name, value before, value now) of what a step changed against the one before it."""
    return [
        (name, previous.get(name), value)
        for name, value in current.items()
        if previous.get(name) != value
    ]


def risks(settings: dict[str, str]) -> list[tuple[str, str, str]]:
    """(setting, value, what it risks) for settings that trade away durability or vacuum."""
    found = []
    for name, (risky_value, why) in RISKY_SETTINGS.items():
        value = settings.get(name)
        if value is not None and str(value).strip().lower() in (risky_value, "false", "0", "no"):
            found.append((name, str(value), why))
    return found


@dataclass(frozen=True)
class StepSamples:
    """What the store holds for one step (or one point of a TPC-C run without a ladder)."""

    name: str
    tpmc: list[float]  # one per successful repetition
    settings: dict[str, str]  # the settings in force (cumulative)
    rate_limited: int = 0  # repetitions that reached their rate limit
    failures: list[str] = field(default_factory=list)
    description: str = ""
    rate_tpm: float | None = None  # the step's limit on all terminals together; None: no limit
    tpm_total: float | None = None  # median tpmTOTAL of its repetitions (all transaction types)
    # Transactions per terminal (BenchmarkSQL's runTxnsPerTerminal, pgbench -t); None: timed.
    transactions: int | None = None
    # Per successful repetition, in the order of tpmc (experiments/resource_sampler.py's
    # summary over the measured run): the machine's CPU busy (user + system), waiting for IO
    # and idle, in % of all its CPUs; empty when the run did not record them.
    cpu_busy_pct: list[float] = field(default_factory=list)
    cpu_iowait_pct: list[float] = field(default_factory=list)
    cpu_idle_pct: list[float] = field(default_factory=list)
    # The database's size after each repetition, and when each started (Unix time): the
    # size as loaded is the size before the steps that add many orders.
    database_bytes: list[float] = field(default_factory=list)
    started_at: list[float] = field(default_factory=list)
    warehouses: int | None = None
    emulated_disk: str | None = None  # the emulated disk's profile, None on real storage


@dataclass(frozen=True)
class StepResult:
    name: str
    description: str
    n: int
    median: float | None
    minimum: float | None
    maximum: float | None
    ratio: float | None  # against the step before; None for the first or without data
    ci_low: float | None
    ci_high: float | None
    changes: list[tuple[str, str | None, str]]  # (setting, before, now) against the step before
    risks: list[tuple[str, str, str]]  # (setting, value, why) of the settings in force
    rate_limited: int
    failures: list[str]
    rate_tpm: float | None = None
    tpm_total: float | None = None

    @property
    def significant(self) -> bool:
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_high < 1 or self.ci_low > 1

    @property
    def verdict(self) -> str:
        if self.ratio is None:
            return ""
        if self.ci_low is None or self.ci_high is None:
            return "too few repetitions to tell"
        if not self.significant:
            return "no clear change (the interval includes 1)"
        return "faster" if self.ratio > 1 else "SLOWER"


def ladder_results(steps: list[StepSamples]) -> list[StepResult]:
    results = []
    previous: StepSamples | None = None
    for step in steps:
        values = [v for v in step.tpmc if v is not None and not math.isnan(v)]
        ratio = low = high = None
        comparable = previous is not None and values and all(v > 0 for v in values)
        if comparable and previous is not None and [v for v in previous.tpmc if v and v > 0]:
            ratio, low, high = welch_log_ratio(previous.tpmc, values)
        results.append(
            StepResult(
                name=step.name,
                description=step.description,
                n=len(values),
                median=statistics.median(values) if values else None,
                minimum=min(values) if values else None,
                maximum=max(values) if values else None,
                ratio=ratio,
                ci_low=low,
                ci_high=high,
                changes=step_changes(previous.settings if previous else {}, step.settings),
                risks=risks(step.settings),
                rate_limited=step.rate_limited,
                failures=list(step.failures),
                rate_tpm=step.rate_tpm,
                tpm_total=step.tpm_total,
            )
        )
        previous = step
    return results


def limit_verdicts(results: list[StepResult]) -> list[str]:
    """Per step, what its rate limit did (seed 002: a limit raised can still bind):
    "binds: ...", "not reached: ...", "still capped by the ... limit set at STEP" or "no limit".
    A repetition binds when it did what its limit allowed (workloads/tpcc/driver.py)."""
    verdicts = []
    set_at: str | None = None
    previous_limit: float | None = None
    for result in results:
        limit = result.rate_tpm
        if limit is None:
            verdicts.append("no limit")
            set_at, previous_limit = None, None
            continue
        if limit != previous_limit:
            set_at, previous_limit = result.name, limit
        achieved = (
            f"tpmTOTAL {result.tpm_total:,.0f} of {limit:,.0f} ({result.tpm_total / limit:.0%})"
            if result.tpm_total is not None
            else f"limit {limit:,.0f} tpm"
        )
        share = (
            f" in {result.rate_limited} of {result.n}" if 0 < result.rate_limited < result.n else ""
        )
        if not result.rate_limited:
            verdicts.append(f"not reached: {achieved}")
        elif set_at != result.name:
            verdicts.append(
                f"still capped{share} by the {limit:,.0f} tpm limit set at {set_at}: {achieved};"
                " it measured the limit, raise it"
            )
        else:
            verdicts.append(f"binds{share}: {achieved}")
    return verdicts


def steps_that_mattered(results: list[StepResult]) -> list[StepResult]:
    """Steps whose tpmC differs from the step before beyond the noise of the repetitions."""
    return [r for r in results if r.significant]
