"""Seed 001's findings, judged on a versions run (issues 37 and 46). Pure rules over the run's
samples (cell -> version -> tps of each repetition, as studies/versions/advice.py's
version_samples gives them) and thin adapters from RunData.

The lab installs 9.3, 9.5 and 9.6 to 18 from Maven Central and builds any other version from a
release tarball (clusters/installs.py). A claim about particular versions (9.2's read-only
gain, 9.5's, the regression between 9.5 and 11) is judged on those versions when the run has
them, and otherwise says which were missing and why: "cannot be shown here" for a version the
machine could not obtain (the install's own reason, kept with the run), "not measured" for one
the spec does not sweep. What the article found over the years is judged on the part of its span
the run reaches, from the oldest version it measured to the newest up to 13 (the article's
newest: it ran 8.3 to 13 with pgbench 13), at the most clients the run has
(the article's gains show "with enough clients"), as the ratio of geometric mean tps with
Welch's 95% interval on the logs (analysis/versions.py), written in the article's direction
(above 1: what the article says). Every claim's threshold comes from the article's own word or
figure through analysis/qualifiers.py. An A/A control that finds identical clusters different
more often than chance leaves every version difference "not shown beyond the noise".
"""

import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.analysis import qualifiers
from pgcachelab.analysis.claims import (
    CONTRADICTED,
    DECIDING,
    BadFigure,
    Figure,
    Verdict,
    cannot,
    combine,
    noise,
    not_measured,
    weakened,
    with_reason,
)
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.statistics import t95
from pgcachelab.analysis.versions import (
    control_base,
    control_changes,
    control_verdict,
    version_order,
    welch_log_ratio,
)
from pgcachelab.store.records import Cell as SweptCell
from pgcachelab.studies.versions.advice import version_samples

Samples = dict[SweptCell, dict[str, list[float]]]
# The run's values of the keys a claim looks at that it did not sweep (FIXED_KEYS, as the
# workload stored them), and "versions", "unavailable", "cores" and "compilers" (fixed_values)
Fixed = dict[str, object]

FULL_SPEC = "archaeology.toml sweeps every major version from 8.3 to 18"
# The article's machine: 2 x E5-2620 v4, 16 cores and 32 threads. Its read-only gains in 9.2
# and 9.5 are lock scalability (fast-path locking, LWLock atomics), which shows with many
# clients on many cores: on fewer cores a shortfall is the machine's, not a finding.
ARTICLE_CORES = 16
# The article measured 8.3 to 13 ("the newest pgbench, from PostgreSQL 13"): its trends say
# nothing of 14 to 18, so a trend is judged up to 13.
ARTICLE_NEWEST = "13"
READ_ONLY, READ_WRITE = "select-only", "simple-update"  # pgbench -S, -N
# The article's second storage: 3 × 7,200 rpm SATA disks in RAID0 (machine/disk_profiles.py).
SATA_RAID = "sata-raid0-3x7200"
NOT_IN_QUICK = "not measured by the quick spec (the full spec archaeology.toml does)"
# An "about N×" over 8.3 → 13 judged from a later version: a rise here wholly below the band
# may be the article's rise made before it, which the run does not have; one wholly above the
# band is more than the article's whole span rose, and contradicts it.


def before_the_span(oldest: str) -> str:
    return (
        f"the article's figure spans 8.3 to 13: a smaller rise from {oldest} on does not "
        f"contradict it, the rest may lie before {oldest}, which this run does not have"
    )


@dataclass(frozen=True)
class Cell:
    """Where a claim looks: pgbench's mode, the scale class, and the storage it needs."""

    mode: str
    scale_class: str
    sata: bool = False  # on the SATA RAID preset; otherwise on any other disk (NVMe first)

    def text(self) -> str:
        mode = "read-only" if self.mode == READ_ONLY else "read-write"
        return f"{mode}, {self.scale_class}" + (", SATA RAID" if self.sata else "")


def _fits(cell: SweptCell, wanted: Cell, fixed: Fixed) -> bool:
    values = {**fixed, **dict(cell)}
    disk = str(values.get("disk") or "host")
    return (
        values.get("mode") == wanted.mode
        and values.get("scale_class") == wanted.scale_class
        and (disk == SATA_RAID) == wanted.sata
    )


def pick_cell(samples: Samples, wanted: Cell, fixed: Fixed | None = None) -> SweptCell | None:
    """The cell with the most clients among those matching `wanted` (the NVMe preset before
    other disks); `fixed`: the run's values of the keys it did not sweep."""
    fixed = fixed or {}
    matching = [cell for cell in samples if _fits(cell, wanted, fixed)]
    if not matching:
        return None

    def key(cell: SweptCell) -> tuple[bool, bool, float]:
        values = {**fixed, **dict(cell)}
        # the NVMe preset before other disks, -M simple before the others (archaeology.toml
        # sweeps both protocols), then the most clients
        return (
            values.get("disk") == "nvme",
            values.get("protocol", "simple") == "simple",
            _number(values.get("clients")),
        )

    return max(matching, key=key)


def _measured(by_version: dict[str, list[float]], newest_at_most: str | None) -> list[str]:
    measured = [v for v in version_order(by_version) if control_base(v) is None and by_version[v]]
    if newest_at_most is None:
        return measured
    order = version_order([*measured, newest_at_most])
    return [v for v in measured if order.index(v) <= order.index(newest_at_most)]


def _where(cell: SweptCell, fixed: Fixed) -> str:
    values = {**fixed, **dict(cell)}
    clients = values.get("clients")
    disk, protocol = values.get("disk"), values.get("protocol")
    parts = [
        str(values.get("scale_class")),
        f"{clients} clients" if clients else "",
        f"-M {protocol}" if protocol else "",
        # the article's NVMe was an Intel Optane 900P: a run without an emulated disk says so
        f"disk {disk}" if disk else "this machine's disk",
    ]
    return ", ".join(p for p in parts if p)


def _number(value: object) -> float:
    """A stored count ("clients") as a number to order by; 0 for none."""
    return float(value) if isinstance(value, int | float | str) and value else 0.0


def _unavailable(fixed: Fixed) -> dict[str, str]:
    """Version -> why the machine could not obtain it."""
    found = fixed.get("unavailable")
    return found if isinstance(found, dict) else {}


def _swept_versions(fixed: Fixed) -> list[str] | None:
    """The versions the run's spec swept; None when not known."""
    found = fixed.get("versions")
    return found if isinstance(found, list) else None


def _compilers(fixed: Fixed) -> dict[str, str]:
    """Version -> the compiler that built its server."""
    found = fixed.get("compilers")
    return found if isinstance(found, dict) else {}


def _mode_text(mode: str) -> str:
    return "read-only" if mode == READ_ONLY else "read-write"


def missing_versions(
    needed: list[str], by_version: dict[str, list[float]], fixed: Fixed
) -> Verdict | None:
    """None when the cell has measurements of every version in `needed`; else the verdict
    that says why not, version by version: a version the machine could not obtain makes the
    claim "cannot be shown here" (with the install's reason), one the spec does not sweep "not
    measured", one swept whose points all failed noise."""
    unavailable = _unavailable(fixed)
    swept = _swept_versions(fixed)
    missing = [v for v in needed if not by_version.get(v)]
    if not missing:
        return None
    reasons = []
    for version in missing:
        if version in unavailable:
            reasons.append(f"{version}: cannot be measured here ({unavailable[version]})")
        elif swept is not None and version not in swept:
            reasons.append(f"{version}: not swept by this run's spec ({FULL_SPEC})")
        else:
            reasons.append(f"{version}: no measurement in this cell (its points failed)")
    text = "the run lacks PostgreSQL " + "; ".join(reasons)
    if any(v in unavailable for v in missing):
        return cannot(text)
    if swept is not None and all(v not in swept for v in missing):
        return not_measured(text)
    return noise(text)


def step_figure(
    samples: Samples,
    wanted: Cell,
    after: str,
    before: list[str],
    fixed: Fixed,
    falling: bool = False,
) -> tuple[Figure | Verdict, str]:
    """tps of version `after` against the first of `before` the cell has (the version just
    before `after` first), after/before for a rise, before/after for a fall; with the
    versions passed over and why. A Verdict instead of a Figure when the cell or `after` is
    missing, or none of `before`."""
    cell = pick_cell(samples, wanted, fixed)
    if cell is None:
        return _not_in_run(f"the run has no {wanted.text()} cell"), ""
    by_version = samples[cell]
    lacking = missing_versions([after], by_version, fixed)
    if lacking is not None:
        return lacking, ""
    measured = [v for v in before if by_version.get(v)]
    if not measured:
        verdict = missing_versions(before, by_version, fixed)
        assert verdict is not None  # none of `before` has measurements
        return verdict, ""
    chosen = measured[0]
    passed_over = before[: before.index(chosen)]
    skipped = missing_versions(passed_over, by_version, fixed) if passed_over else None
    older, newer = by_version[chosen], by_version[after]
    ratio, low, high = welch_log_ratio(older, newer)
    pair = f"{chosen}/{after}" if falling else f"{after}/{chosen}"
    what = f"{_mode_text(wanted.mode)} tps {pair} at {_where(cell, fixed)}"
    figure = _oriented(what, ratio, low, high, min(len(older), len(newer)), falling)
    note = f"{chosen} stands for {', '.join(passed_over)}: {skipped.reason}" if skipped else ""
    return figure, note


def older_than(version: str) -> list[str]:
    """Every major version older than `version`, newest first: the ones a step to it may
    start at."""
    from pgcachelab.clusters.installs import MAJORS

    known = list(MAJORS)
    return list(reversed(known[: known.index(version)])) if version in known else []


def _oriented(
    what: str, ratio: float, low: float | None, high: float | None, n: int, falling: bool
) -> Figure:
    """The figure in the article's direction: after/before for a rise, before/after for a
    fall (its interval inverted with it)."""
    if not falling:
        return Figure(what, ratio, low, high, n)
    if low is None or high is None:
        return Figure(what, 1 / ratio, repetitions=n)
    return Figure(what, 1 / ratio, 1 / high, 1 / low, n)


def trend_figure(
    samples: Samples,
    wanted: Cell,
    fixed: Fixed | None = None,
    newest_at_most: str | None = ARTICLE_NEWEST,
    falling: bool = False,
) -> Figure | str:
    """The newest version's tps against the oldest's in the claim's cell (the newest up to
    `newest_at_most`), newest/oldest for a rise and oldest/newest for a fall (`falling`), or
    why there is none."""
    fixed = fixed or {}
    cell = pick_cell(samples, wanted, fixed)
    if cell is None:
        return f"the run has no {wanted.text()} cell"
    measured = _measured(samples[cell], newest_at_most)
    if len(measured) < 2:
        upto = f" up to {newest_at_most}" if newest_at_most else ""
        return f"the run measured fewer than two versions{upto} in its {wanted.text()} cell"
    oldest, newest = measured[0], measured[-1]
    before, after = samples[cell][oldest], samples[cell][newest]
    # equal repetitions give a zero-width interval here: the Figure keeps it, and it decides
    # nothing (analysis/claims.py)
    ratio, low, high = welch_log_ratio(before, after)
    pair = f"{oldest}/{newest}" if falling else f"{newest}/{oldest}"
    what = f"{_mode_text(wanted.mode)} tps {pair} at {_where(cell, fixed)}"
    return _oriented(what, ratio, low, high, min(len(before), len(after)), falling)


def _log_stats(values: list[float]) -> tuple[int, float, float | None]:
    logs = [math.log(v) for v in values if v and v > 0]
    return len(logs), statistics.fmean(logs), statistics.variance(logs) if len(logs) > 1 else None


def ratio_of_ratios(
    a_before: list[float], a_after: list[float], b_before: list[float], b_after: list[float]
) -> tuple[float, float | None, float | None]:
    """(a_after/a_before) / (b_after/b_before) of geometric means, with Welch's 95% interval
    on the logs over the four independent samples (None when one has fewer than two, or when
    all four have no spread at all: no interval rather than one of zero width)."""
    stats = [_log_stats(v) for v in (a_before, a_after, b_before, b_after)]
    means = [mean for _, mean, _ in stats]
    difference = (means[1] - means[0]) - (means[3] - means[2])
    if any(n < 2 or variance is None for n, _, variance in stats):
        return math.exp(difference), None, None
    shares = [variance / n for n, _, variance in stats if variance is not None]
    error = math.sqrt(sum(shares))
    if error == 0:
        return math.exp(difference), None, None
    freedom = sum(shares) ** 2 / sum(
        s**2 / (n - 1) for s, (n, _, _) in zip(shares, stats, strict=True) if s
    )
    half = t95(freedom) * error
    return math.exp(difference), math.exp(difference - half), math.exp(difference + half)


def gain_over_gain(
    samples: Samples,
    first: Cell,
    second_scale_class: str | None = None,
    second_mode: str | None = None,
    fixed: Fixed | None = None,
    oldest_at_least: str | None = None,
) -> Figure | str:
    """The first cell's newest/oldest tps (newest up to 13) over the second's, at the same
    clients, disk and versions: the second cell is the first with its scale class or mode
    replaced."""
    fixed = fixed or {}
    first_cell = pick_cell(samples, first, fixed)
    if first_cell is None:
        return f"the run has no {first.text()} cell"
    replaced = {"scale_class": second_scale_class, "mode": second_mode}
    second_cell = tuple((k, replaced.get(k) or v) for k, v in first_cell)
    second = Cell(second_mode or first.mode, second_scale_class or first.scale_class, first.sata)
    if second_cell not in samples:
        return f"the run has no {second.text()} cell beside its {first.text()} one"
    a, b = samples[first_cell], samples[second_cell]
    both = [v for v in _measured(a, ARTICLE_NEWEST) if b.get(v)]
    if oldest_at_least is not None:  # the claim is about the years after that version
        order = version_order([*both, oldest_at_least])
        both = [v for v in both if order.index(v) >= order.index(oldest_at_least)]
    if len(both) < 2:
        since = f" from {oldest_at_least}" if oldest_at_least else ""
        return f"the run measured fewer than two versions{since} up to 13 in both cells"
    oldest, newest = both[0], both[-1]
    ratio, low, high = ratio_of_ratios(a[oldest], a[newest], b[oldest], b[newest])
    counts = [len(a[oldest]), len(a[newest]), len(b[oldest]), len(b[newest])]
    where = _where(first_cell, fixed)
    if second_mode:  # "read-write tps 13/9.6 over read-only's at medium, 16 clients, ..."
        what = f"{_mode_text(first.mode)} tps {newest}/{oldest} over {_mode_text(second_mode)}'s at"
    else:  # "read-write tps 13/9.6 at small over at medium, 16 clients, ..."
        what = f"{_mode_text(first.mode)} tps {newest}/{oldest} at {first.scale_class} over at"
        where = where.replace(first.scale_class, second.scale_class, 1)
    what = f"{what} {where}"
    return Figure(what, ratio, low, high, min(counts))


def read_write_over_read_only(
    samples: Samples, scale_class: str, fixed: Fixed | None = None
) -> Figure | str:
    """Read-write's newest/oldest ratio over read-only's, at the same clients and versions."""
    return gain_over_gain(
        samples,
        Cell(READ_WRITE, scale_class),
        second_mode=READ_ONLY,
        fixed=fixed,
        oldest_at_least="9.5",
    )


@dataclass(frozen=True)
class VersionClaim:
    key: str
    words: str  # the article's words, translated, quoted faithfully
    where: str
    figure: str
    article: str  # the article's own figure
    qualifier: str  # its word's key in analysis/qualifiers.py
    gist: str  # the claim in a few words, for the rule's text
    decide: Callable[["VersionClaim", Samples, Fixed], Verdict]
    n: float | None = None  # the article's number the qualifier needs ("about" 2)
    caveat: str = ""  # what the rule adds to the table's band

    @property
    def rule(self) -> str:
        rule = qualifiers.QUALIFIERS[self.qualifier].rule(self.gist, self.n)
        return f"{rule}; {self.caveat}" if self.caveat else rule

    def graded(self, figure: Figure, caveat: bool = True) -> Verdict:
        """The figure judged by the claim's qualifier and the article's number; the caveat
        said after the rule (not for each part of a combined claim)."""
        verdict = qualifiers.judge(figure, self.qualifier, self.gist, self.n)
        return with_reason(verdict, self.caveat) if caveat and self.caveat else verdict


def _judged_step(claim: VersionClaim, figure: Figure | Verdict, note: str) -> Verdict:
    if not isinstance(figure, Figure):
        return with_reason(figure, claim.caveat) if claim.caveat else figure
    verdict = claim.graded(figure)
    return with_reason(verdict, note) if note else verdict


def _on_few_cores(verdict: Verdict, fixed: Fixed) -> Verdict:
    """A scalability gain short of the article's band on fewer cores than the article's is
    the machine's doing: not a contradiction."""
    cores = fixed.get("cores")
    if verdict.outcome == CONTRADICTED and isinstance(cores, int) and cores < ARTICLE_CORES:
        return weakened(
            verdict,
            f"lock scalability shows with many clients on many cores: this machine has "
            f"{cores}, the article's {ARTICLE_CORES} (32 threads)",
        )
    return verdict


def _read_only_step(
    after: str, scale_class: str
) -> Callable[[VersionClaim, Samples, Fixed], Verdict]:
    def decide(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
        figure, note = step_figure(
            samples, Cell(READ_ONLY, scale_class), after, older_than(after), fixed
        )
        return _on_few_cores(_judged_step(claim, figure, note), fixed)

    return decide


def _group_commit(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
    cell = pick_cell(samples, Cell(READ_WRITE, "small", sata=True), fixed)
    if cell is None:
        return not_measured(
            f'the run has no read-write, small cell on disk = "{SATA_RAID}": {NOT_IN_QUICK}'
        )
    figure, note = step_figure(samples, Cell(READ_WRITE, "small", sata=True), "9.2", ["9.1"], fixed)
    return _judged_step(claim, figure, note)


def _not_in_run(figure: str, measures: str = "") -> Verdict:
    return not_measured(f"{figure}: not measured by this run's spec{measures}")


def _about_the_article(claim: VersionClaim, figure: Figure, oldest: str) -> Verdict:
    """ "About N×" over the article's 8.3 → 13, judged from the oldest version the run has:
    wholly below the band is the part before it, not a contradiction (unless it is 8.3)."""
    verdict = claim.graded(figure, caveat=False)
    low, _ = qualifiers.QUALIFIERS[claim.qualifier].band(claim.n)
    below = figure.ci_high is not None and figure.ci_high < low
    if verdict.outcome == CONTRADICTED and below and oldest != "8.3":
        verdict = weakened(verdict, before_the_span(oldest))
    return with_reason(verdict, claim.caveat)


def _oldest_in(figure: Figure) -> str:
    """The older version of a trend figure's "newest/oldest" pair."""
    pair = figure.what.split(" tps ", 1)[1].split(" ", 1)[0]
    return pair.split("/")[1]


def _rise(scale_class: str) -> Callable[[VersionClaim, Samples, Fixed], Verdict]:
    def decide(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
        figure = trend_figure(samples, Cell(READ_WRITE, scale_class), fixed)
        if isinstance(figure, str):
            return _not_in_run(figure)
        return _about_the_article(claim, figure, _oldest_in(figure))

    return decide


def _read_write_outgrew_read_only(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
    figure = read_write_over_read_only(samples, "medium", fixed)
    if isinstance(figure, str):
        return _not_in_run(figure)
    return claim.graded(figure)


def _large_read_write_regressed(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
    """9.5 against 11 where the run has both; else the nearest it has (the oldest version up
    to 11 for 9.5, the newest up to 11 for 11), saying which stood in and why."""
    cell = pick_cell(samples, Cell(READ_WRITE, "large"), fixed)
    if cell is not None and samples[cell].get("9.5") and samples[cell].get("11"):
        step, note = step_figure(
            samples, Cell(READ_WRITE, "large"), "11", ["9.5"], fixed, falling=True
        )
        return _judged_step(claim, step, note)
    figure = trend_figure(
        samples, Cell(READ_WRITE, "large"), fixed, newest_at_most="11", falling=True
    )
    if isinstance(figure, str):
        return _not_in_run(
            figure, " (archaeology-quick.toml and archaeology.toml measure 9.5 and 11)"
        )
    verdict = claim.graded(figure)
    lacking = missing_versions(["9.5", "11"], samples[cell] if cell else {}, fixed)
    if lacking is None:
        return verdict
    return with_reason(verdict, f"other versions stand in: {lacking.reason}")


def _sata_read_only_fell(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
    figure = trend_figure(samples, Cell(READ_ONLY, "large", sata=True), fixed, falling=True)
    if isinstance(figure, str):
        return not_measured(f'{figure} (disk = "{SATA_RAID}"): {NOT_IN_QUICK}')
    return claim.graded(figure)


def _sata_gains_smaller(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
    parts = []
    for scale_class in ("medium", "large"):
        figure = gain_over_gain(
            samples, Cell(READ_WRITE, "small", sata=True), scale_class, None, fixed, "9.3"
        )
        if isinstance(figure, str):
            return not_measured(f'{figure} (disk = "{SATA_RAID}"): {NOT_IN_QUICK}')
        parts.append((scale_class, claim.graded(figure, caveat=False)))
    return with_reason(combine(parts), claim.caveat)


SMALLER_MACHINE_REASON = (
    "not measured by any spec of this study: the article's second machine has 4 cores and 8 GB "
    "against its first's 16 cores and 64 GB; a second run of archaeology.toml on a machine "
    "emulated that much smaller (a memory cgroup of 1/8 the memory, which [machine] memory "
    "gives, and a cpuset of 1/4 the cores, which the lab does not offer yet: this machine's 2 "
    "cores would be 1) would measure it, with a rule comparing the two runs' ratios"
)


def _smaller_machine(claim: VersionClaim, samples: Samples, fixed: Fixed) -> Verdict:
    return not_measured(SMALLER_MACHINE_REASON)


READ_ONLY_9_2 = VersionClaim(
    "read-only-9.2",
    "a significant increase in throughput in 9.2, which included a number of performance "
    "improvements, e.g. fast-path locking; single-client throughput actually drops, from 47k "
    "tps to only about 42k, but with more clients the improvement in 9.2 is quite clear",
    "results, NVMe SSD / read-only, small data set",
    "read-only tps 9.2/9.1 (or the newest older version the run has), small scale, most clients",
    "small: a significant rise in 9.2 with more clients (one client: 47k → only about 42k tps)",
    "greatly",
    "read-only on the small set rose greatly in 9.2",
    _read_only_step("9.2", "small"),
    caveat=(
        "9.1 and 9.2 come from a source build (pg install --source); below the band on fewer "
        "than the article's 16 cores: noise, not contradicted"
    ),
)
READ_ONLY_9_5 = VersionClaim(
    "read-only-9.5",
    "for the read-only workload there is a moderate speedup in 9.2 and a significant speedup "
    "in 9.5, thanks to scalability optimisations (medium data set: a much clearer improvement "
    "in 9.5, most likely thanks to the lock scalability improvements)",
    "results, NVMe SSD / read-only, medium data set; summary",
    "read-only tps 9.5/9.4 (or the newest older version the run has), medium scale, most clients",
    "medium: a much clearer improvement in 9.5; summary: a significant speedup in 9.5 (charts "
    "only, no figure)",
    "greatly",
    "read-only on the medium set rose greatly in 9.5",
    _read_only_step("9.5", "medium"),
    caveat=(
        "9.4 comes from a source build only: from 9.3 the step holds 9.4's changes too; below "
        "the band on fewer than the article's 16 cores: noise, not contradicted"
    ),
)
READ_WRITE_ROSE = VersionClaim(
    "read-write-rose",
    "for the read-write workload performance improved about 2× over time, in many versions / "
    "steps (medium data set: from about 27k to 63k tps, more than double)",
    "results, NVMe SSD / read-write, medium data set; summary",
    "read-write tps, newest version up to 13 / oldest measured, medium scale, most clients",
    "about ×2 over 8.3 → 13; medium: about 27k → 63k tps (×2.33)",
    "about",
    "read-write rose about ×2",
    _rise("medium"),
    n=2.0,
    caveat=(
        "measured from the oldest version the run has to 13 (the article's newest); wholly "
        "below the band from a version after 8.3: noise, not contradicted"
    ),
)
READ_WRITE_SMALL = VersionClaim(
    "read-write-small-52k-75k",
    "on the small data set read-write shows a modest improvement, from about 52k to 75k tps "
    "with enough clients",
    "results, NVMe SSD / read-write, small data set",
    "read-write tps, newest version up to 13 / oldest measured, small scale, most clients",
    "about 52k → 75k tps (×1.44) over 8.3 → 13",
    "about",
    "read-write on the small set rose about ×1.44",
    _rise("small"),
    n=75 / 52,
    caveat=(
        "measured from the oldest version the run has to 13; wholly below the band from a "
        "version after 8.3: noise, not contradicted"
    ),
)
READ_WRITE_OUTGREW = VersionClaim(
    "read-write-vs-read-only",
    "for read-only there is a moderate speedup in 9.2 and a significant one in 9.5, while "
    "read-write improved about 2× over time, in many versions / steps; the lab's reading: "
    "after 9.5 read-write keeps rising where read-only's gains are behind it",
    "summary",
    "(read-write newest up to 13/oldest from 9.5) / (read-only's), medium scale, most clients",
    "read-only: a moderate speedup in 9.2, a significant one in 9.5; read-write: about ×2 "
    "in many steps (no figure for 9.6 → 13)",
    "direction",
    "from 9.5 read-write rose more than read-only",
    _read_write_outgrew_read_only,
)
LARGE_REGRESSION = VersionClaim(
    "read-write-large-9.5-11",
    "on the largest data set read-write shows a similar overall improvement, but there seems "
    "to be some regression between 9.5 and 11",
    "results, NVMe SSD / read-write, large data set",
    "read-write tps, oldest measured / newest up to 11 (a regression above ×1), large scale, "
    "most clients",
    "a regression between 9.5 and 11 (chart only, no figure)",
    "direction",
    "read-write on the large set fell up to 11",
    _large_read_write_regressed,
)
SATA_FELL = VersionClaim(
    "sata-read-only-9.6",
    "on SATA RAID, on the large data set read-only throughput is somewhat noisy, but seems to "
    "actually fall over time, especially since PostgreSQL 9.6: some kind of regression "
    "(summary: a lot of variability / noise and a possible regression in 9.6)",
    "results, SATA RAID / read-only; summary",
    "read-only tps oldest / newest up to 13 (a fall above ×1) on the SATA RAID disk, large "
    "scale, most clients",
    "falling since 9.6 (chart only, no figure; 3 × 7,200 rpm SATA disks in RAID0)",
    "direction",
    "read-only on SATA RAID fell from 9.6",
    _sata_read_only_fell,
    caveat="from the oldest version the run has to the newest up to 13",
)
SATA_GROUP_COMMIT = VersionClaim(
    "sata-read-write-9.1",
    "on SATA RAID read-write on the small data set grows from about 600 tps to over 6,000 "
    "tps, probably thanks to the group commit improvements in 9.1 and 9.2 (summary: a huge "
    "speedup in 9.1, throughput suddenly jumping from 100 tps to about 600 tps)",
    "results, SATA RAID / read-write, small data set; summary",
    "read-write tps 9.2/9.1 on SATA RAID, small scale, most clients",
    "about 600 → over 6,000 tps (small); 100 → about 600 tps in 9.1: 9.1's 600 to 9.2's over 6,000",
    "at least",
    "read-write on SATA RAID (small) rose ×10 or more in 9.2",
    _group_commit,
    n=10.0,
    caveat="9.1 and 9.2 come from a source build (pg install --source)",
)
SATA_SMALLER_GAINS = VersionClaim(
    "sata-read-write-medium-large",
    "on SATA RAID the medium and large data sets show a similar but smaller read-write "
    "improvement, because the storage also has to serve the reads and writes of data blocks "
    "(only writes on the medium set, whose data fits in RAM; reads as well on the large one, "
    "so the maximum throughput is even lower)",
    "results, SATA RAID / read-write, medium and large data sets",
    "(read-write small newest up to 13/oldest) / (medium's), and / (large's), on the SATA "
    "RAID disk, most clients",
    "similar but smaller than the small set's about 600 → over 6,000 tps (chart only)",
    "direction",
    "on SATA RAID the small set gained more than the medium and large ones",
    _sata_gains_smaller,
    caveat=(
        "both parts (medium, large) must show it; judged from 9.3 on, after the article's "
        "group commit gains (9.1, 9.2): its reason, the storage serving the data blocks' I/O, "
        "holds for any gain"
    ),
)
SMALLER_MACHINE = VersionClaim(
    "smaller-machine",
    "a second, much smaller machine, with only 4 cores and 8 GB of RAM, generally shows the "
    "same improvements / regressions, only less pronounced",
    "hardware",
    "each trend's ratio on a machine emulated smaller, against the same on the full one",
    "the same trends, less pronounced (no figure)",
    "direction",
    "a smaller machine shows the same trends, smaller",
    _smaller_machine,
)
CLAIMS = (
    READ_ONLY_9_2,
    READ_ONLY_9_5,
    READ_WRITE_ROSE,
    READ_WRITE_SMALL,
    READ_WRITE_OUTGREW,
    LARGE_REGRESSION,
    SATA_FELL,
    SATA_GROUP_COMMIT,
    SATA_SMALLER_GAINS,
    SMALLER_MACHINE,
)


def with_control(verdict: Verdict, samples: Samples) -> Verdict:
    """A run whose A/A control finds identical clusters different more often than chance
    (issue 19) decides no version difference: its deciding verdicts become noise."""
    control = control_verdict(control_changes(samples))
    if control is None or control.trustworthy:
        return verdict
    if verdict.outcome not in DECIDING:
        return verdict
    return weakened(
        verdict,
        f"the run's A/A control told identical clusters apart in {control.significant} of "
        f"{control.cells} cells, more than chance allows",
    )


_PAIR = re.compile(r"tps (\S+?)/(\S+?) ")
_COMPILER = re.compile(r"^(\S+).*?\)\s+(\d+)\.(\d+)")


def compiler_release(words: str) -> str:
    """A compiler as far as its code generation goes: 'gcc 4.4' (before 5 the second number
    was the release), 'gcc 7', 'gcc 14'; the words themselves when they do not parse."""
    match = _COMPILER.match(words)
    if not match:
        return words
    name, major, minor = match.groups()
    return f"{name} {major}.{minor}" if int(major) < 5 else f"{name} {major}"


def with_compilers(verdict: Verdict, fixed: Fixed) -> Verdict:
    """Two versions built by different compilers differ by the compiler too: the article built
    every version with one (gcc 9.2.0), and otj's 9.3 and 9.5 (gcc 4.1), zonky's 9.6 and 10
    (gcc 4.4) and 11 to 17 (gcc 7.5) and the wheel's 18 (gcc 14) do not; a deciding verdict
    between two of them is not the versions' alone."""
    compilers = _compilers(fixed)
    if verdict.outcome not in DECIDING or verdict.figure is None:
        return verdict
    pair = _PAIR.search(verdict.figure.what)
    if pair is None:
        return verdict
    first, second = pair.groups()
    if first not in compilers or second not in compilers:
        return verdict
    if compiler_release(compilers[first]) == compiler_release(compilers[second]):
        return verdict
    return weakened(
        verdict,
        f"the two servers were built by different compilers ({first}: {compilers[first]}; "
        f"{second}: {compilers[second]}), where the article built every version with one "
        "(gcc 9.2.0): build both from the same source toolchain (pg install VERSION "
        "--from-source) to compare the versions alone",
    )


def judge(claim: VersionClaim, samples: Samples, fixed: Fixed | None = None) -> Verdict:
    """The claim's verdict on the samples; `fixed`: the run's values of unswept keys (and the
    run's versions, those it could not obtain, the compilers, this machine's cores)."""
    fixed = fixed or {}
    try:
        verdict = claim.decide(claim, samples, fixed)
    except BadFigure as bad:  # a failed measurement: say so, never judge around it
        return noise(f"the run's figure cannot be judged: {bad}")
    return with_control(with_compilers(verdict, fixed), samples)


# Adapters from a stored run.

FIXED_KEYS = ("mode", "scale_class", "clients", "disk", "protocol")


def fixed_values(data: RunData) -> Fixed:
    """The run's values of the keys a claim looks at that it did not sweep; and what a claim
    about particular versions needs to say why one is missing: the versions the spec swept,
    those the machine could not obtain (with the install's reason), this machine's cores."""
    if not data.points:
        return {}
    workload = data.points[0].point.workload.record()  # the keys as stored, by name
    fixed: Fixed = {k: workload.get(k) for k in FIXED_KEYS if k not in data.swept_keys}
    target = data.run.target or {}
    fixed["versions"] = sorted({str(r.point.swept.get("version")) for r in data.points})
    fixed["unavailable"] = dict(target.get("unavailable") or {})
    fixed["cores"] = (data.run.environment or {}).get("cores")
    fixed["compilers"] = compiled_by(data)
    return fixed


def compiled_by(data: RunData) -> dict[str, str]:
    """Each version's compiler, in its server's own words (`select version()` at its first
    turn): "gcc (GCC) 4.1.2 20080704 (Red Hat 4.1.2-52)"."""
    found: dict[str, str] = {}
    for result in data.points:
        version = str(result.point.swept.get("version"))
        for measurement in result.ok:
            words = (measurement.metrics.get("version_switch") or {}).get("server")
            if words and version not in found:
                found[version] = str(words).split(" compiled by ", 1)[-1].split(", 64-bit")[0]
    return found


def claim_judge(claim: VersionClaim) -> Callable[[RunData], Verdict]:
    def judge_run(data: RunData) -> Verdict:
        if "version" not in data.swept_keys:
            return not_measured("the run sweeps no versions")
        return judge(claim, version_samples(data), fixed_values(data))

    judge_run.__name__ = f"judge_{claim.key.replace('-', '_').replace('.', '_')}"
    return judge_run
