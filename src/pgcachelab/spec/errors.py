"""A spec's errors as one line each: `file: key: invalid value X: why`, then a hint (STYLE.md 4).

pydantic reports every error with the path of its key; the first one (the first bad key in the
order of the tables) is rendered in our words: ours carry their sentence and hint, pydantic's
own are translated by their type.
"""

import re
from pathlib import Path
from typing import get_args

from pydantic import BaseModel, ValidationError

from pgcachelab.errors import UserError
from pgcachelab.workloads.values import show

# pydantic's error types in our words: (why, hint); {key} is the key as the user wrote it
BUILTIN = {
    "bool_type": ("not a boolean", "true or false"),
    "string_type": ("not a string", 'write {key} = "..."'),
    "int_type": ("not an integer", "use an integer such as 1"),
    "float_type": ("not a number", "use a number such as 1.5"),
    "list_type": ("not a list", "write a list such as [1, 2]"),
}
TABLE_TYPES = {"model_type", "model_attributes_type", "dict_type"}


def problem(path: Path, key: str, message: str, hint: str | None) -> UserError:
    return UserError(f"{path}: {key}: {message}", hint)


def bad_value(path: Path, key: str, value, why: str, hint: str | None) -> UserError:
    return problem(path, key, f"invalid value {show(value)}: {why}", hint)


def render(
    error: ValidationError, path: Path, model: type[BaseModel], prefix: str = ""
) -> UserError:
    """The first of pydantic's errors as our one line; `prefix` is where `model`'s keys live."""
    detail = error.errors()[0]
    ctx = detail.get("ctx") or {}
    loc = (*detail["loc"], *ctx.get("at", ()))
    key = prefix + dotted(loc)
    value = ctx.get("value", detail["input"])
    kind = detail["type"]
    if kind == "spec" and "message" in ctx:
        table = prefix + (f"{dotted(detail['loc'])}." if detail["loc"] else "")
        return problem(path, key, ctx["message"].replace("{prefix}", table), ctx["hint"])
    if kind == "spec":
        return bad_value(path, key, value, ctx["why"], ctx["hint"])
    if kind == "extra_forbidden":
        fields = model_at(model, loc[:-1]).model_fields
        allowed = ", ".join(sorted(field.alias or name for name, field in fields.items()))
        return problem(path, key, "unknown key", f"use one of {allowed}")
    if kind == "literal_error":
        choices = ", ".join(re.findall(r"'([^']*)'", ctx["expected"]))
        noun = str(loc[-1]).replace("_", " ")
        return bad_value(path, key, value, f"unknown {noun}", f"use one of {choices}")
    if kind in TABLE_TYPES:
        return problem(path, key, "must be a table", f"write it as [{key}]")
    why, hint = BUILTIN.get(kind, (detail["msg"].lower(), "fix the value"))
    return bad_value(path, key, value, why, hint.format(key=key))


def dotted(loc: tuple) -> str:
    """("ladder", 0, "name") -> "ladder[0].name"."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".")


def model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel]:
    """The table (model) that holds the key at `loc`, to list its keys."""
    for part in loc:
        if not isinstance(part, int):
            model = _model_in(model.model_fields[part].annotation) or model
    return model


def _model_in(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if found := _model_in(arg):
            return found
    return None
