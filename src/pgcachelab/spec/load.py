"""Reading a spec: TOML in, an ExperimentSpec out, every value converted by the schema; and a
stored run's spec text back into the spec's model, for the readers of the run. The one place
that parses a spec's TOML."""

import functools
import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from pgcachelab.analysis.versions import control_label
from pgcachelab.errors import UserError
from pgcachelab.spec.errors import bad_value, render
from pgcachelab.spec.ladder import LadderStep
from pgcachelab.spec.plan import ExperimentSpec
from pgcachelab.spec.rules import WORKLOAD_TABLES
from pgcachelab.spec.schema import SpecFile
from pgcachelab.spec.study import study_name
from pgcachelab.spec.sweeps import first_repeat
from pgcachelab.store.run_types import RunSchedule
from pgcachelab.user_files import read_user_text
from pgcachelab.workloads.parameters import PointParameters
from pgcachelab.workloads.registry import WORKLOADS
from pgcachelab.workloads.values import show

M = TypeVar("M", bound=BaseModel)
SPEC_HINT = "give the path of an experiment TOML file, e.g. experiments/big-cache-quick.toml"
# Swept keys labelled by their converted value: a disk table by its canonical text, 9.6 as "9.6"
LABELLED_CONVERTED = ("version", "disk")


def load_spec(path: str | Path) -> ExperimentSpec:
    path = Path(path)
    try:
        # a regular file of a few MB at most: `run /dev/zero` read 23.9 GB (issue 48)
        text = read_user_text(path, "spec", SPEC_HINT)
    except OSError as error:
        raise UserError(f"cannot read spec {str(path)!r}: {error.strerror}", SPEC_HINT) from None
    except UnicodeDecodeError as error:  # `run /bin/ls` (issue 18)
        raise UserError(
            f"{path}: not a TOML text file (not UTF-8 at byte {error.start})", SPEC_HINT
        ) from None
    return parse_spec(text, path)


def parse_spec(text: str, path: Path) -> ExperimentSpec:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: not valid TOML: {error}", "fix the TOML syntax") from None
    context = {"base_dir": path.parent}
    file = validated(SpecFile, raw, path, "", context)
    points = PointReader(file, raw.get(WORKLOAD_TABLES[file.workload], {}), path, context)

    sweep_workload, sweep_resolved = {}, {}
    for key, values in file.sweep.workload().items():
        resolved = [points.values("sweep.", {key: value})[key] for value in values]
        written = resolved if key in LABELLED_CONVERTED else values
        repeat = first_repeat(written, resolved)
        if repeat:
            raise bad_value(
                path,
                f"sweep.{key}",
                repeat[0],
                f"repeats a value: the same as {show(repeat[1])}",
                "list each value once",
            )
        sweep_workload[key], sweep_resolved[key] = written, resolved
    if file.control is not False:  # the A/A control: one more version, on clusters of its own
        versions = sweep_resolved["version"]
        control = versions[-1] if file.control is True else file.control
        if control not in versions:
            raise bad_value(
                path,
                "control",
                control,
                "not one of the swept versions",
                f"use true, or one of {', '.join(versions)}",
            )
        for swept in (sweep_workload, sweep_resolved):
            swept["version"] = [*swept["version"], control_label(control)]
    ladder = [
        LadderStep(
            step.name,
            step.description,
            dict(step.settings),
            points.values(f"ladder[{position}].", step.workload()),
            dict(step.host),
        )
        for position, step in enumerate(file.ladder)
    ]

    auto = file.repetitions == "auto"
    return ExperimentSpec(
        path=path,
        text=text,
        name=file.name if file.name is not None else path.stem,
        description=file.description,
        workload=file.workload,
        repetitions=file.max_repetitions if auto else file.repetitions,
        order=file.order,
        block_by=file.block_by,
        seed=file.seed,
        pg_bin=file.server.pg_bin,
        listen_tcp=file.server.listen_tcp,
        data_checksums=file.server.data_checksums,
        memory_bytes=file.machine.memory,
        host=dict(file.machine.host),
        settings=dict(file.server.settings),
        parameters=points.fixed(),
        sweep_workload=sweep_workload,
        sweep_resolved=sweep_resolved,
        sweep_settings=dict(file.sweep.settings),
        report=file.report.model_dump(exclude_none=True),
        ladder=ladder,
        inspect=file.inspect,
        warmup_repetitions=file.warmup_repetitions,
        auto_repetitions=auto,
        target_ci=file.target_ci if auto else None,
        store=file.store,
        fleet_hosts="same" if file.fleet.host_class else file.fleet.hosts,
        fleet_max_tries=file.fleet.max_tries,
        fleet_host_class=file.fleet.host_class,
        fleet_classes=tuple(file.fleet.classes),
        study=study_name(file),
    )


def stored_spec(spec_text: str, spec_path: str) -> SpecFile | None:
    """A stored run's spec (`Run.spec_text` and `spec_path`) as the spec's model, for readers
    of the run (its ladder's steps, its workload); None when the text no longer validates (a
    run stored by an older lab whose keys have changed since). A reader then says less and
    never fails: what a report needs to stand is in the run's own record (its points,
    settings, schedule and study). Script files are not looked for: the run read them."""
    return _stored_spec(spec_text, spec_path)


def stored_schedule(spec_text: str, spec_path: str) -> RunSchedule:
    """The order, seed and repetitions a stored spec asked for: the schedule of a run stored
    before the runner recorded it with the run (analysis/run_data.py schedule_of); {} when the
    spec no longer reads."""
    spec = stored_spec(spec_text, spec_path)
    if spec is None:
        return {}
    return {
        "order": spec.order,
        "seed": spec.seed,
        "repetitions": spec.repetitions,
        "max_repetitions": None,
        "target_ci": None,
        "warmup_repetitions": spec.warmup_repetitions,
    }


@functools.lru_cache(maxsize=16)  # the same run's spec, asked by several sections
def _stored_spec(spec_text: str, spec_path: str) -> SpecFile | None:
    try:
        raw = tomllib.loads(spec_text)
        context = {"base_dir": Path(spec_path).parent, "stored_spec": True}
        return SpecFile.model_validate(raw, context=context)
    except (tomllib.TOMLDecodeError, ValidationError):
        return None


def validated(model: type[M], data: dict, path: Path, prefix: str, context: dict) -> M:
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        raise render(error, path, model, prefix) from None


class PointReader:
    """A point's workload values, read by the workload's parameters model: the fixed ones as
    the file writes them, with a sweep's or a ladder step's changes on top."""

    def __init__(self, file: SpecFile, table: dict, path: Path, context: dict):
        self.model = WORKLOADS[file.workload].parameters_type
        self.written = {**table, **file.point_keys()}
        self.path, self.context = path, context
        self.prefix = f"{WORKLOAD_TABLES[file.workload]}."

    def fixed(self) -> PointParameters:
        """Every parameter of the workload and the per-point keys, typed: what a point runs
        before its sweep's and ladder step's changes."""
        return validated(self.model, self.written, self.path, self.prefix, self.context)

    def values(self, prefix: str, changes: dict) -> dict:
        """`changes` converted exactly as the fixed values are (issue 16)."""
        point = validated(self.model, {**self.written, **changes}, self.path, prefix, self.context)
        return {key: getattr(point, key) for key in changes}
