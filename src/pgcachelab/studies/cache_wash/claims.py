"""Seed 000's findings as `reproduce` and the report grade them (issue 46).

Each claim's figure is a ratio in the seed's direction (studies/cache_wash/figures.py), judged
by the seed's own word through the one table of words (analysis/qualifiers.py): "noticeably"
(заметно) at least ×1.1, "slightly" (незначительно) ×1–×1.25, a bare direction ("falls",
"slows") above 1, "similar" (похож) within ×1.1 either way. A claim with parts (huge pages on
and off, every shared_buffers that holds the index) is decided by the one `combine`:
reproduced only when every part is.

Pure rules over a WashRun that tests build directly, and one adapter from RunData.
"""

from dataclasses import dataclass

from pgcachelab.analysis.cache_split import Repetition
from pgcachelab.analysis.claims import (
    Verdict,
    combine,
    noise,
    not_measured,
    weakened,
    with_reason,
)
from pgcachelab.analysis.qualifiers import NOTICEABLE, QUALIFIERS, judge
from pgcachelab.analysis.run_data import RunData
from pgcachelab.studies.cache_wash.figures import (
    BLOCK_BYTES,
    SEED_INDEX_PAGES,
    SEED_WARMUP_LOOKUPS,
    SEED_WARMUP_PER_INDEX_PAGE,
    PrewarmRepetition,
    both_ways,
    modes,
    nearest_quarter,
    on_off_figure,
    phase_across_sizes,
    prewarm_figure,
    sizes,
    survival_figure,
    warmup_per_index_page,
    whole_test_across_sizes,
)
from pgcachelab.studies.cache_wash.repetitions import repetitions
from pgcachelab.units import format_bytes, shared_buffers_bytes

# What each figure is, as the rules state it (the claims' `rule=` is made from the same words).
WASHED = "idx2/idx1 at the smallest shared_buffers, below the index's size"
KEPT = "idx2/idx1 at each shared_buffers larger than the index"
HUGE_PAGES_LOOKUPS = "idx1 at the smallest / at the largest shared_buffers, huge pages on"
NO_HUGE_PAGES_LOOKUPS = "idx1 at the largest / at the smallest shared_buffers, huge pages off"
SCAN_LARGE = "seq off/on at the largest shared_buffers measured both ways"
SCAN_MOST = "seq on/off, paired, at every shared_buffers measured both ways but the largest"
SCAN_SPEEDS_UP = "seq at the smallest / at the largest shared_buffers"
QUARTER = "idx1 + seq + idx2 at a quarter of RAM / at the largest shared_buffers"
PREWARM = "idx0 (right after pg_prewarm) / idx1 (after the warm-up) at the largest shared_buffers"

# The keys of analysis/qualifiers.py each claim is judged by: the seed's words.
WASHED_WORD = "noticeably"  # "в случае кеша ОС — заметна", the "long repeated lookup"
KEPT_WORD = "same"  # "становится похож на график ... до последовательного чтения"
HUGE_PAGES_LOOKUPS_WORD = "slightly"  # "начинает незначительно выигрывать"
NO_HUGE_PAGES_LOOKUPS_WORD = "direction"  # "Без HugePages скорость ... падает"
SCAN_LARGE_WORD = "noticeably"  # "выигрыш становится заметен"
SCAN_MOST_WORD = "direction"  # "использование HugePages замедляет выполнение запроса"
SCAN_SPEEDS_UP_WORD = "noticeably"  # "заметно ускорение запроса"
QUARTER_WORD = "noticeably"  # "Со своим кешем он работает заметно лучше"
PREWARM_WORD = "direction"  # "прогревает недостаточно"

NO_HUGE_PAGES_ON = (
    "the run measured no point with huge pages on (the spec did not sweep huge_pages = "
    '["on", "off"]; cache-split-quick does, as root)'
)
NO_HUGE_PAGES_OFF = "the run measured no point with huge pages off (cache-split-quick does)"
NOT_BOTH_WAYS = (
    "the run measured no shared_buffers with huge pages both on and off (cache-split-quick does)"
)
NO_INDEX_SIZE = "the run stored no index size: no shared_buffers can be said to hold the index"
# The warm-up proportion that decides the wash-out: within the qualifiers' "near" of the seed's.
SEED_WARMUP_BAND = QUALIFIERS["near"].band(SEED_WARMUP_PER_INDEX_PAGE)


def rule(word: str, figure: str, n: float | None = None) -> str:
    """The rule a claim states, as its verdict does (qualifiers.Qualifier.rule)."""
    return QUALIFIERS[word].rule(figure, n)


@dataclass(frozen=True)
class WashRun:
    """What seed 000's claims read of a run."""

    reps: list[Repetition]
    index_bytes: int | None = None
    warmup_lookups: int | None = None  # the warm-up's lookups per point (pgbench's count)
    ram_bytes: float | None = None  # the (emulated) machine's memory
    prewarm: tuple[PrewarmRepetition, ...] = ()


def _mode_name(mode: str) -> str:
    return f"huge_pages={mode}" if mode else "all"


def _combined(parts: list[tuple[str, Verdict]], nothing: str) -> Verdict:
    return combine(parts) if parts else not_measured(nothing)


# -- the index through the scan ----------------------------------------------------------------


def washed_verdict(run: WashRun) -> Verdict:
    """idx2/idx1 at the smallest shared_buffers below the index: "noticeably" above idx1, per
    huge pages value, at the seed's warm-up proportion (else never decided)."""
    if not run.index_bytes:
        return not_measured(NO_INDEX_SIZE)
    index = format_bytes(run.index_bytes)
    parts = []
    for mode in modes(run.reps):
        below = [size for size in sizes(run.reps, mode) if size < run.index_bytes]
        if not below:
            why = f"no shared_buffers smaller than the {index} index was measured"
            parts.append((_mode_name(mode), not_measured(why)))
            continue
        figure = survival_figure(run.reps, mode, below[0])
        assert figure is not None  # the size came from the repetitions
        parts.append((_mode_name(mode), judge(figure, WASHED_WORD, WASHED)))
    return at_the_seeds_warmup(_combined(parts, "the run measured no cache-wash repetition"), run)


def at_the_seeds_warmup(verdict: Verdict, run: WashRun) -> Verdict:
    """The wash-out decides only after a warm-up of the seed's lookups per index page: a
    lighter one leaves most leaves read once, and any one-off scan washes those out."""
    seed = (
        f"the seed's ~{SEED_WARMUP_PER_INDEX_PAGE:g} (~{SEED_WARMUP_LOOKUPS:,} lookups in its "
        f"100 s on a ~{SEED_INDEX_PAGES:,}-page index)"
    )
    per_page = warmup_per_index_page(run.warmup_lookups, run.index_bytes)
    if per_page is None:
        return weakened(
            verdict,
            f"the run did not record its warm-up's lookups (runs before issue 46), and only "
            f"the seed's proportion, {seed} lookups per index page, decides",
        )
    assert run.warmup_lookups is not None and run.index_bytes is not None
    said = (
        f"the warm-up was {per_page:.2g} lookups per index page ({run.warmup_lookups:,} on "
        f"{run.index_bytes // BLOCK_BYTES:,} pages)"
    )
    low, high = SEED_WARMUP_BAND
    if low <= per_page <= high:
        return with_reason(verdict, f"{said}, near {seed}: the seed's proportion, which decides")
    return weakened(
        verdict,
        f"{said}, not near {seed} ({low:.2g}–{high:.2g}): only the seed's proportion decides "
        "(a lighter warm-up leaves most leaves read once, and the scan washes them out of the "
        "OS cache; docs/study-000-cache-split.md)",
    )


def kept_verdict(run: WashRun) -> Verdict:
    """idx2/idx1 the "same" as before the scan at every shared_buffers that holds the index,
    per huge pages value. A ratio wholly below 1/1.1 means idx1 itself was cold: noise."""
    if not run.index_bytes:
        return not_measured(NO_INDEX_SIZE)
    index = format_bytes(run.index_bytes)
    parts = []
    for mode in modes(run.reps):
        holding = [size for size in sizes(run.reps, mode) if size > run.index_bytes]
        if not holding:
            why = f"no shared_buffers larger than the {index} index was measured"
            parts.append((_mode_name(mode), not_measured(why)))
            continue
        at_sizes = []
        for size in holding:
            figure = survival_figure(run.reps, mode, size)
            assert figure is not None  # the size came from the repetitions
            if figure.decisive and figure.ci_high is not None and figure.ci_high < 1 / NOTICEABLE:
                why = (
                    f"{rule(KEPT_WORD, KEPT)}; idx1 was slower than idx2 beyond the noise: idx1 "
                    "did not find the index warm, so the ratio says nothing of the scan"
                )
                at_sizes.append((format_bytes(size), noise(why, figure)))
            else:
                at_sizes.append((format_bytes(size), judge(figure, KEPT_WORD, KEPT)))
        parts.append((_mode_name(mode), combine(at_sizes)))
    return _combined(parts, "the run measured no cache-wash repetition")


# -- the first lookup against shared_buffers ---------------------------------------------------


def huge_pages_lookups_verdict(run: WashRun) -> Verdict:
    """With huge pages, PostgreSQL's cache (the largest shared_buffers) "slightly" beats the OS
    cache (the smallest) on idx1: smallest / largest within ×1–×1.25."""
    measured = sizes(run.reps, "on")
    if not measured:
        return not_measured(NO_HUGE_PAGES_ON)
    if len(measured) < 2:
        return not_measured("one shared_buffers was measured with huge pages on")
    figure = phase_across_sizes(run.reps, "on", "idx1", measured[0], measured[-1])
    assert figure is not None
    return judge(figure, HUGE_PAGES_LOOKUPS_WORD, HUGE_PAGES_LOOKUPS)


def lookups_without_huge_pages_verdict(run: WashRun) -> Verdict:
    """Without huge pages the lookups slow as shared_buffers grows: idx1 at the largest over
    the smallest above 1."""
    measured = sizes(run.reps, "off")
    if not measured:
        return not_measured(NO_HUGE_PAGES_OFF)
    if len(measured) < 2:
        return not_measured("one shared_buffers was measured with huge pages off")
    figure = phase_across_sizes(run.reps, "off", "idx1", measured[-1], measured[0])
    assert figure is not None
    return judge(figure, NO_HUGE_PAGES_LOOKUPS_WORD, NO_HUGE_PAGES_LOOKUPS)


# -- the scan ------------------------------------------------------------------------------------


def scan_huge_pages_large_verdict(run: WashRun) -> Verdict:
    """Huge pages' win on the scan "noticeable" at the largest shared_buffers: off/on ≥ ×1.1."""
    both = both_ways(run.reps)
    if not both:
        return not_measured(NOT_BOTH_WAYS if sizes(run.reps, "on") else NO_HUGE_PAGES_ON)
    largest = both[-1]
    what = f"seq off/on at {format_bytes(largest)}, the largest measured both ways"
    figure = on_off_figure(run.reps, "seq", [largest], "off", what)
    if figure is None:
        return not_measured(f"no repetition at {format_bytes(largest)} was measured both ways")
    return judge(figure, SCAN_LARGE_WORD, SCAN_LARGE)


def scan_huge_pages_most_verdict(run: WashRun) -> Verdict:
    """Huge pages slow the scan over most of the chart: on/off above 1, paired by repetition
    over every shared_buffers measured both ways but the largest (where the seed saw a win)."""
    both = both_ways(run.reps)
    if len(both) < 2:
        return not_measured(
            "fewer than two shared_buffers were measured with huge pages both on and off: "
            "most of the chart is every one but the largest (cache-split-quick measures three)"
        )
    rest = both[:-1]
    what = f"seq on/off at {', '.join(format_bytes(size) for size in rest)}, paired"
    figure = on_off_figure(run.reps, "seq", rest, "on", what)
    if figure is None:
        return not_measured("no repetition below the largest was measured both ways")
    return judge(figure, SCAN_MOST_WORD, SCAN_MOST)


def scan_speeds_up_verdict(run: WashRun) -> Verdict:
    """The scan "noticeably" faster once PostgreSQL's cache is larger than the OS cache: seq
    at the smallest over at the largest shared_buffers at least ×1.1, per huge pages value."""
    parts = []
    for mode in modes(run.reps):
        measured = sizes(run.reps, mode)
        if len(measured) < 2:
            parts.append((_mode_name(mode), not_measured("one shared_buffers was measured")))
            continue
        figure = phase_across_sizes(run.reps, mode, "seq", measured[0], measured[-1])
        assert figure is not None
        parts.append((_mode_name(mode), judge(figure, SCAN_SPEEDS_UP_WORD, SCAN_SPEEDS_UP)))
    return _combined(parts, "the run measured no cache-wash repetition")


# -- the conclusion: not a quarter of RAM ------------------------------------------------------


def quarter_verdict(run: WashRun) -> Verdict:
    """PostgreSQL works "noticeably" better with its own cache than with the documentation's
    quarter of RAM: the whole test at ¼ of RAM over at the largest shared_buffers ≥ ×1.1, per
    huge pages value."""
    if not run.ram_bytes:
        return not_measured("the run stored no memory size: no shared_buffers is a quarter of it")
    parts = []
    for mode in modes(run.reps):
        measured = sizes(run.reps, mode)
        quarter = nearest_quarter(measured, run.ram_bytes)
        if quarter is None or quarter >= measured[-1]:
            why = (
                f"no shared_buffers near a quarter of the {format_bytes(int(run.ram_bytes))} "
                "RAM and a larger one were both measured"
            )
            parts.append((_mode_name(mode), not_measured(why)))
            continue
        figure = whole_test_across_sizes(run.reps, mode, quarter, measured[-1])
        assert figure is not None
        parts.append((_mode_name(mode), judge(figure, QUARTER_WORD, QUARTER)))
    return _combined(parts, "the run measured no cache-wash repetition")


# -- pg_prewarm fills but does not warm --------------------------------------------------------


def prewarm_verdict(run: WashRun) -> Verdict:
    """Lookups right after pg_prewarm (idx0) slower than after the warm-up (idx1) at the
    largest shared_buffers, where PostgreSQL's cache holds what pg_prewarm read: idx0/idx1
    above 1, per huge pages value; what pg_prewarm read of the index is said with it."""
    if not run.prewarm:
        return not_measured(
            "the run timed no lookups right after pg_prewarm (idx0: runs from issue 46 on, "
            "with prewarm = true; cache-split-quick does)"
        )
    parts = []
    for mode in sorted({p.huge_pages for p in run.prewarm}, key=lambda m: (m != "on", m)):
        largest = max(p.shared_buffers_bytes for p in run.prewarm if p.huge_pages == mode)
        figure = prewarm_figure(list(run.prewarm), mode, largest)
        assert figure is not None
        verdict = judge(figure, PREWARM_WORD, PREWARM)
        blocks = [
            p.prewarmed_index_blocks
            for p in run.prewarm
            if p.huge_pages == mode
            and p.shared_buffers_bytes == largest
            and p.prewarmed_index_blocks is not None
        ]
        if run.index_bytes and blocks:
            pages = run.index_bytes // BLOCK_BYTES
            verdict = with_reason(
                verdict,
                f"pg_prewarm read {min(blocks):,}–{max(blocks):,} blocks of the {pages:,}-page "
                "index (it fills the cache)",
            )
        parts.append((_mode_name(mode), verdict))
    return combine(parts)


# -- from a run ---------------------------------------------------------------------------------


def wash_run(data: RunData) -> WashRun:
    """What the claims read of a stored run: its repetitions, the index's size, the warm-up's
    lookups, the machine's memory, and the lookups right after pg_prewarm."""
    index_bytes, warmup_lookups, prewarm = None, None, []
    for result in data.points:
        settings = result.point.settings
        for m in result.ok:
            wash = m.metrics.get("cache_wash") or {}
            sizes_stored = wash.get("data") or {}
            index_bytes = index_bytes or sizes_stored.get("index_bytes")
            warmup = wash.get("warmup") or {}
            if (stored_lookups := warmup.get("lookups")) is not None:
                lookups = int(stored_lookups)
                warmup_lookups = lookups if warmup_lookups is None else min(warmup_lookups, lookups)
            if wash.get("idx0_ms") and wash.get("idx1_ms"):
                prewarm.append(
                    PrewarmRepetition(
                        huge_pages=str(settings.get("huge_pages", "")).lower(),
                        shared_buffers_bytes=shared_buffers_bytes(settings.get("shared_buffers")),
                        repetition=m.repetition,
                        idx0_ms=wash["idx0_ms"],
                        idx1_ms=wash["idx1_ms"],
                        prewarmed_index_blocks=warmup.get("prewarmed_index_blocks"),
                    )
                )
    return WashRun(
        repetitions(data), index_bytes, warmup_lookups, data.memory_available_bytes, tuple(prewarm)
    )


def scan_washes_index(data: RunData) -> Verdict:
    return washed_verdict(wash_run(data))


def shared_buffers_keeps_index(data: RunData) -> Verdict:
    return kept_verdict(wash_run(data))


def huge_pages_lookups(data: RunData) -> Verdict:
    return huge_pages_lookups_verdict(wash_run(data))


def lookups_slow_without_huge_pages(data: RunData) -> Verdict:
    return lookups_without_huge_pages_verdict(wash_run(data))


def huge_pages_scan_large(data: RunData) -> Verdict:
    return scan_huge_pages_large_verdict(wash_run(data))


def huge_pages_slow_scan(data: RunData) -> Verdict:
    return scan_huge_pages_most_verdict(wash_run(data))


def larger_shared_buffers_speeds_scan(data: RunData) -> Verdict:
    return scan_speeds_up_verdict(wash_run(data))


def own_cache_beats_quarter(data: RunData) -> Verdict:
    return quarter_verdict(wash_run(data))


def prewarm_does_not_warm(data: RunData) -> Verdict:
    return prewarm_verdict(wash_run(data))
