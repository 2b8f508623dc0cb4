"""MkDocs hook: the reference pages, generated from the code at every build, never written by
hand and never committed.

- reference/cli.md: every command and option, walked from the click tree typer builds from
  `pgcachelab.cli.main.app` (what `--help` prints, so the page cannot disagree with it);
- reference/spec.md: every spec key with its type, default and description, walked from the
  pydantic models of `pgcachelab.spec.schema` (their `Field(description=...)`);
- reference/metrics.md: every key a measurement stores, from the one table of them,
  `pgcachelab.store.metric_keys` (tests/test_metric_keys.py checks the code and stored runs
  against it).

tests/test_docs_reference.py imports this file and fails when a command, an option or a key
has no description, so a new one cannot reach the site undocumented.
"""

import types
import typing
from collections.abc import Iterator

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

CLI_PAGE = "reference/cli.md"
SPEC_PAGE = "reference/spec.md"
METRICS_PAGE = "reference/metrics.md"

# The value types of workloads/values.py and spec/values.py carry their check in a
# validator, which hides the kind of value from the annotation: named here by the check's name,
# in the words the spec files use. An unknown check falls back to the annotation's own type.
CHECK_WORDS = {
    "Count": "integer",
    "Seconds": 'duration ("20s", "2min")',
    "Size": 'size ("64MB", "1GiB")',
    "_warehouses": "integer",
    "_threads": 'integer or "auto"',
    "_table_size": 'fraction of memory, or size ("2GiB")',
    "_rate_tpm": 'transactions per minute, or "off"',
    "_latency_limit_ms": "milliseconds",
    "_fraction": "fraction (0.02: ±2%)",
    "_repetitions": 'integer or "auto"',
    "_init_steps": 'pgbench init steps ("dtGvp")',
    "_weights": 'percentages ("45,43,4,4,4")',
    "version": 'major version ("9.6", "18") or bin directory',
    "_control": "boolean or major version",
    "_disk": 'disk preset, "host", or table',
    "_inspect_method": 'method ("auto", "extension/fast", ...)',
    "setting_text": "server setting value",
    "_store": "postgresql:// URL or SQLite path",
    "_step_name": "string",
    "_host_settings": "table of host settings",
    "_script_entry": '{ file = "a.sql", weight = 1 }',
}


# -- the command line ----------------------------------------------------------------------------


def cli_root():
    import typer

    from pgcachelab.cli.main import app

    return typer.main.get_command(app)


def walk_commands(command, path: tuple[str, ...] = ("pgcachelab",)) -> Iterator[tuple]:
    """(path, command) for the root and every command under it, in the order --help lists them."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        if not getattr(sub, "hidden", False):
            yield from walk_commands(sub, (*path, name))


def command_help(command) -> str:
    return (command.help or command.short_help or "").strip()


def visible_params(command) -> list:
    return [p for p in command.params if not getattr(p, "hidden", False)]


def _param_row(param) -> str:
    if param.param_type_name == "argument":
        name = f"`{param.name.upper()}`"
    else:
        name = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
    shows_default = (
        param.param_type_name == "option"
        and not param.is_flag
        and param.show_default is not False
        and param.default not in (None, (), [], PydanticUndefined)
    )
    default = f"`{param.default}`" if shows_default else ""
    envvar = f" (env `{param.envvar}`)" if getattr(param, "envvar", None) else ""
    required = " **required**" if param.required else ""
    return f"| {name}{required} | {_cell(param.help or '')}{envvar} | {default} |"


def cli_markdown(root=None) -> str:
    root = root or cli_root()
    lines = [
        "# Command reference",
        "",
        "Generated from the command line itself at every build: what `pgcachelab COMMAND"
        " --help` prints.",
        "",
    ]
    for path, command in walk_commands(root):
        depth = min(len(path), 4)
        lines += ["#" * (depth + 1) + f" `{' '.join(path)}`", "", command_help(command), ""]
        params = visible_params(command)
        if params:
            lines += ["| argument or option | meaning | default |", "|---|---|---|"]
            lines += [_param_row(p) for p in params]
            lines.append("")
    return "\n".join(lines)


# -- the spec file -------------------------------------------------------------------------------


def _unwrap(annotation):
    """The annotation without Annotated, Optional and list."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        elif origin is list:
            annotation = typing.get_args(annotation)[0]
        else:
            return annotation


def table_model(field) -> type[BaseModel] | None:
    """The model of a field that is a TOML table (or an array of tables), else None."""
    inner = _unwrap(field.annotation)
    return inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None


def _check_name(annotation) -> str | None:
    """The name of the check a value type of spec/values.py carries, if any."""
    for meta in getattr(annotation, "__metadata__", ()):
        func = getattr(meta, "func", None)
        func = getattr(func, "check", func)  # workloads/values.py's SpecOrStored
        if func is not None:
            return func.__qualname__.split(".")[0]
    return None


def _type_words(annotation) -> str:
    check = _check_name(annotation)
    if check in CHECK_WORDS:
        return CHECK_WORDS[check]
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(f'`"{v}"`' for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(_type_words(a) for a in args)
    if origin is typing.Annotated:
        return _type_words(typing.get_args(annotation)[0])
    if origin is list:
        return f"list of {_type_words(typing.get_args(annotation)[0])}"
    if origin is dict:
        return f"table of {_type_words(typing.get_args(annotation)[1])}"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "table"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _field_annotation(field):
    """The field's annotation with the metadata pydantic moved off it put back."""
    if field.metadata:
        return typing.Annotated[(field.annotation, *field.metadata)]
    return field.annotation


def field_type(field) -> str:
    return _type_words(_field_annotation(field))


def _is_duration(field) -> bool:
    return _check_name(_field_annotation(field)) == "Seconds"


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def field_default(field) -> str:
    if field.default_factory is not None or field.default is PydanticUndefined:
        return ""
    if field.default is None:
        return "unset"
    if field.default in ([], {}):
        return "empty"
    if _is_duration(field):
        return f'`"{field.default:g}s"`'
    return f"`{_toml(field.default)}`"


def key_name(name: str, field) -> str:
    return field.alias or name


def spec_tables() -> list[tuple[str, type[BaseModel], str]]:
    """(TOML header, model, what the table is) for the file itself and every table in it."""
    from pgcachelab.spec.schema import SpecFile
    from pgcachelab.workloads.parameters import PointKeys

    tables = [("top level", SpecFile, "Keys at the top of the spec file.")]
    for name, field in SpecFile.model_fields.items():
        model = table_model(field)
        if model is not None:
            many = typing.get_origin(_unwrap_annotated(field.annotation)) is list
            header = f"[[{key_name(name, field)}]]" if many else f"[{key_name(name, field)}]"
            tables.append((header, model, field.description or ""))
    tables.append(
        (
            "per point",
            PointKeys,
            (PointKeys.__doc__ or "").strip().replace("\n    ", " "),
        )
    )
    return tables


def _unwrap_annotated(annotation):
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def spec_keys(model: type[BaseModel]) -> Iterator[tuple[str, object]]:
    """(TOML key, field) of a table's own keys; nested tables are listed on their own."""
    for name, field in model.model_fields.items():
        if model.__name__ == "SpecFile" and table_model(field) is not None:
            continue
        yield key_name(name, field), field


def spec_markdown() -> str:
    lines = [
        "# Spec reference",
        "",
        "Every key of an experiment spec (a TOML file), generated at every build from the"
        " pydantic models in `src/pgcachelab/spec/schema.py` and"
        " `src/pgcachelab/workloads/parameters.py`: its type, its default"
        " and the description the model gives it. Unknown keys are refused, and values are not"
        ' coerced (`"3"` is not `3`). A workload\'s keys and the per-point keys can also be'
        " swept under `[sweep]`, or changed by a `[[ladder]]` step; which ones is checked when"
        " the spec is loaded.",
        "",
    ]
    for header, model, about in spec_tables():
        lines += [f"## {header}", "", about, ""]
        lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for key, field in spec_keys(model):
            lines.append(
                f"| `{key}` | {_cell(field_type(field))} | {field_default(field)} |"
                f" {_cell(field.description or '')} |"
            )
        lines.append("")
    return "\n".join(lines)


# -- the stored metrics --------------------------------------------------------------------------


def metrics_markdown() -> str:
    from pgcachelab.store.metric_keys import COLUMNS, METRICS

    lines = [
        "# Stored metrics",
        "",
        "What every measurement keeps in the results store, generated at every build from the"
        " one table of them, `src/pgcachelab/store/metric_keys.py`. A measurement is a row with"
        " a few typed columns and a `metrics` document (JSON) whose top-level keys are listed"
        " below; `pgcachelab export` writes both, and reports are rebuilt from them alone.",
        "",
        "## Columns",
        "",
        "| column | unit | meaning | set by |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{name}` | {_cell(key.unit)} | {_cell(key.meaning)} | {_cell(key.set_by)} |"
        for name, key in COLUMNS.items()
    ]
    lines += [
        "",
        "## Keys of `metrics`",
        "",
        "A failed measurement keeps what the runner and the instruments recorded before it"
        " failed (the last column says which), never the workload's figures nor the run's own"
        " (probes, database size, load average): a failed point's cannot be trusted.",
        "",
        "| key | unit | meaning | set by | stored for |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| `{name}` | {_cell(key.unit)} | {_cell(key.meaning)} | {_cell(key.set_by)} |"
        f" {_cell(key.when)} |"
        for name, key in METRICS.items()
    ]
    lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


# -- MkDocs --------------------------------------------------------------------------------------


def on_files(files, config):
    from mkdocs.structure.files import File

    pages = (
        (CLI_PAGE, cli_markdown()),
        (SPEC_PAGE, spec_markdown()),
        (METRICS_PAGE, metrics_markdown()),
    )
    for page, markdown in pages:
        files.append(File.generated(config, page, content=markdown))
    return files
