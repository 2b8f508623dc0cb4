"""Version to version (seed 001): each version's throughput against the previous one's.

Pure functions. A cell is one combination of the other swept parameters (scale class, mode,
clients...). The repetitions of the two versions are independent samples, so the ratio of their
geometric means gets Welch's interval on the logarithms: ratios multiply, and the variances of
the two versions need not be equal. A change is significant when its interval excludes 1.
"""

import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.analysis.summary import t95


@dataclass(frozen=True)
class VersionChange:
    cell: tuple  # (key, value) pairs of the other swept parameters
    previous: str
    version: str
    ratio: float  # geometric mean of version / geometric mean of previous
    ci_low: float | None
    ci_high: float | None
    samples: tuple[int, int]  # repetitions of previous, of version

    @property
    def significant(self) -> bool:
        return self.ci_low is not None and (self.ci_high < 1 or self.ci_low > 1)


def version_order(versions) -> list[str]:
    """Major versions in release order ("9.6" before "10"); other names after, as given."""

    def key(version: str):
        try:
            return (0, tuple(int(part) for part in str(version).split(".")))
        except ValueError:
            return (1, ())

    return sorted(dict.fromkeys(versions), key=key)


def welch_log_ratio(
    before: list[float], after: list[float]
) -> tuple[float, float | None, float | None]:
    """after / before as a ratio of geometric means, with its 95% interval (None if n < 2)."""
    logs_before = [math.log(v) for v in before if v and v > 0]
    logs_after = [math.log(v) for v in after if v and v > 0]
    if not logs_before or not logs_after:
        raise ValueError("no positive values to compare")
    difference = statistics.fmean(logs_after) - statistics.fmean(logs_before)
    if len(logs_before) < 2 or len(logs_after) < 2:
        return math.exp(difference), None, None
    share_before = statistics.variance(logs_before) / len(logs_before)
    share_after = statistics.variance(logs_after) / len(logs_after)
    error = math.sqrt(share_before + share_after)
    if error == 0:
        return math.exp(difference), math.exp(difference), math.exp(difference)
    # Welch-Satterthwaite degrees of freedom, fractional as they come: t95 is exact for any df
    freedom = (share_before + share_after) ** 2 / (
        share_before**2 / (len(logs_before) - 1) + share_after**2 / (len(logs_after) - 1)
    )
    half = t95(freedom) * error
    return math.exp(difference), math.exp(difference - half), math.exp(difference + half)


def version_changes(samples: dict[tuple, dict[str, list[float]]]) -> list[VersionChange]:
    """`samples`: cell -> version -> throughput of each repetition.

    Each version is compared with the closest older version measured in the same cell.
    """
    changes = []
    for cell, by_version in samples.items():
        measured = [v for v in version_order(by_version) if by_version[v]]
        for previous, version in zip(measured, measured[1:], strict=False):
            ratio, low, high = welch_log_ratio(by_version[previous], by_version[version])
            counts = (len(by_version[previous]), len(by_version[version]))
            changes.append(VersionChange(cell, previous, version, ratio, low, high, counts))
    return changes


# Settings that differ between any two clusters and say nothing about performance: paths, file
# names, the version itself, where the server listens.
_INCIDENTAL = re.compile(
    r"^(server_version.*|data_directory|config_file|hba_file|ident_file|external_pid_file"
    r"|krb_server_keyfile|log_directory|log_filename|port|unix_socket_.*|listen_addresses"
    r"|ssl_.*|lc_.*|.*_locale|application_name|cluster_name|data_directory_mode)$"
)


def differing_settings(
    by_version: dict[str, dict[str, str]], form: Callable = lambda value: value
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
