"""A spec's server settings checked against the catalogue of the server that will run them
(pg_settings: units, ranges, enum values, context), before anything is measured (issue 16)."""

import difflib

from pgcachelab.clusters.guc import SettingInfo, canonical_value, check_setting_value
from pgcachelab.spec.errors import bad_value, problem
from pgcachelab.spec.ladder import resolve_memory_shares
from pgcachelab.spec.plan import ExperimentSpec
from pgcachelab.spec.sweeps import first_repeat
from pgcachelab.workloads.values import show


def validate_settings(
    spec: ExperimentSpec,
    catalogue: dict[str, SettingInfo],
    applicable_contexts: set[str] | None = None,
    target: str = "the server",
    skip: frozenset[str] = frozenset(),
) -> None:
    """Check every setting name and value against the server's catalogue.

    `applicable_contexts` limits which settings may be set at all (an existing server: only
    those a session can set, since the lab never changes its configuration).
    """
    memory = spec.memory_for_shares or spec.memory_bytes
    named = [(f"server.settings.{n}", n, [v]) for n, v in spec.settings.items()]
    named += [(f"sweep.settings.{n}", n, vs) for n, vs in spec.sweep_settings.items()]
    named += [
        (f"ladder[{i}].settings.{n}", n, [v])
        for i, step in enumerate(spec.ladder)
        for n, v in step.settings.items()
    ]
    named = [
        (key, name, [resolve_memory_shares({name: v}, memory)[name] for v in values])
        for key, name, values in named
    ]
    for key, name, values in named:
        if name in skip:
            continue
        info = catalogue.get(name)
        if info is None:
            close = _close_names(name, catalogue)
            raise problem(
                spec.path,
                key,
                f'unknown server setting "{name}"',
                f"did you mean {close}?" if close else "see pg_settings for the names",
            )
        if info.context == "internal":
            raise problem(
                spec.path, key, f'"{name}" is read-only (internal)', "remove it from the spec"
            )
        if applicable_contexts is not None and info.context not in applicable_contexts:
            how = "a restart" if info.context == "postmaster" else "a configuration change"
            raise problem(
                spec.path,
                key,
                f'"{name}" needs {how} of {target}, which the lab never changes',
                "run without --dsn so the lab manages its own cluster, or drop the setting",
            )
        for value in values:
            why = check_setting_value(info, value)
            if why:
                raise bad_value(spec.path, key, value, why, "fix the value")
        repeat = first_repeat(values, [canonical_value(v, info) for v in values])
        if repeat:
            value, earlier = repeat
            raise bad_value(
                spec.path,
                key,
                value,
                f"repeats a value: the same as {show(earlier)}",
                "list each value once",
            )


def _close_names(name: str, catalogue: dict) -> str:
    return ", ".join(difflib.get_close_matches(name, catalogue, n=2))
