"""Seed 002's ladder, rung by rung, judged on a TPC-C run (issue 37). Pure rules over the steps
(analysis/ladder.py's StepSamples, in the run's order) and thin adapters from RunData.

The article (seed 002) climbed 111 → 1,330 → 10,140 → 15,803 → 22,656 → 180,732 → 193,150 tpmC
on a 16-core, 32 GB server with 64 terminals. A run's steps are matched to the article's rungs by
what they change, in the article's order: the first limited step, a raised limit, a raised limit
again, the IO settings, the memory settings, the limit lifted, the OS settings. Each rung is the
step's tpmC against the step before it (the one the rung's own change acts on), as the ratio of
geometric means with Welch's 95% interval on the logs (analysis/versions.py), the figure the
report's ladder table shows.
"""

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.analysis.claims import Figure, Verdict, at_least, cannot
from pgcachelab.analysis.ladder import StepSamples
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.summary import summarise
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.studies.tpcc.ladder import step_name, step_samples, tpcc_runs

# The article's server (seed 002: "16c 32GB", terminals=64): what the rungs past the limits
# measured. This machine's cores are quoted beside it where the CPU decides.
ARTICLE_CORES = 16
ARTICLE_TERMINALS = 64

# A limited step binds when the run did what the limit allowed: the article's first two runs
# reached 83% (tpmTOTAL 250 of 300) and 98% (2,939 of 3,000) of theirs. Below 80% the server,
# not the limit, held the rate back (a bound run's pacing loses a few percent, not a fifth).
BINDS_SHARE = 0.8

# The settings of the article's IO and memory rungs (section 4.1.1 and 4.1.2), and of its OS
# rung as the server sees it (huge pages; the rest are host settings, [ladder.host]).
IO_SETTINGS = frozenset(
    {
        "synchronous_commit",
        "checkpoint_timeout",
        "checkpoint_completion_target",
        "max_wal_size",
        "min_wal_size",
        "autovacuum",
        "bgwriter_delay",
        "bgwriter_lru_maxpages",
        "bgwriter_lru_multiplier",
        "full_page_writes",
    }
)
MEMORY_SETTINGS = frozenset(
    {"shared_buffers", "work_mem", "maintenance_work_mem", "effective_cache_size"}
)
OS_SETTINGS = frozenset({"huge_pages"})


def size_threshold(article_ratio: float) -> float:
    """A rung is reproduced when its interval lies at or above half the article's step on a
    log scale (√ratio): a smaller machine, another disk and fewer terminals change how far a
    step goes, while a step that gains less than half of it (in orders of magnitude) is not
    the step the article took."""
    return math.sqrt(article_ratio)


@dataclass(frozen=True)
class Rung:
    key: str
    words: str  # the article's claim, translated
    before: float  # the article's tpmC before the step
    after: float  # and after
    wants: str  # what step the run needs, for "cannot be shown here"

    @property
    def ratio(self) -> float:
        return self.after / self.before

    @property
    def article(self) -> str:
        return f"{self.before:,.0f} → {self.after:,.0f} tpmC (×{self.ratio:.2f})"

    @property
    def rule(self) -> str:
        return (
            f"the step's tpmC against the step before it, 95% interval at or above "
            f"×{size_threshold(self.ratio):.2f} (half the article's ×{self.ratio:.2f} on a log "
            "scale); wholly below it: contradicted"
        )


BINDS = Rung(
    "binds",
    "BenchmarkSQL's default limitTxnsPerMin = 300 silently caps the first run: 111 tpmC "
    '("tpmTOTAL 261: why so low?")',
    0,
    111.11,
    "step with a rate limit",
)
RAISE_TENFOLD = Rung(
    "raise",
    "the limit raised tenfold (3,000) raises tpmC about tenfold, still capped by the limit",
    111.11,
    1330.08,
    "step that raises a binding limit to another limit",
)
RAISE_AGAIN = Rung(
    "raise-again",
    "the limit raised to 50,000: the server, held back by its disk (iowait), now decides",
    1330.08,
    10140.68,
    "second step that raises the limit",
)
IO = Rung(
    "io",
    "the IO settings (synchronous_commit = off, rare and spread checkpoints, autovacuum off, "
    "an eager bgwriter) raise tpmC by half",
    10140.68,
    15803.6,
    "step that changes the seed's IO settings and no memory setting",
)
MEMORY = Rung(
    "memory",
    "the memory settings (shared_buffers = 16GB of 32 GB, work_mem, maintenance_work_mem, "
    "effective_cache_size) raise it again, up to the 50,000 limit",
    15803.6,
    22656.34,
    "step that changes the seed's memory settings and no IO setting",
)
LIFTED = Rung(
    "lifted",
    "the limit lifted (500,000): the CPU finally works, tpmC ×8",
    22656.34,
    180732.76,
    "step that lifts the limit (none, or one the run does not reach)",
)
OS = Rung(
    "os",
    "the OS settings (huge pages, NUMA off, transparent huge pages off, the deadline "
    "scheduler, read-ahead, kernel.shm*, vm.dirty_*, swappiness) add the last 7%",
    180732.76,
    193150.84,
    "huge pages or OS step (root: the lab reserves huge pages and writes host settings)",
)
RUNGS = (BINDS, RAISE_TENFOLD, RAISE_AGAIN, IO, MEMORY, LIFTED, OS)


def _changed(before: StepSamples, step: StepSamples) -> set[str]:
    """Server settings the step changed (the workload's, "tpcc.*", apart)."""
    names = set(before.settings) | set(step.settings)
    return {
        n
        for n in names
        if not n.startswith("tpcc.") and before.settings.get(n) != step.settings.get(n)
    }


def _raises_limit(before: StepSamples, step: StepSamples) -> bool:
    return before.rate_tpm is not None and (
        step.rate_tpm is None or step.rate_tpm > before.rate_tpm
    )


def _is_io(before: StepSamples, step: StepSamples) -> bool:
    changed = _changed(before, step)
    return bool(changed & IO_SETTINGS) and not changed & MEMORY_SETTINGS


def _is_memory(before: StepSamples, step: StepSamples) -> bool:
    changed = _changed(before, step)
    return bool(changed & MEMORY_SETTINGS) and not changed & IO_SETTINGS


def _is_raise(before: StepSamples, step: StepSamples) -> bool:
    return _raises_limit(before, step) and step.rate_tpm is not None and bool(before.rate_limited)


def _is_lift(before: StepSamples, step: StepSamples) -> bool:
    lifted = step.rate_tpm is None or step.rate_limited == 0
    return _raises_limit(before, step) and lifted


def _is_os(before: StepSamples, step: StepSamples, os_steps: frozenset[str]) -> bool:
    return step.name in os_steps or bool(_changed(before, step) & OS_SETTINGS)


def rung_steps(
    steps: list[StepSamples], os_steps: frozenset[str] = frozenset()
) -> dict[str, tuple[int, int] | None]:
    """Rung key -> (index of the step before, index of the last step of the rung), or None
    when the run has no such step. Rungs are matched in the article's order, each after the
    last one found; the OS rung takes the run of consecutive OS steps (huge pages, then the
    host settings) as one, as the article's section 4.2 is one run."""
    found: dict[str, tuple[int, int] | None] = {}
    position = 0
    limited = next((i for i, s in enumerate(steps) if s.rate_tpm is not None), None)
    found[BINDS.key] = (limited, limited) if limited is not None else None
    if limited is not None:
        position = limited + 1
    tests: list[tuple[Rung, Callable[[StepSamples, StepSamples], bool]]] = [
        (RAISE_TENFOLD, _is_raise),
        (RAISE_AGAIN, _is_raise),
        (IO, _is_io),
        (MEMORY, _is_memory),
        (LIFTED, _is_lift),
    ]
    for rung, test in tests:
        at = next(
            (i for i in range(max(position, 1), len(steps)) if test(steps[i - 1], steps[i])),
            None,
        )
        found[rung.key] = (at - 1, at) if at is not None else None
        if at is not None:
            position = at + 1
    first = next(
        (
            i
            for i in range(max(position, 1), len(steps))
            if _is_os(steps[i - 1], steps[i], os_steps)
        ),
        None,
    )
    if first is None:
        found[OS.key] = None
    else:
        last = first
        while last + 1 < len(steps) and _is_os(steps[last], steps[last + 1], os_steps):
            last += 1
        found[OS.key] = (first - 1, last)
    return found


def _positive(values: list[float]) -> list[float]:
    return [v for v in values if v is not None and not math.isnan(v) and v > 0]


def step_ratio_figure(before: StepSamples, after: StepSamples) -> Figure | None:
    """tpmC of `after` against `before`, with Welch's interval; None without tpmC in both."""
    first, second = _positive(before.tpmc), _positive(after.tpmc)
    if not first or not second:
        return None
    ratio, low, high = welch_log_ratio(first, second)
    names = before.name if after.name == before.name else f"{after.name}/{before.name}"
    return Figure(f"tpmC {names}", ratio, low, high, min(len(first), len(second)))


def _cores_note(cores: int | None) -> str:
    mine = f"this machine has {cores}" if cores else "this machine's cores are not recorded"
    return (
        f"the article's server had {ARTICLE_CORES} cores and {ARTICLE_TERMINALS} terminals, "
        f"{mine}: where the CPU decides, the size follows the cores"
    )


def judge_binds(shares: list[float], step: str, limit_tpm: float) -> Verdict:
    """The limit binds: each repetition's tpmTOTAL as a share of the step's limit."""
    rule = (
        f"tpmTOTAL reaches at least {BINDS_SHARE:.0%} of the {limit_tpm:,.0f} tpm limit "
        f"(95% interval of the mean share); the article's runs reached 83% and 98%"
    )
    shares = [s for s in shares if s is not None and not math.isnan(s)]
    if not shares:
        return cannot(f"step {step} has no tpmTOTAL to set against its limit")
    summary = summarise(shares)
    assert summary is not None
    figure = Figure(
        f"tpmTOTAL / limit at {step}",
        summary.mean * 100,
        None if summary.ci_low is None else summary.ci_low * 100,
        None if summary.ci_high is None else summary.ci_high * 100,
        summary.n,
        "%",
    )
    return at_least(figure, BINDS_SHARE * 100, rule)


def already_bound(step: StepSamples) -> str | None:
    """Why the step's rate limit already held its tpmC back (most of its repetitions did all
    the limit allowed), or None. The article's IO and memory rungs each raised tpmC under the
    50,000 limit, with room left; where the rung before already reaches the limit, a rung
    under the same limit can only measure the limit (issue 37's run: io reached 50,000 here,
    and memory then read ×1.02, "contradicted", against a limit, not against the settings)."""
    if step.rate_tpm is None or not step.tpmc or step.rate_limited * 2 <= len(step.tpmc):
        return None
    total = f", tpmTOTAL {step.tpm_total:,.0f}" if step.tpm_total is not None else ""
    return (
        f"the {step.rate_tpm:,.0f} tpm limit already binds at step {step.name} "
        f"({step.rate_limited} of {len(step.tpmc)} repetitions did all it allowed{total})"
    )


def judge_rung(
    rung: Rung,
    steps: list[StepSamples],
    os_steps: frozenset[str] = frozenset(),
    cores: int | None = None,
) -> Verdict:
    """One rung's verdict on the run's steps (not the binds rung: judge_binds)."""
    where = rung_steps(steps, os_steps).get(rung.key)
    if where is None:
        reason = f"the run has no {rung.wants} where the article's ladder puts it"
        if rung is OS:
            reason += "; without root the lab cannot change them"
        mixed = [
            after.name
            for before, after in zip(steps, steps[1:], strict=False)
            if _changed(before, after) & IO_SETTINGS and _changed(before, after) & MEMORY_SETTINGS
        ]
        if rung in (IO, MEMORY) and mixed:
            reason += f" (step {mixed[0]} changes IO and memory settings together)"
        return cannot(reason)
    before, after = steps[where[0]], steps[where[1]]
    if rung in (IO, MEMORY) and (bound := already_bound(before)):
        return cannot(f"{bound}: the {after.name} step has no room to raise tpmC under it")
    figure = step_ratio_figure(before, after)
    if figure is None:
        span = steps[where[0] : where[1] + 1]
        failed = "; ".join(f"{s.name}: {f}" for s in span for f in s.failures)
        failed = failed or "no tpmC was measured"
        return cannot(f"step {after.name} against {before.name}: {failed}")
    rule = rung.rule
    if rung in (LIFTED, OS):
        rule += f"; {_cores_note(cores)}"
    return at_least(figure, size_threshold(rung.ratio), rule)


# Adapters from a stored run.


def os_step_names(data: RunData) -> frozenset[str]:
    """Ladder steps that change host settings ([ladder.host]): the store keeps no host
    settings with a point, the spec has them."""
    try:
        ladder = tomllib.loads(data.run.spec_text).get("ladder") or []
    except tomllib.TOMLDecodeError:
        return frozenset()
    return frozenset(
        str(step.get("name")) for step in ladder if isinstance(step, dict) and step.get("host")
    )


def _cores(data: RunData) -> int | None:
    cores = (data.run.environment or {}).get("cores")
    return int(cores) if isinstance(cores, int | float) else None


def binds_from_run(data: RunData) -> Verdict:
    for result in data.points:
        limit = result.point.workload.get("rate_tpm")
        if isinstance(limit, int | float) and limit > 0:
            shares = [
                float(run["tpm_total"]) / float(limit)
                for run in tpcc_runs(result)
                if run.get("tpm_total") is not None
            ]
            return judge_binds(shares, step_name(result), float(limit))
    return cannot(f"the run has no {BINDS.wants}: nothing could bind")


def rung_judge(rung: Rung) -> Callable[[RunData], Verdict]:
    def judge(data: RunData) -> Verdict:
        return judge_rung(rung, step_samples(data), os_step_names(data), _cores(data))

    judge.__name__ = f"judge_{rung.key.replace('-', '_')}"
    return judge
