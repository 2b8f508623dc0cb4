"""A stored run's target and environment, and its cache snapshots, as the type checker sees
them: the JSON that clusters/targets.py's describe(), probes/environment.py's
collect_environment() and analysis/cache_composition.py's compact() write, and that reports,
`doctor` and `--resume` read back by key (issue 50).

Every key is optional (total=False): each kind of target writes its own keys (a --dsn server
its conninfo, a version sweep its versions), and runs stored before a key existed lack it. A
TypedDict names the keys the lab reads; its writer may store more.
"""

from typing import TypedDict


class VersionRound(TypedDict):
    """One round of a version sweep, per data group: the order its versions ran in."""

    round: int
    group: str
    versions: list[str]


class RunSchedule(TypedDict, total=False):
    """How the run chose its order and repetitions (experiments/runner.py's schedule_record)."""

    order: str  # sequential, interleaved, random or blocks
    block_by: str  # order = "blocks": the swept key of a block
    seed: int | None
    repetitions: int | str  # a count, or "auto"
    max_repetitions: int | None
    target_ci: float | None
    warmup_repetitions: int
    version_rounds: list[VersionRound]


class RunEnvironment(TypedDict, total=False):
    """The machine and tools a run was recorded on (probes/environment.py)."""

    server_version: str
    server_source: str
    pgbench: str
    pgbench_version: str | None
    kernel: str
    os: str
    cpu_model: str | None
    cores: int | None
    memory_total_bytes: int | None
    python: str
    lab_version: str
    git_commit: str | None
    hostname: str
    collected_at: float
    schedule: RunSchedule


class VersionInstall(TypedDict, total=False):
    """One version of a version sweep's target: where its server came from."""

    bin_dir: str
    source: str
    server_version: str
    install: dict[str, object]  # clusters/installs.py's record: compiler, cflags, ...


class RunTarget(TypedDict, total=False):
    """The server a run measured (clusters/targets.py's describe()): a cluster the lab
    manages ("managed"), one per version of a version sweep, or an existing server."""

    kind: str  # "managed" or "existing"
    bin_dir: str | None  # None for a version sweep: each version has its own
    source: str  # where the binaries came from; "versions" for a version sweep
    listen_tcp: bool
    memory_limit_bytes: int | None
    keep_data: bool
    data_checksums: bool | None
    emulated_disk: bool
    disk_override: str | None  # --disk: recorded, so --resume uses it again
    # a version sweep's
    versions: dict[str, VersionInstall]
    skipped_settings: dict[str, list[str]]  # version -> settings it lacks
    translated_settings: dict[str, dict[str, str]]  # version -> {setting: its name there}
    unavailable: dict[str, str]  # version -> why it is not installed
    pgbench: str
    clusters: str
    # an existing server's (--dsn), without its secrets
    conninfo: dict[str, str]


class SettingRow(TypedDict, total=False):
    """One row of pg_settings as a point's server reported it (probes/settings.py)."""

    setting: str
    unit: str | None
    vartype: str
    context: str
    source: str  # "default", "override" (the server computed it), "configuration file", ...
    normalised: float | str  # in base units (bytes, ms) where the setting has a unit


# A point's server settings: pg_settings by name
ServerSettings = dict[str, SettingRow]


class CachedRelation(TypedDict, total=False):
    """One relation fork of a compacted cache snapshot (analysis/cache_composition.py)."""

    name: str  # schema-qualified, with its fork when not main
    kind: str | None
    buffers: int  # in shared_buffers
    dirty: int
    size_bytes: int | None
    os_cached_bytes: int | None  # None: the data directory was not readable


class OtherRelations(TypedDict):
    """The relations past a compacted snapshot's top ones, summed."""

    relations: int
    buffers: int
    os_cached_bytes: int


class SnapshotData(TypedDict, total=False):
    """A cache snapshot as stored (analysis/cache_composition.py's compact), with the
    sampler's CPU time of the polling backend when it measured one."""

    method: str
    mode: str | None
    block_size: int
    buffers_total: int
    buffers_used: int
    buffers_dirty: int
    os_cache_note: str | None
    relations: list[CachedRelation]
    other: OtherRelations
    server_cpu_ms: float
