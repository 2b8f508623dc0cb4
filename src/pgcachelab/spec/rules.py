"""Rules across a spec's tables, run by SpecFile's validator once every table is valid.

Each rule is a function of the validated file that raises `refuse(...)` at the key to fix;
a new rule is one more function in RULES. Rules within one table are that table's validators
(schema.py); what a server accepts is checked against its catalogue (server_settings.py).
"""

from typing import TYPE_CHECKING, cast

from pgcachelab.machine.host_tunables import TUNABLES
from pgcachelab.workloads.values import refuse

if TYPE_CHECKING:
    from pgcachelab.spec.schema import SpecFile
    from pgcachelab.workloads.parameters import PgbenchTable

WORKLOAD_TABLES = {"pgbench": "pgbench", "cache-wash": "cache_wash", "tpcc": "tpcc"}
SWEEPABLE_WORKLOAD_KEYS = (
    "scale",
    "scale_class",
    "clients",
    "threads",
    "duration",
    "transactions",
    "mode",
    "rate",
    "protocol",
    "checkpoint",
    "os_cache",
    "prewarm",
    "version",
    "inspect_method",
    "disk",
)
CACHE_WASH_SWEEPABLE = ("os_cache", "prewarm", "lookups", "inspect_method", "disk")
TPCC_SWEEPABLE = (
    "warehouses",
    "clients",
    "threads",
    "duration",
    "transactions",
    "warmup",
    "weights",
    "home_warehouse",
    "rate_tpm",
    "mode",
    "terminal_times",
    "checkpoint",
    "os_cache",
    "prewarm",
    "version",
    "inspect_method",
    "disk",
)
SWEEPABLE = {
    "pgbench": SWEEPABLE_WORKLOAD_KEYS,
    "cache-wash": CACHE_WASH_SWEEPABLE,
    "tpcc": TPCC_SWEEPABLE,
}
# Keys whose values change the data or the server a point needs: points are grouped by them, so
# that data is initialised (and a version's cluster created) once per group, not once per point.
DATA_KEYS = ("version", "scale", "scale_class", "init_steps", "warehouses")
# What a ladder step may change besides server settings: not the data or the server version.
LADDER_WORKLOAD_KEYS = {
    workload: set(keys) - set(DATA_KEYS) for workload, keys in SWEEPABLE.items()
}


def workload_tables(spec: "SpecFile") -> None:
    """Parameters under another workload's table would be silently ignored."""
    for workload, table in WORKLOAD_TABLES.items():
        if workload == spec.workload or getattr(spec, table) is None:
            continue
        if table == "pgbench":
            raise refuse(
                table,
                f"the {spec.workload} workload takes no [pgbench] table",
                f"put its parameters under [{WORKLOAD_TABLES[spec.workload]}]",
            )
        raise refuse(
            table,
            f'[{table}] needs workload = "{workload}"',
            f'set workload = "{workload}" or remove the table',
        )


def sweepable_keys(spec: "SpecFile") -> None:
    sweepable = SWEEPABLE[spec.workload]
    for key in spec.sweep.workload():
        if key not in sweepable:
            raise refuse(
                ("sweep", key),
                f"unknown sweep key for the {spec.workload} workload",
                f"sweep one of {', '.join(sweepable)}, or a server setting under [sweep.settings]",
            )


def auto_repetitions_for_pgbench(spec: "SpecFile") -> None:
    if spec.repetitions == "auto" and spec.workload != "pgbench":
        raise refuse(
            "repetitions",
            f'invalid value "auto": it follows the tps of pgbench, '
            f"not the figures of {spec.workload}",
            "give a number of repetitions",
        )


def inspect_method_sweep_needs_inspect(spec: "SpecFile") -> None:
    if "inspect_method" in spec.sweep.workload() and spec.inspect is None:
        raise refuse(
            ("sweep", "inspect_method"),
            "sweeping the inspect method needs [inspect]",
            'add an [inspect] table (e.g. every = "1s")',
        )


def alternation(spec: "SpecFile") -> None:
    """Alternating windows need pgbench's per-second progress and room for several pairs."""
    inspect = spec.inspect
    if inspect is None or not inspect.alternate_s:
        return
    at, alternate = ("inspect", "alternate"), f'invalid value "{inspect.alternate_s:g}s"'
    if spec.workload != "pgbench":
        raise refuse(
            at,
            f"{alternate}: not for the {spec.workload} workload",
            "alternate works with pgbench runs; remove it",
        )
    if not inspect.every_s:
        raise refuse(at, f"{alternate}: alternates nothing without every", 'set every = "1s" too')
    if inspect.alternate_s < 2 * inspect.every_s or inspect.alternate_s < 2:
        raise refuse(
            at,
            f"{alternate}: too short for whole samples",
            'use at least 2s and twice every, e.g. "5s"',
        )
    duration = cast("PgbenchTable", spec.parameters()).duration
    if duration < 4 * inspect.alternate_s:
        raise refuse(
            at,
            f"{alternate}: fewer than two pairs of windows fit in the {duration:g}s run",
            "make it at most a quarter of pgbench.duration",
        )


def ladder_steps(spec: "SpecFile") -> None:
    """Each step named once, changing only what the workload lets a step change."""
    allowed, names = LADDER_WORKLOAD_KEYS[spec.workload], set()
    for position, step in enumerate(spec.ladder):
        if step.name in names:
            raise refuse(
                ("ladder", position, "name"),
                f'invalid value "{step.name}": repeats a step name',
                "name each once",
            )
        names.add(step.name)
        for key in step.workload():
            if key not in allowed:
                raise refuse(
                    ("ladder", position, key),
                    f"a {spec.workload} ladder step cannot set it",
                    f"steps set settings = {{...}} and {', '.join(sorted(allowed))}",
                )


def ladder_or_sweep(spec: "SpecFile") -> None:
    for step in spec.ladder:
        both: list[tuple[str, ...]] = [
            ("settings", n) for n in step.settings if n in spec.sweep.settings
        ]
        both += [(key,) for key in step.workload() if key in spec.sweep.workload()]
        if both:
            raise refuse(
                ("sweep", *both[0]),
                "both the sweep and a ladder step set it",
                "set it in one place: the ladder or the sweep",
            )


def coupled_host_settings(spec: "SpecFile") -> None:
    """Steps are cumulative: a pair the kernel couples (vm.dirty_bytes, vm.dirty_ratio) set in
    two places would be in force together, and writing one zeroes the other."""
    places: list[tuple[tuple, dict]] = [(("machine", "host"), spec.machine.host)]
    places += [(("ladder", i, "host"), step.host) for i, step in enumerate(spec.ladder)]
    seen: dict[str, tuple] = {}
    for at, host in places:
        for name in host:
            other = TUNABLES[name].pair
            if other in seen:
                raise refuse(
                    (*at, name),
                    f"cannot be set with {other} (set at {_dotted(seen[other])}): the kernel "
                    "zeroes one when the other is written",
                    "keep one of them in the whole spec",
                )
            seen[name] = (*at, name)


def _dotted(at: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in at).lstrip(".")


def one_server_or_versions(spec: "SpecFile") -> None:
    if spec.server.pg_bin is not None and "version" in spec.sweep.workload():
        raise refuse(
            ("server", "pg_bin"),
            "the spec sweeps version: each point names its server",
            "remove server.pg_bin, or the version sweep",
        )


def control_of_a_version_sweep(spec: "SpecFile") -> None:
    if spec.control is False:
        return
    versions = spec.sweep.workload().get("version")
    if not versions:
        raise refuse(
            "control",
            "an A/A control repeats a version of a version sweep",
            "sweep versions ([sweep] version = [...]), or remove it",
        )


def scale_or_scale_class(spec: "SpecFile") -> None:
    if spec.workload != "pgbench":
        return
    swept, table = spec.sweep.workload(), cast("PgbenchTable", spec.parameters())
    has_class = "scale_class" in swept or table.scale_class is not None
    if has_class and ("scale" in swept or "scale" in table.model_fields_set):
        raise refuse(
            ("sweep", "scale_class"),
            "both a scale and a scale class are given",
            "use one of them: a scale class sets the scale",
        )


def blocks_order(spec: "SpecFile") -> None:
    """order = "blocks" runs the points in blocks of a swept key's values: which key, named."""
    if spec.order != "blocks":
        if spec.block_by is not None:
            raise refuse(
                "block_by",
                f'invalid value "{spec.block_by}": only used with order = "blocks"',
                'set order = "blocks" or remove block_by',
            )
        return
    swept = [*spec.sweep.settings, *spec.sweep.workload()]
    if spec.block_by is None:
        raise refuse(
            "order",
            'order = "blocks" needs block_by, the swept key whose values make the blocks',
            f'add e.g. block_by = "{swept[0] if swept else "huge_pages"}"',
        )
    if "version" in spec.sweep.workload() or spec.ladder:
        raise refuse(
            "order",
            'invalid value "blocks": a version sweep or a ladder runs in rounds of its own',
            'use order = "interleaved", "random" or "sequential"',
        )
    if spec.block_by not in swept:
        raise refuse(
            "block_by",
            f'invalid value "{spec.block_by}": not a swept key of this spec',
            f"name one of: {', '.join(swept) or '(none: add a sweep)'}",
        )
    if spec.block_by in DATA_KEYS:
        raise refuse(
            "block_by",
            f'invalid value "{spec.block_by}": points that need other data already run one '
            "data set after another, all its rounds together",
            "block by a server setting or a workload key that keeps the data",
        )


def fleet_classes(spec: "SpecFile") -> None:
    """A run's units go to one named class, or are spread evenly over listed classes."""
    fleet = spec.fleet
    if fleet.host_class is not None and fleet.classes:
        raise refuse(
            "fleet.classes",
            "a run pinned to host_class cannot also be spread over classes",
            "give host_class (every unit on that class) or classes (every point on each)",
        )
    if fleet.host_class is not None and "hosts" in fleet.model_fields_set and fleet.hosts != "same":
        raise refuse(
            "fleet.host_class",
            f'host_class keeps every unit on one class: hosts must be "same", not "{fleet.hosts}"',
            'set hosts = "same" (or leave it out) or remove host_class',
        )
    if not fleet.classes:
        return
    if fleet.hosts != "spread":
        raise refuse(
            "fleet.classes",
            'classes spread every point over several classes: hosts must be "spread"',
            'set hosts = "spread", or name one class with host_class',
        )
    if len(set(fleet.classes)) != len(fleet.classes):
        raise refuse("fleet.classes", "a class is listed twice", "list each class once")
    n = len(fleet.classes)
    if isinstance(spec.repetitions, int) and spec.repetitions % n:
        raise refuse(
            "repetitions",
            f"invalid value {spec.repetitions}: {n} classes each measure every point equally"
            " often only with a multiple of that many repetitions",
            f"set repetitions = {n * max(1, spec.repetitions // n)} or list fewer classes",
        )


RULES = (
    workload_tables,
    sweepable_keys,
    auto_repetitions_for_pgbench,
    inspect_method_sweep_needs_inspect,
    alternation,
    ladder_steps,
    ladder_or_sweep,
    coupled_host_settings,
    one_server_or_versions,
    control_of_a_version_sweep,
    scale_or_scale_class,
    blocks_order,
    fleet_classes,
)
