"""One exporter per format (exporters/): JSON through one encoder, and the old spellings of a
format (--json, compare's table) printing the same bytes as --format (issue 50)."""

import dataclasses
import datetime
import decimal
import json
import math
import shutil
from pathlib import Path

import pytest
from fix_cli import run_cli

from pgcachelab.exporters import json as json_export

REPORT_RUNS_STORE = Path(__file__).parent / "data" / "report-runs" / "results.sqlite"


@dataclasses.dataclass
class Share:
    name: str
    share: float


def test_encode_writes_strict_json_with_nan_as_null_at_any_depth():
    document = {"a": math.nan, "b": [1.0, math.inf, {"c": -math.inf}], "d": Share("x", math.nan)}
    text = json_export.encode(document)

    def refuse_constant(name):
        raise AssertionError(f"{name} in JSON")

    assert json.loads(text, parse_constant=refuse_constant) == {
        "a": None,
        "b": [1.0, None, {"c": None}],
        "d": {"name": "x", "share": None},
    }


def test_encode_turns_dataclasses_dates_decimals_and_sets_into_json_as_before():
    when = datetime.datetime(2026, 11, 28, 10, 0, 1)
    document = {"when": when, "amount": decimal.Decimal("1.50"), "kinds": {"b", "a"}}
    document["share"] = Share("idx2", 0.25)
    # str() of a date and a Decimal: what every command printed with default=str before
    assert json.loads(json_export.encode(document)) == {
        "when": "2026-11-28 10:00:01",
        "amount": "1.50",
        "kinds": ["a", "b"],
        "share": {"name": "idx2", "share": 0.25},
    }
    assert json_export.encode({"a": [1, 2]}, indent=None) == '{"a": [1, 2]}'
    assert json_export.encode({"a": 1}) == json.dumps({"a": 1}, indent=2)


def test_encode_escapes_del_so_json_is_safe_on_a_terminal():
    text = json_export.encode({"name": "a\x7fb\x1b[2J"})
    assert "\x7f" not in text and "\x1b" not in text
    assert json.loads(text) == {"name": "a\x7fb\x1b[2J"}


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_STORE, path)
    return path


@pytest.mark.parametrize(
    ("command", "spellings"),
    [
        (["export", "last"], [[], ["--format", "csv"]]),
        (["export", "last"], [["--json"], ["--format", "json"], ["--json", "--format", "json"]]),
        (["compare", "last", "last"], [[], ["--format", "text"], ["--format", "table"]]),
        (["compare", "last", "last"], [["--json"], ["--format", "json"]]),
    ],
)
def test_every_spelling_of_a_format_prints_the_same_bytes(store, lab_tmp, command, spellings):
    outputs = []
    for spelling in spellings:
        result = run_cli(*command, "--store", store, *spelling, tmpdir=lab_tmp)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] and all(output == outputs[0] for output in outputs)
