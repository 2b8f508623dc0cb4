"""Version to version (seed 001): each version's throughput against the previous one's.

Pure functions. A cell is one combination of the other swept parameters (scale class, mode,
clients...). The repetitions of the two versions are independent samples, so the ratio of their
geometric means gets Welch's interval on the logarithms: ratios multiply, and the variances of
the two versions need not be equal. A change is significant when its interval excludes 1.

An A/A control (issue 19) is one version run a second time as an independent cluster, under
the label "<version> control": its pair of cells measures the noise floor of the run. It stays
out of the version-to-version chain and is compared with its twin alone.
"""

import math
import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pgcachelab.analysis.summary import t95
from pgcachelab.store.records import Cell


@dataclass(frozen=True)
class VersionChange:
    cell: Cell  # (key, value) pairs of the other swept parameters
    previous: str
    version: str
    ratio: float  # geometric mean of version / geometric mean of previous
    ci_low: float | None
    ci_high: float | None
    samples: tuple[int, int]  # repetitions of previous, of version

    @property
    def significant(self) -> bool:
        """The interval excludes 1; one of zero width (equal repetitions) says nothing of the
        spread and is never significant (issue 46)."""
        if self.ci_low is None or self.ci_high is None or self.ci_low == self.ci_high:
            return False
        return self.ci_high < 1 or self.ci_low > 1


CONTROL_SUFFIX = " control"
# More significant control cells than this share make the run untrustworthy: at the 95% level
# an A/A pair is significant by chance in about one cell in twenty, so a higher share says the
# clusters differ by more than chance (placement, drift the rounds did not spread).
CONTROL_SIGNIFICANT_LIMIT = 0.05


def control_label(version: str) -> str:
    return f"{version}{CONTROL_SUFFIX}"


def control_base(label: str) -> str | None:
    """The version an A/A control label repeats, or None for an ordinary version."""
    return label.removesuffix(CONTROL_SUFFIX) if str(label).endswith(CONTROL_SUFFIX) else None


def server_version_of(label: str) -> str:
    """The major version (or bin directory) a version label runs: a control runs its twin's."""
    return control_base(label) or label


def version_order(versions: Iterable[str]) -> list[str]:
    """Major versions in release order ("9.6" before "10"); other names after, as given; a
    control right after the version it repeats."""

    def key(version: str) -> tuple[int, tuple[int, ...], int]:
        base = control_base(str(version))
        twin = 1 if base is not None else 0
        try:
            return (0, tuple(int(part) for part in str(base or version).split(".")), twin)
        except ValueError:
            return (1, (), twin)

    return sorted(dict.fromkeys(versions), key=key)


@dataclass(frozen=True)
class LogMoments:
    """What Welch's interval needs of a sample: the count, mean and variance of its logs."""

    n: int
    mean: float
    variance: float | None  # None with one value


def log_moments(values: Iterable[float | None]) -> LogMoments:
    logs = [math.log(v) for v in values if v and v > 0]
    if not logs:
        raise ValueError("no positive values to compare")
    variance = statistics.variance(logs) if len(logs) > 1 else None
    return LogMoments(len(logs), statistics.fmean(logs), variance)


def welch_log_ratio(
    before: list[float], after: list[float]
) -> tuple[float, float | None, float | None]:
    """after / before as a ratio of geometric means, with its 95% interval (None if n < 2)."""
    return welch_from_moments(log_moments(before), log_moments(after))


def welch_from_moments(
    before: LogMoments, after: LogMoments
) -> tuple[float, float | None, float | None]:
    """welch_log_ratio from the samples' moments, which a caller comparing the same sample
    many times keeps (the step finder: issue 24)."""
    difference = after.mean - before.mean
    if before.n < 2 or after.n < 2:
        return math.exp(difference), None, None
    assert before.variance is not None and after.variance is not None  # n >= 2 each
    share_before = before.variance / before.n
    share_after = after.variance / after.n
    error = math.sqrt(share_before + share_after)
    if error == 0:
        return math.exp(difference), math.exp(difference), math.exp(difference)
    # Welch-Satterthwaite degrees of freedom, fractional as they come: t95 is exact for any df
    freedom = (share_before + share_after) ** 2 / (
        share_before**2 / (before.n - 1) + share_after**2 / (after.n - 1)
    )
    half = t95(freedom) * error
    return math.exp(difference), math.exp(difference - half), math.exp(difference + half)


def version_changes(samples: dict[Cell, dict[str, list[float]]]) -> list[VersionChange]:
    """`samples`: cell -> version -> throughput of each repetition.

    Each version is compared with the closest older version measured in the same cell; an
    A/A control is left out (control_changes compares it with its twin).
    """
    changes = []
    for cell, by_version in samples.items():
        measured = [
            v for v in version_order(by_version) if by_version[v] and control_base(v) is None
        ]
        for previous, version in zip(measured, measured[1:], strict=False):
            ratio, low, high = welch_log_ratio(by_version[previous], by_version[version])
            counts = (len(by_version[previous]), len(by_version[version]))
            changes.append(VersionChange(cell, previous, version, ratio, low, high, counts))
    return changes


def control_changes(samples: dict[Cell, dict[str, list[float]]]) -> list[VersionChange]:
    """Per cell, the A/A control against the version it repeats (the twin as `previous`)."""
    changes = []
    for cell, by_version in samples.items():
        for label, values in by_version.items():
            base = control_base(label)
            if base is None or not values or not by_version.get(base):
                continue
            ratio, low, high = welch_log_ratio(by_version[base], values)
            counts = (len(by_version[base]), len(values))
            changes.append(VersionChange(cell, base, label, ratio, low, high, counts))
    return changes


@dataclass(frozen=True)
class ControlVerdict:
    cells: int  # control cells with an interval
    significant: int

    @property
    def share(self) -> float:
        return self.significant / self.cells if self.cells else 0.0

    @property
    def trustworthy(self) -> bool:
        return self.share <= CONTROL_SIGNIFICANT_LIMIT


def control_verdict(changes: list[VersionChange]) -> ControlVerdict | None:
    """How often the A/A pair differed significantly; None when no cell has an interval."""
    with_interval = [c for c in changes if c.ci_low is not None]
    if not with_interval:
        return None
    return ControlVerdict(len(with_interval), sum(c.significant for c in with_interval))


@dataclass(frozen=True)
class Disagreement:
    cell: Cell
    previous: str
    version: str
    ratio: float  # this run's
    other_ratio: float  # the other run's


def direction_disagreements(
    changes: list[VersionChange], other: list[VersionChange]
) -> tuple[int, list[Disagreement]]:
    """Changes significant in both runs (same cell and versions), and those of them whose
    directions differ: one run saw faster what the other saw slower."""
    theirs = {(c.cell, c.previous, c.version): c for c in other if c.significant}
    both, disagreeing = 0, []
    for change in changes:
        twin = theirs.get((change.cell, change.previous, change.version))
        if twin is None or not change.significant:
            continue
        both += 1
        if (change.ratio > 1) != (twin.ratio > 1):
            disagreeing.append(
                Disagreement(change.cell, change.previous, change.version, change.ratio, twin.ratio)
            )
    return both, disagreeing


# Settings that differ between any two clusters and say nothing about performance: paths, file
# names, the version itself, where the server listens.
_INCIDENTAL = re.compile(
    r"^(server_version.*|data_directory|config_file|hba_file|ident_file|external_pid_file"
    r"|krb_server_keyfile|log_directory|log_filename|port|unix_socket_.*|listen_addresses"
    r"|ssl_.*|lc_.*|.*_locale|application_name|cluster_name|data_directory_mode)$"
)


def differing_settings(
    by_version: dict[str, dict[str, str]], form: Callable[[str], object] = lambda value: value
) -> dict[str, dict[str, str]]:
    """name -> version -> value, for the settings every version has but not with one value.

    The lab applies the same spec to every version, but each version brings its own defaults
    (checkpoint_completion_target, data checksums from 18, ...): they belong next to the ratios.
    Settings that only some versions have are new features, not changed defaults: left out.
    `form` gives the value two spellings of one value share (guc.canonical_shown_value).
    """
    if not by_version:
        return {}
    common = set.intersection(*(set(settings) for settings in by_version.values()))
    differing = {}
    for name in sorted(common):
        if _INCIDENTAL.match(name):
            continue
        values = {v: by_version[v][name] for v in version_order(by_version)}
        if len({form(value) for value in values.values()}) > 1:
            differing[name] = values
    return differing
