"""Seed 002's ladder, rung by rung, judged on a TPC-C run (issue 37). Pure rules over the steps
(studies/tpcc/step_results.py's StepSamples, in the run's order) and thin adapters from RunData.

The article (seed 002) climbed 111 → 1,330 → 10,140 → 15,803 → 22,656 → 180,732 → 193,150 tpmC
on a 16-core, 32 GB server with 64 terminals. A run's steps are matched to the article's rungs by
what they change, in the article's order: the first limited step, a raised limit, a raised limit
again, the IO settings, the memory settings, the limit lifted, the OS settings. Each rung is the
step's tpmC against the step before it (the one the rung's own change acts on), as the ratio of
geometric means with Welch's 95% interval on the logs (analysis/versions.py), the figure the
report's ladder table shows, judged by "about" the article's ratio (analysis/qualifiers.py).

Issue 46: the rungs whose figure is a ratio against a limit the spec chose (binds, the raises,
the lift) measure pgbench's pacer, not the server: they "follow from the setup", shown with
their figure and never counted. What the article says of the server at those rungs is graded
apart, with the rest of its findings: the disk holding the server back at 50,000, the CPU
85-95% busy at the best point, ~10,000 tpmC a logical core, ~100 MB a warehouse, and a run of
100 transactions per terminal giving about the timed run's tpmC.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.analysis.claims import (
    BadFigure,
    Figure,
    Verdict,
    cannot,
    follows_from_setup,
    mean_figure,
    noise,
    not_measured,
    ratio_figure,
    with_reason,
)
from pgcachelab.analysis.qualifiers import QUALIFIERS, judge
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.spec.load import stored_spec
from pgcachelab.studies.tpcc.ladder import step_name, step_samples, tpcc_runs
from pgcachelab.studies.tpcc.step_results import StepSamples
from pgcachelab.workloads.parameters import TpccParameters

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


@dataclass(frozen=True)
class Rung:
    key: str
    words: str  # the article's claim, translated
    before: float  # the article's tpmC before the step
    after: float  # and after
    wants: str  # what step the run needs, for "not measured by this spec"
    # Why the rung's figure always follows from the setup (a ratio against a limit the spec
    # chose, pgbench's own pacer): shown with its figure, never counted. "": a finding.
    setup: str = ""

    @property
    def ratio(self) -> float:
        return self.after / self.before

    @property
    def article(self) -> str:
        return f"{self.before:,.0f} → {self.after:,.0f} tpmC (×{self.ratio:.2f})"

    @property
    def claim(self) -> str:
        return f"the step's tpmC against the step before it, about the article's ×{self.ratio:.2f}"

    @property
    def rule(self) -> str:
        return QUALIFIERS["about"].rule(self.claim, self.ratio)


PACER = (
    "pgbench's pacer (-R) lets through what the limit the spec chose allows: "
    "a server that can do more reaches it by construction"
)
BINDS = Rung(
    "binds",
    "BenchmarkSQL's default limitTxnsPerMin = 300 silently caps the first run: 111 tpmC "
    '("tpmTOTAL 261: why so low?")',
    0,
    111.11,
    "step with a rate limit",
    PACER,
)
RAISE_TENFOLD = Rung(
    "raise",
    "the limit raised tenfold (3,000) raises tpmC about tenfold, still capped by the limit",
    111.11,
    1330.08,
    "step that raises a binding limit to another limit",
    "both steps ran at limits the spec chose (300 and 3,000 tpm): their ratio is the "
    "ratio of the limits, pgbench's pacer, not the server",
)
RAISE_AGAIN = Rung(
    "raise-again",
    "the limit raised to 50,000: the server, held back by its disk (iowait), now decides",
    1330.08,
    10140.68,
    "second step that raises the limit",
    "the step before ran at the 3,000 tpm limit the spec chose: the ratio is the server's "
    "rate over that limit; what the article says of the server at 50,000 (its disk holds it "
    "back) is graded as a claim of its own",
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
    "the step before ran under a limit the spec chose: where it reached it (the article's "
    "memory step, tpmTOTAL 50,456 of 50,000) the ratio is the server's rate over that "
    "limit, where it did not, lifting it changes nothing by construction",
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

# Seed 002's other findings, in its words (section 3 and 4.2), and its own figures.
# "每一个CPU核数(逻辑核)理想状况下,可以跑到1万 tpmC的值,这里跑了19万": a logical core can
# ideally do 10,000 tpmC; its 16 cores did 193,150 (12,072 a core).
TPMC_PER_CORE = 10_000
ARTICLE_TPMC = 193_150.84
# "CPU利用率往往在85% ~ 95%之间,会测出较高的值,再往上反而会降低": the highest tpmC comes with the
# CPU 85-95% busy, above that it falls (its last run: 95%).
BEST_CPU_BUSY_PCT = (85.0, 95.0)
# "每个warehouse大小大概是100MB": its 100 warehouses measured 10,212 MB after the load.
WAREHOUSE_MB = 100
ARTICLE_DATABASE_MB = 10_212
ARTICLE_WAREHOUSES = 100
# runTxnsPerTerminal = 100 at the 50,000 limit: "NewOrders为9723,和前一次差不太多" (9,723.3
# against the timed run's 10,140.68: not much different).
ARTICLE_TRANSACTIONS_PER_TERMINAL = 100
ARTICLE_FIXED_COUNT_TPMC = 9_723.3
ARTICLE_TIMED_TPMC = 10_140.68
MIB = 2**20
# The limit of the article's third run, the last before it tuned anything: runs at this limit
# or below add few rows (as_loaded).
ARTICLE_LAST_LIMIT = 50_000


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
    when the run has no such step. The limits are matched in the article's order (the first
    limited step, a raise, a raise again); after them the IO rung, then the memory rung after
    it, and the lift wherever it comes (the quick spec lifts the limit before IO and memory,
    so that no limit caps them); the OS rung after all of these takes the run of
    consecutive OS steps (huge pages, then the host settings) as one, as the article's
    section 4.2 is one run."""
    found: dict[str, tuple[int, int] | None] = {}

    def first(test: Callable[[StepSamples, StepSamples], bool], after: int) -> int | None:
        return next(
            (i for i in range(max(after, 1), len(steps)) if test(steps[i - 1], steps[i])), None
        )

    limited = next((i for i, s in enumerate(steps) if s.rate_tpm is not None), None)
    found[BINDS.key] = (limited, limited) if limited is not None else None
    position = limited + 1 if limited is not None else 0
    for rung in (RAISE_TENFOLD, RAISE_AGAIN):
        at = first(_is_raise, position)
        found[rung.key] = (at - 1, at) if at is not None else None
        if at is not None:
            position = at + 1
    io = first(_is_io, position)
    memory = first(_is_memory, position if io is None else io + 1)
    lift = first(_is_lift, position)
    for rung, at in ((IO, io), (MEMORY, memory), (LIFTED, lift)):
        found[rung.key] = (at - 1, at) if at is not None else None
    position = max([position] + [at + 1 for at in (io, memory, lift) if at is not None])
    start = first(lambda before, step: _is_os(before, step, os_steps), position)
    if start is None:
        found[OS.key] = None
    else:
        last = start
        while last + 1 < len(steps) and _is_os(steps[last], steps[last + 1], os_steps):
            last += 1
        found[OS.key] = (start - 1, last)
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
    """The limit binds: each repetition's tpmTOTAL as a share of the step's limit. Always
    "follows from the setup": pgbench's pacer lets through what the spec's limit allows."""
    claim = f"tpmTOTAL as a share of the {limit_tpm:,.0f} tpm limit (the article's 83% and 98%)"
    shares = [s for s in shares if s is not None and not math.isnan(s)]
    if not shares:
        return cannot(f"step {step} has no tpmTOTAL to set against its limit")
    figure = mean_figure(f"tpmTOTAL / limit at {step}", [s * 100 for s in shares], "%")
    assert figure is not None
    verdict = judge(figure, "at least", claim, BINDS_SHARE * 100)
    return follows_from_setup(verdict, PACER)


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


def _failed(steps: list[StepSamples], what: str) -> Verdict:
    """No figure where the spec has the step: its measurements failed on this machine."""
    failed = "; ".join(f"{s.name}: {f}" for s in steps for f in s.failures)
    return cannot(f"{what}: {failed or 'no tpmC was measured'}")


def judge_rung(
    rung: Rung,
    steps: list[StepSamples],
    os_steps: frozenset[str] = frozenset(),
    cores: int | None = None,
) -> Verdict:
    """One rung's verdict on the run's steps (not the binds rung: judge_binds)."""
    where = rung_steps(steps, os_steps).get(rung.key)
    if where is None:
        reason = f"the spec has no {rung.wants} where the article's ladder puts it"
        mixed = [
            after.name
            for before, after in zip(steps, steps[1:], strict=False)
            if _changed(before, after) & IO_SETTINGS and _changed(before, after) & MEMORY_SETTINGS
        ]
        if rung in (IO, MEMORY) and mixed:
            reason += f" (step {mixed[0]} changes IO and memory settings together)"
        return not_measured(reason)
    before, after = steps[where[0]], steps[where[1]]
    if rung in (IO, MEMORY) and (bound := already_bound(before)):
        return not_measured(
            f"{bound}: the spec kept a limit the {after.name} step cannot rise under (measure "
            "it without that limit, or under one the machine does not reach)"
        )
    figure = step_ratio_figure(before, after)
    if figure is None:
        return _failed(steps[where[0] : where[1] + 1], f"step {after.name} against {before.name}")
    verdict = judge(figure, "about", rung.claim, rung.ratio)
    if rung in (LIFTED, OS):
        verdict = with_reason(verdict, _cores_note(cores))
    if rung is LIFTED:
        limit = f"{before.rate_tpm:,.0f} tpm" if before.rate_tpm else "no"
        held = "reached" if already_bound(before) else "did not reach"
        return follows_from_setup(
            verdict, f"step {before.name} {held} its {limit} limit; {rung.setup}"
        )
    if rung.setup:
        return follows_from_setup(verdict, rung.setup)
    return verdict


# Seed 002's findings besides the ladder's rungs.


def _timed(steps: list[StepSamples]) -> list[StepSamples]:
    """Steps that ran for a time, not a count of transactions, and measured tpmC."""
    return [s for s in steps if s.transactions is None and _positive(s.tpmc)]


def _no_resources(step: StepSamples) -> Verdict:
    return not_measured(
        f"step {step.name} recorded no CPU shares (the resource sampler, issue 32, came later)"
    )


def judge_disk_at_limit(steps: list[StepSamples]) -> Verdict:
    """At the article's second raised limit (50,000) the server, not the limit, decides, and
    its disk holds it back: "CPU利用率也上来了,但是受限于磁盘,大量的iowait". The figure is the
    machine's CPU time waiting against its time working, per repetition: on real storage
    iowait / busy; on the emulated disk (FUSE) a commit's flush or a write waits for the
    daemon's answer outside io_schedule(), which the kernel counts as idle, not iowait (only
    a read through the page cache waits as iowait), so (iowait + idle) / busy."""
    where = rung_steps(steps).get(RAISE_AGAIN.key)
    if where is None:
        return not_measured(f"the spec has no {RAISE_AGAIN.wants} (the article's 50,000)")
    step = steps[where[1]]
    if not _positive(step.tpmc):
        return _failed([step], f"step {step.name}")
    if bound := already_bound(step):
        return not_measured(
            f"{bound}: the limit the spec chose, not the server, held it back (a limit the "
            "machine does not reach would let the disk show)"
        )
    shares = (step.cpu_busy_pct, step.cpu_iowait_pct, step.cpu_idle_pct)
    if not step.cpu_busy_pct or len({len(values) for values in shares}) > 1:
        return _no_resources(step)
    if step.emulated_disk:
        waits = [i + d for i, d in zip(step.cpu_iowait_pct, step.cpu_idle_pct, strict=True)]
        what = f"CPU (iowait + idle) / busy at {step.name}"
        where_disk = (
            f"the data sat on the emulated disk ({step.emulated_disk}): a flush or write waits "
            "for its FUSE daemon as idle time, not iowait, so idle counts as waiting"
        )
    else:
        waits = list(step.cpu_iowait_pct)
        what = f"CPU iowait / busy at {step.name}"
        where_disk = "on the host's own storage: iowait is the wait for the disk"
    try:
        figure = ratio_figure(
            what,
            [
                wait / busy if busy > 0 else math.inf
                for wait, busy in zip(waits, step.cpu_busy_pct, strict=True)
            ],
        )
    except BadFigure as error:
        return noise(f"no figure to judge: {error}")
    assert figure is not None
    busy = statistics.fmean(step.cpu_busy_pct)
    iowait = statistics.fmean(step.cpu_iowait_pct) if step.cpu_iowait_pct else math.nan
    verdict = judge(
        figure,
        "direction",
        "held back by its disk: the machine's CPU waits more than it works, below the limit",
    )
    return with_reason(verdict, f"{where_disk}; CPU busy {busy:.0f}%, iowait {iowait:.1f}% (means)")


def judge_best_cpu(steps: list[StepSamples]) -> Verdict:
    """The step with the highest tpmC (median, of the timed steps) ran with the machine's CPU
    85-95% busy (user + system, the article's nmon; pgbench's terminals included)."""
    timed = _timed(steps)
    if not timed:
        return not_measured("the run has no timed step with tpmC")
    best = max(timed, key=lambda s: statistics.median(_positive(s.tpmc)))
    if not best.cpu_busy_pct:
        return _no_resources(best)
    figure = mean_figure(f"CPU busy at {best.name}, the fastest step", best.cpu_busy_pct, "%")
    assert figure is not None
    low, high = BEST_CPU_BUSY_PCT
    verdict = judge(
        figure, "range", "the fastest step's CPU busy (user + system, whole machine)", low, high
    )
    others = ", ".join(
        f"{s.name} {statistics.fmean(s.cpu_busy_pct):.0f}%" for s in timed if s.cpu_busy_pct
    )
    return with_reason(verdict, f"each step's mean CPU busy: {others}")


def fully_tuned(steps: list[StepSamples]) -> StepSamples | None:
    """The last timed step whose limit, if any, did not hold it back: every setting of the
    ladder in force, as in the article's last run."""
    free = [s for s in _timed(steps) if not already_bound(s)]
    return free[-1] if free else None


def judge_per_core(steps: list[StepSamples], cores: int | None) -> Verdict:
    """tpmC a core at the fully tuned step, near the article's 10,000 a logical core."""
    step = fully_tuned(steps)
    if step is None:
        return not_measured("the run has no timed step free of its limit")
    if not cores:
        return not_measured("the run recorded no core count")
    figure = mean_figure(
        f"tpmC a core at {step.name} ({cores} cores)",
        [t / cores for t in _positive(step.tpmc)],
        "tpmC a core",
    )
    assert figure is not None
    verdict = judge(figure, "near", "tpmC per logical core", TPMC_PER_CORE)
    return with_reason(
        verdict,
        "pgbench's terminals share these cores, and each transaction here is one call of a "
        "server-side function, where BenchmarkSQL sends the statements one by one over JDBC "
        "(the lab's client mode measured ×0.44 of the procedures', docs/study-002-tpcc.md)",
    )


def as_loaded(steps: list[StepSamples]) -> list[float]:
    """The database's size after each measurement, in the order they ran, up to the first one
    that ran above the article's 50,000 tpm limit (or without a limit): the data as loaded,
    grown by the few thousand transactions of its first three runs' limits (a percent or two
    of 4 warehouses), where the steps after them add tens of megabytes each."""
    measured = sorted(
        (started, size, s.rate_tpm)
        for s in steps
        for started, size in zip(s.started_at, s.database_bytes, strict=False)
    )
    sizes = []
    for _, size, limit in measured:
        if limit is None or limit > ARTICLE_LAST_LIMIT:
            break
        sizes.append(size)
    return sizes


def judge_warehouse_size(steps: list[StepSamples]) -> Verdict:
    """The database's size a warehouse as loaded (as_loaded), near the article's 100 MB."""
    warehouses = next((s.warehouses for s in steps if s.warehouses), None)
    sizes = as_loaded(steps)
    if not warehouses or not any(s.database_bytes for s in steps):
        return not_measured("the run recorded no database size or warehouse count")
    if not sizes:
        return not_measured(
            f"the run's first measurement ran above {ARTICLE_LAST_LIMIT:,} tpm: no size as loaded"
        )
    figure = mean_figure(
        f"database size a warehouse as loaded ({warehouses} warehouses, the first "
        f"{len(sizes)} measurements)",
        [b / MIB / warehouses for b in sizes],
        "MB",
    )
    assert figure is not None
    return with_reason(
        judge(figure, "near", "the database's size a warehouse", WAREHOUSE_MB),
        "the lab's loader makes the rows of TPC-C's clause 4.3 with primary keys and two "
        "indexes, as BenchmarkSQL does; the catalogue's few MB count too",
    )


def fixed_count_steps(steps: list[StepSamples]) -> tuple[StepSamples, StepSamples] | None:
    """(the timed step, the step that runs a fixed number of transactions per terminal with
    everything else the same), or None."""
    for before, step in zip(steps, steps[1:], strict=False):
        if (
            step.transactions
            and before.transactions is None
            and before.rate_tpm == step.rate_tpm
            and not _changed(before, step)
        ):
            return before, step
    return None


def judge_fixed_count(steps: list[StepSamples]) -> Verdict:
    """A run of a fixed number of transactions per terminal (runTxnsPerTerminal, pgbench -t)
    gives about the tpmC of the timed run before it."""
    pair = fixed_count_steps(steps)
    if pair is None:
        return not_measured(
            "the spec has no step that runs a fixed number of transactions per terminal "
            f"(transactions = {ARTICLE_TRANSACTIONS_PER_TERMINAL}) after a timed step with the "
            "same settings"
        )
    before, step = pair
    figure = step_ratio_figure(before, step)
    if figure is None:
        return _failed([before, step], f"step {step.name} against {before.name}")
    verdict = judge(figure, "same", "a run of a fixed count against the timed run")
    return with_reason(
        verdict,
        f"{step.transactions} transactions per terminal; the article's 64 terminals ran "
        f"{64 * ARTICLE_TRANSACTIONS_PER_TERMINAL:,} in 18 s",
    )


# Adapters from a stored run.


def os_step_names(data: RunData) -> frozenset[str]:
    """Ladder steps that change host settings ([ladder.host]): the store keeps no host
    settings with a point, the spec has them."""
    spec = stored_spec(data.run.spec_text, data.run.spec_path)
    return frozenset(step.name for step in spec.ladder if step.host) if spec else frozenset()


def _cores(data: RunData) -> int | None:
    cores = (data.run.environment or {}).get("cores")
    return int(cores) if isinstance(cores, int | float) else None


def binds_from_run(data: RunData) -> Verdict:
    for result in data.points:
        parameters = result.point.workload
        limit = parameters.rate_tpm if isinstance(parameters, TpccParameters) else None
        if isinstance(limit, int | float) and limit > 0:
            shares = [
                float(run["tpm_total"]) / float(limit)
                for run in tpcc_runs(result)
                if run.get("tpm_total") is not None
            ]
            return judge_binds(shares, step_name(result), float(limit))
    return not_measured(f"the spec has no {BINDS.wants}: nothing could bind")


def rung_judge(rung: Rung) -> Callable[[RunData], Verdict]:
    def judge_on_run(data: RunData) -> Verdict:
        return judge_rung(rung, step_samples(data), os_step_names(data), _cores(data))

    judge_on_run.__name__ = f"judge_{rung.key.replace('-', '_')}"
    return judge_on_run


def disk_at_limit_from_run(data: RunData) -> Verdict:
    return judge_disk_at_limit(step_samples(data))


def best_cpu_from_run(data: RunData) -> Verdict:
    return judge_best_cpu(step_samples(data))


def per_core_from_run(data: RunData) -> Verdict:
    return judge_per_core(step_samples(data), _cores(data))


def warehouse_size_from_run(data: RunData) -> Verdict:
    return judge_warehouse_size(step_samples(data))


def fixed_count_from_run(data: RunData) -> Verdict:
    return judge_fixed_count(step_samples(data))
