"""What a check says: a finding with a severity, or the reason it could not look."""

from dataclasses import asdict, dataclass

# "ok" marks a check that looked and found nothing to change; it never fails a CI run.
SEVERITIES = ("ok", "info", "warning", "critical")
FAIL_ON_CHOICES = ("info", "warning", "critical")

DOCS = "https://www.postgresql.org/docs/current/"
SEED_000 = "seed 000 (Cache can be different)"
SEED_002 = "seed 002 (PostgreSQL in TPC-C)"


@dataclass(frozen=True)
class Finding:
    check: str  # stable id, e.g. "host.thp.enabled"
    severity: str  # one of SEVERITIES
    found: str  # what was observed
    recommendation: str = ""  # what to do and why, one line
    source: str = ""  # the PostgreSQL docs page or the seed behind the recommendation
    fix: str = ""  # the exact command or setting
    evidence: str = ""  # what the lab itself measured that bears on it (a stored run)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Skipped:
    check: str
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


Outcome = Finding | Skipped


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


def fails(outcomes: list[Outcome], fail_on: str) -> bool:
    """True when a finding at or above `fail_on` exists (the CLI's exit code 1)."""
    threshold = severity_rank(fail_on)
    return any(isinstance(o, Finding) and severity_rank(o.severity) >= threshold for o in outcomes)


def ok(check: str, found: str) -> Finding:
    return Finding(check, "ok", found)
