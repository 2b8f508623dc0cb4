"""Seed 001's findings, judged on a versions run (issue 37). Pure rules over the run's samples
(cell -> version -> tps of each repetition, as studies/versions/advice.py's version_samples
gives them) and thin adapters from RunData.

The lab installs PostgreSQL 9.6 to 18 (zonky builds, clusters/installs.py): what the article
found between 8.3 and 9.5 cannot be shown here; what it found from 9.6 on is judged on the oldest
and newest versions the run measured, as the ratio of their geometric mean tps with Welch's 95%
interval on the logs (analysis/versions.py), at the most clients the run has (the article's
gains show "with enough clients"). An A/A control that finds identical clusters different more
often than chance leaves every version difference "not shown beyond the noise".
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.analysis.claims import (
    CONTRADICTED,
    NOISE,
    REPRODUCED,
    Figure,
    Verdict,
    at_least,
    at_most,
    cannot,
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
from pgcachelab.studies.versions.advice import version_samples

Samples = dict[tuple, dict[str, list[float]]]

OLDEST_INSTALLABLE = "9.6"  # zonky builds start there (clusters/installs.py)
BEFORE_INSTALLABLE = (
    f"the versions it is about are older than {OLDEST_INSTALLABLE}, the oldest the lab can "
    "install here (zonky builds, `pgcachelab pg install`)"
)
READ_ONLY, READ_WRITE = "select-only", "simple-update"  # pgbench -S, -N
# The article's second storage: 3 × 7,200 rpm SATA disks in RAID0 (machine/disk_profiles.py).
SATA_RAID = "sata-raid0-3x7200"

# The article's trends are directions over many releases, not sizes from 9.6 on (its text
# gives no figure for that span): a ratio whose 95% interval lies wholly beyond 1 shows the
# direction; one reaching across 1 does not.
NO_CHANGE = 1.0


@dataclass(frozen=True)
class Cell:
    """Where a claim looks: pgbench's mode, the scale class, and the storage it needs."""

    mode: str
    scale_class: str
    sata: bool = False  # on the SATA RAID preset; otherwise on any other disk (NVMe first)

    def text(self) -> str:
        mode = "read-only" if self.mode == READ_ONLY else "read-write"
        return f"{mode}, {self.scale_class}" + (", SATA RAID" if self.sata else "")


def _fits(cell: tuple, wanted: Cell, fixed: dict) -> bool:
    values = {**fixed, **dict(cell)}
    disk = str(values.get("disk") or "host")
    return (
        values.get("mode") == wanted.mode
        and values.get("scale_class") == wanted.scale_class
        and (disk == SATA_RAID) == wanted.sata
    )


def pick_cell(samples: Samples, wanted: Cell, fixed: dict | None = None) -> tuple | None:
    """The cell with the most clients among those matching `wanted` (the NVMe preset before
    other disks); `fixed`: the run's values of the keys it did not sweep."""
    fixed = fixed or {}
    matching = [cell for cell in samples if _fits(cell, wanted, fixed)]
    if not matching:
        return None

    def key(cell: tuple) -> tuple:
        values = {**fixed, **dict(cell)}
        # the NVMe preset before other disks, -M simple before the others (archaeology.toml
        # sweeps both protocols), then the most clients
        return (
            values.get("disk") == "nvme",
            values.get("protocol", "simple") == "simple",
            float(values.get("clients") or 0),
        )

    return max(matching, key=key)


def _measured(by_version: dict[str, list[float]]) -> list[str]:
    return [v for v in version_order(by_version) if control_base(v) is None and by_version[v]]


def _where(cell: tuple, fixed: dict) -> str:
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


def trend_figure(
    samples: Samples, wanted: Cell, fixed: dict | None = None, newest_at_most: str | None = None
) -> Figure | str:
    """The newest version's tps against the oldest's in the claim's cell (the newest up to
    `newest_at_most`), or why there is none."""
    fixed = fixed or {}
    cell = pick_cell(samples, wanted, fixed)
    if cell is None:
        return f"the run has no {wanted.text()} cell"
    measured = _measured(samples[cell])
    if newest_at_most is not None:
        order = version_order([*measured, newest_at_most])
        measured = [v for v in measured if order.index(v) <= order.index(newest_at_most)]
    if len(measured) < 2:
        upto = f" up to {newest_at_most}" if newest_at_most else ""
        return f"the run measured fewer than two versions{upto} in its {wanted.text()} cell"
    oldest, newest = measured[0], measured[-1]
    before, after = samples[cell][oldest], samples[cell][newest]
    ratio, low, high = welch_log_ratio(before, after)
    what = f"{'read-only' if wanted.mode == READ_ONLY else 'read-write'} tps {newest}/{oldest}"
    return Figure(
        f"{what} at {_where(cell, fixed)}", ratio, low, high, min(len(before), len(after))
    )


def _log_stats(values: list[float]) -> tuple[int, float, float | None]:
    logs = [math.log(v) for v in values if v and v > 0]
    return len(logs), statistics.fmean(logs), statistics.variance(logs) if len(logs) > 1 else None


def ratio_of_ratios(
    a_before: list[float], a_after: list[float], b_before: list[float], b_after: list[float]
) -> tuple[float, float | None, float | None]:
    """(a_after/a_before) / (b_after/b_before) of geometric means, with Welch's 95% interval
    on the logs over the four independent samples (None when one has fewer than two)."""
    stats = [_log_stats(v) for v in (a_before, a_after, b_before, b_after)]
    means = [mean for _, mean, _ in stats]
    difference = (means[1] - means[0]) - (means[3] - means[2])
    if any(n < 2 or variance is None for n, _, variance in stats):
        return math.exp(difference), None, None
    shares = [variance / n for n, _, variance in stats if variance is not None]
    error = math.sqrt(sum(shares))
    if error == 0:
        same = math.exp(difference)
        return same, same, same
    freedom = sum(shares) ** 2 / sum(
        s**2 / (n - 1) for s, (n, _, _) in zip(shares, stats, strict=True)
    )
    half = t95(freedom) * error
    return math.exp(difference), math.exp(difference - half), math.exp(difference + half)


def read_write_over_read_only(
    samples: Samples, scale_class: str, fixed: dict | None = None
) -> Figure | str:
    """Read-write's newest/oldest ratio over read-only's, at the same clients and versions."""
    fixed = fixed or {}
    write_cell = pick_cell(samples, Cell(READ_WRITE, scale_class), fixed)
    if write_cell is None:
        return f"the run has no read-write, {scale_class} cell"
    read_cell = tuple((k, READ_ONLY if k == "mode" else v) for k, v in write_cell)
    if read_cell not in samples:
        return f"the run has no read-only cell beside its read-write one at {scale_class}"
    both = [v for v in _measured(samples[write_cell]) if samples[read_cell].get(v)]
    if len(both) < 2:
        return "the run measured fewer than two versions in both modes"
    oldest, newest = both[0], both[-1]
    w, r = samples[write_cell], samples[read_cell]
    ratio, low, high = ratio_of_ratios(w[oldest], w[newest], r[oldest], r[newest])
    counts = [len(w[oldest]), len(w[newest]), len(r[oldest]), len(r[newest])]
    return Figure(
        f"read-write {newest}/{oldest} over read-only's at {_where(write_cell, fixed)}",
        ratio,
        low,
        high,
        min(counts),
    )


@dataclass(frozen=True)
class VersionClaim:
    key: str
    words: str
    where: str
    figure: str
    rule: str
    article: str
    decide: Callable[[Samples, dict], Verdict]


def _older_only(samples: Samples, fixed: dict) -> Verdict:
    return cannot(BEFORE_INSTALLABLE)


def _read_write_rose(samples: Samples, fixed: dict) -> Verdict:
    figure = trend_figure(samples, Cell(READ_WRITE, "medium"), fixed)
    if isinstance(figure, str):
        return cannot(figure)
    return at_least(figure, NO_CHANGE, READ_WRITE_ROSE.rule)


def _read_write_outgrew_read_only(samples: Samples, fixed: dict) -> Verdict:
    figure = read_write_over_read_only(samples, "medium", fixed)
    if isinstance(figure, str):
        return cannot(figure)
    return at_least(figure, NO_CHANGE, READ_WRITE_OUTGREW.rule)


def _large_read_write_regressed(samples: Samples, fixed: dict) -> Verdict:
    figure = trend_figure(samples, Cell(READ_WRITE, "large"), fixed, newest_at_most="11")
    if isinstance(figure, str):
        return cannot(f"{figure}: the regression is between 9.5 and 11")
    return at_most(figure, NO_CHANGE, LARGE_REGRESSION.rule)


def _sata_read_only_fell(samples: Samples, fixed: dict) -> Verdict:
    figure = trend_figure(samples, Cell(READ_ONLY, "large", sata=True), fixed)
    if isinstance(figure, str):
        return cannot(
            f'{figure}: it needs the SATA RAID disk (disk = "{SATA_RAID}", emulated: root)'
        )
    return at_most(figure, NO_CHANGE, SATA_FELL.rule)


READ_ONLY_SCALED = VersionClaim(
    "read-only-9.2-9.5",
    "9.2 and 9.5 improved read-only scalability (fast-path locking in 9.2, lock scalability "
    "in 9.5); single-client read-only fell from 47k to 42k tps in 9.2",
    "results, NVMe SSD / read-only; summary",
    "read-only tps 9.2/9.1 and 9.5/9.4 at many clients",
    "cannot be shown: the versions are older than 9.6",
    "a clear rise in 9.2, a much clearer one in 9.5 (medium and large scales)",
    _older_only,
)
READ_WRITE_ROSE = VersionClaim(
    "read-write-rose",
    "read-write throughput improved about 2× over the years, in many versions and steps",
    "results, NVMe SSD / read-write; summary",
    "read-write tps, newest/oldest version measured, medium scale, most clients",
    "the ratio's 95% interval at or above ×1 (the part of the trend from 9.6 on: the article's "
    "×2 spans 8.3 to 13 and its text gives no figure for 9.6 on); wholly below ×1: contradicted",
    "medium: 27k → 63k tps (more than ×2); small: 52k → 75k",
    _read_write_rose,
)
READ_WRITE_OUTGREW = VersionClaim(
    "read-write-vs-read-only",
    "read-only gained in 9.2 and 9.5, read-write over the years in many steps: from 9.6 on, "
    "read-write rises more than read-only",
    "summary",
    "(read-write newest/oldest) / (read-only newest/oldest), medium scale, most clients",
    "the ratio of ratios' 95% interval at or above ×1; wholly below: contradicted",
    "read-only: ×2 to 9.5, then flat; read-write: ×2 in many steps",
    _read_write_outgrew_read_only,
)
LARGE_REGRESSION = VersionClaim(
    "read-write-large-9.5-11",
    "on the largest data set read-write improved overall, but there seems to be some "
    "regression between 9.5 and 11",
    "results, NVMe SSD / read-write, large data set",
    "read-write tps, newest version up to 11 / oldest, large scale, most clients",
    "the ratio's 95% interval at or below ×1 (the part from 9.6; 9.5 cannot be installed); "
    "wholly above ×1: contradicted",
    "a regression between 9.5 and 11 (chart only)",
    _large_read_write_regressed,
)
SATA_FELL = VersionClaim(
    "sata-read-only-9.6",
    "on SATA RAID, large read-only throughput is noisy but seems to fall over time, especially "
    "since 9.6: a possible regression in 9.6",
    "results, SATA RAID / read-only; summary",
    "read-only tps newest/oldest on the SATA RAID disk, large scale, most clients",
    "the ratio's 95% interval at or below ×1 (the fall since 9.6; 9.5 → 9.6 itself cannot be "
    "installed); wholly above ×1: contradicted",
    "falling since 9.6 (chart only; 3 × 7,200 rpm SATA disks in RAID0)",
    _sata_read_only_fell,
)
SATA_GROUP_COMMIT = VersionClaim(
    "sata-read-write-9.1",
    "on SATA RAID read-write jumped in 9.1 from 100 to about 600 tps, and rose to over "
    "6,000 tps on the small data set with the group commit of 9.1 and 9.2",
    "results, SATA RAID / read-write; summary",
    "read-write tps 9.1/9.0 and 9.2/9.1 on SATA RAID",
    "cannot be shown: the versions are older than 9.6",
    "100 → 600 tps (9.1); 600 → 6,000 tps (small)",
    _older_only,
)
CLAIMS = (
    READ_ONLY_SCALED,
    READ_WRITE_ROSE,
    READ_WRITE_OUTGREW,
    LARGE_REGRESSION,
    SATA_FELL,
    SATA_GROUP_COMMIT,
)


def with_control(verdict: Verdict, samples: Samples) -> Verdict:
    """A run whose A/A control finds identical clusters different more often than chance
    (issue 19) decides no version difference: its verdicts become noise."""
    if verdict.outcome not in (REPRODUCED, CONTRADICTED):
        return verdict
    control = control_verdict(control_changes(samples))
    if control is None or control.trustworthy:
        return verdict
    return Verdict(
        NOISE,
        f"{verdict.reason}; but the run's A/A control told identical clusters apart in "
        f"{control.significant} of {control.cells} cells, more than chance allows",
        verdict.figure,
    )


def judge(claim: VersionClaim, samples: Samples, fixed: dict | None = None) -> Verdict:
    """The claim's verdict on the samples; `fixed`: the run's values of unswept keys."""
    return with_control(claim.decide(samples, fixed or {}), samples)


# Adapters from a stored run.

FIXED_KEYS = ("mode", "scale_class", "clients", "disk", "protocol")


def fixed_values(data: RunData) -> dict:
    """The run's values of the keys a claim looks at that it did not sweep."""
    if not data.points:
        return {}
    workload = data.points[0].point.workload
    return {k: workload.get(k) for k in FIXED_KEYS if k not in data.swept_keys}


def claim_judge(claim: VersionClaim) -> Callable[[RunData], Verdict]:
    def judge_run(data: RunData) -> Verdict:
        if "version" not in data.swept_keys:
            return cannot("the run sweeps no versions")
        return judge(claim, version_samples(data), fixed_values(data))

    judge_run.__name__ = f"judge_{claim.key.replace('-', '_').replace('.', '_')}"
    return judge_run
