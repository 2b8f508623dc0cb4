"""procrastinate through its public surface (issue 49, item 2): the engine's schema is the lab's
frozen copy, the pin agrees with it, and nothing in the lab writes the engine's tables."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

from procrastinate.schema import SchemaManager

from pgcachelab.store.postgresql import ENGINE_VERSION, engine_ddl

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "pgcachelab"

# A statement that changes an engine's table: only procrastinate's own functions may.
ENGINE_WRITE = re.compile(
    r"\b(update|delete\s+from|insert\s+into|truncate)\s+(only\s+)?([\w\"{}]+\.)?\"?procrastinate_",
    re.IGNORECASE,
)


def test_the_frozen_engine_schema_is_the_pinned_versions_own():
    assert importlib.metadata.version("procrastinate") == ENGINE_VERSION
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert f"procrastinate=={ENGINE_VERSION}" in pyproject["project"]["dependencies"]
    assert engine_ddl() == SchemaManager.get_schema()


def test_no_statement_of_the_lab_writes_the_engines_tables():
    engine_own = SRC / "store" / "engine"
    files = [p for p in SRC.rglob("*") if p.suffix in (".py", ".sql")]
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in files
        if engine_own not in path.parents
        for match in ENGINE_WRITE.finditer(path.read_text())
    ]
    assert found == []


def test_the_check_would_find_a_write():
    for statement in (
        "update procrastinate_jobs set attempts = 0",
        "DELETE FROM procrastinate_workers w",
        "insert into {schema}.procrastinate_jobs (id)",
        'update "pgcachelab"."procrastinate_jobs" set',
    ):
        assert ENGINE_WRITE.search(statement), statement
    assert not ENGINE_WRITE.search("select procrastinate_retry_job_v2(1, null, null, null, null)")
