"""Every key a measurement stores is in the one table of them (store/metric_keys.py), with its
unit and meaning, so the docs site's reference/metrics.md has no hole: checked against the keys
the code writes (read from the source, which no run may reach: a fleet agent, host settings)
and against stored real runs (the fixture store here; test_cli.py checks a fresh run's)."""

import ast
import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest

from pgcachelab.store.metric_keys import COLUMNS, METRICS, undocumented_keys
from pgcachelab.store.records import Measurement

ROOT = Path(__file__).parent.parent
SOURCE = ROOT / "src" / "pgcachelab"
FIXTURE_STORE = ROOT / "tests" / "data" / "report-runs" / "results.sqlite"


def _written_key(target: ast.expr) -> str | None:
    """The key of an assignment to `<anything>.metrics["k"]` or `<anything>.run_metrics["k"]`."""
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Attribute)
        and target.value.attr in ("metrics", "run_metrics")
        and isinstance(target.slice, ast.Constant)
        and isinstance(target.slice.value, str)
    ):
        return target.slice.value
    return None


def keys_written_by_the_code() -> dict[str, str]:
    """Every metric key the source writes -> the file that writes it: assignments to
    `.metrics[...]` and `.run_metrics[...]` (in tuples and chains too) and the keys of the dict
    literal a workload hands to `Outcome(metrics={...})`."""
    found: dict[str, str] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(), where)):
            if isinstance(node, ast.Assign):
                targets = []
                for target in node.targets:
                    targets += target.elts if isinstance(target, ast.Tuple) else [target]
                for target in targets:
                    if (key := _written_key(target)) is not None:
                        found.setdefault(key, where)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Outcome"
            ):
                for keyword in node.keywords:
                    if keyword.arg == "metrics" and isinstance(keyword.value, ast.Dict):
                        for key in keyword.value.keys:
                            assert isinstance(key, ast.Constant), f"{where}: a computed key"
                            found.setdefault(key.value, where)
    return found


WRITTEN = keys_written_by_the_code()


def test_the_scan_finds_what_the_lab_writes():
    """A scan that stopped finding keys would pass the test below with nothing checked."""
    assert {"pgbench", "latency", "tpcc", "cache_wash", "data", "host", "probes",
            "load_average_1m", "version_switch", "fleet", "resources"} <= set(WRITTEN)  # fmt: skip


def test_every_key_the_code_writes_is_in_the_table():
    missing = {key: where for key, where in WRITTEN.items() if key not in METRICS}
    assert not missing, f"metric keys missing from store/metric_keys.py METRICS: {missing}"


def test_the_table_lists_no_key_the_code_no_longer_writes():
    assert set(METRICS) <= set(WRITTEN), set(METRICS) - set(WRITTEN)


@pytest.mark.parametrize("name", [*METRICS, *COLUMNS])
def test_every_key_says_its_unit_what_it_means_and_what_sets_it(name):
    key = METRICS.get(name) or COLUMNS[name]
    for part in ("unit", "meaning", "set_by", "when"):
        assert getattr(key, part).strip(), f"{name}: no {part}"


def test_the_columns_are_the_measurement_s_figures():
    fields = set(Measurement.__dataclass_fields__)
    assert set(COLUMNS) <= fields
    assert {"tps", "latency_avg_ms", "latency_stddev_ms", "wall_s"} <= set(COLUMNS)


def test_every_key_in_the_fixture_store_is_in_the_table():
    """The fixture store holds real tiny runs of every shipped experiment's shape."""
    with sqlite3.connect(f"file:{FIXTURE_STORE}?mode=ro", uri=True) as conn:
        rows = conn.execute("select metrics from measurements").fetchall()
    assert len(rows) > 50
    stored = set().union(*(json.loads(text) for (text,) in rows))
    assert {"pgbench", "tpcc", "cache_wash", "probes", "machine"} <= stored
    assert undocumented_keys(stored) == set()


def test_undocumented_keys_names_only_those_missing():
    assert undocumented_keys({"pgbench": {}, "no_such_metric": 1}) == {"no_such_metric"}


def _load_hook():
    spec = importlib.util.spec_from_file_location(
        "docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_page_lists_every_key():
    page = _load_hook().metrics_markdown()
    for name in [*METRICS, *COLUMNS]:
        assert f"| `{name}` |" in page
