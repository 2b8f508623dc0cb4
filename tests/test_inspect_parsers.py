"""inspect's pure parts on rows captured from real servers (tests/data/inspect/capture.py)."""

import json
from pathlib import Path

import pytest

from pgcachelab.cli.inspect import (
    is_local_host,
    parse_method,
    parse_mode,
    parse_settings_file,
    parse_top,
    parse_watch,
)
from pgcachelab.errors import UserError
from pgcachelab.probes.buffercache import (
    choose_method,
    relation_kind,
    snapshot_from_relations,
    snapshot_from_summary,
)
from pgcachelab.probes.pagecache import resident_pages, segment_paths
from pgcachelab.report.cache_table import cache_table

DATA = Path(__file__).parent / "data" / "inspect"
VERSIONS = ("15", "18")


def _captured(version: str) -> dict:
    return json.loads((DATA / f"rows-{version}.json").read_text())


FIRST_USER_RELFILENODE = 16384  # FirstNormalObjectId: below are the catalogs


def _by_relation(snapshot, user_relations_only: bool = False) -> dict:
    return {
        (r.database_oid, r.tablespace_oid, r.relfilenode, r.fork): (
            r.buffers, r.dirty, r.pinned, r.usage_counts,
        )
        for r in snapshot.relations
        if r.relfilenode >= FIRST_USER_RELFILENODE or not user_relations_only
    }  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
def test_captured_extension_and_view_rows_make_the_same_snapshot(version):
    captured = _captured(version)
    facts = tuple(captured["facts"])
    from_extension = snapshot_from_relations(
        "extension", "consistent", facts, captured["extension"]
    )
    from_view = snapshot_from_relations(
        "pg_buffercache", "consistent", facts, captured["pg_buffercache"]
    )

    assert from_extension.buffers_total == 2048  # shared_buffers = 16MB of 8kB blocks
    # The capture ran one query after the other, each reading catalog pages (loading some,
    # bumping usage counts), so only user relations must agree in every column here;
    # test_inspect.py compares everything on a live idle server, after warming the catalogs.
    assert _by_relation(from_extension, True) == _by_relation(from_view, True)
    assert len(_by_relation(from_extension, True)) == 2  # the table and its index
    assert from_extension.buffers_used == sum(r.buffers for r in from_extension.relations)
    assert from_extension.buffers_free == 2048 - from_extension.buffers_used
    assert sum(from_extension.usage_counts) == from_extension.buffers_used


@pytest.mark.parametrize("version", VERSIONS)
def test_captured_rows_name_tables_indexes_and_forks(version):
    captured = _captured(version)
    snapshot = snapshot_from_relations(
        "extension", "consistent", tuple(captured["facts"]), captured["extension"]
    )
    by_name = {r.qualified_name: r for r in snapshot.relations}
    accounts = by_name["public.accounts"]
    assert accounts.kind == "table"
    assert accounts.fork == "main"
    assert accounts.size_bytes > 0 and accounts.file_path.startswith("base/")
    assert by_name["public.accounts_id"].kind == "index"
    assert by_name["pg_catalog.pg_class"].kind == "table"
    # largest first
    assert [r.buffers for r in snapshot.relations] == sorted(
        (r.buffers for r in snapshot.relations), reverse=True
    )
    # the shared catalogs (database 0) are named too
    assert any(r.database_oid == 0 and r.name for r in snapshot.relations)


def test_captured_summary_and_usage_counts_of_18():
    captured = _captured("18")
    snapshot = snapshot_from_summary(
        tuple(captured["facts"]), tuple(captured["summary"]), captured["usage_counts"]
    )
    assert snapshot.method == "summary" and snapshot.relations == []
    assert snapshot.buffers_total == 2048
    assert snapshot.buffers_used == captured["summary"][0]
    # usage_counts() counts every buffer, free ones at usage count 0
    assert sum(snapshot.usage_counts) == 2048


def test_summary_without_usage_counts_has_no_histogram():
    snapshot = snapshot_from_summary((8192, 100, "db", 160004), (10, 90, 1, 0), None)
    assert (snapshot.buffers_used, snapshot.buffers_free, snapshot.usage_counts) == (10, 90, None)


@pytest.mark.parametrize(
    ("relkind", "schema", "kind"),
    [("r", "public", "table"), ("i", "public", "index"), ("t", "pg_toast", "toast"),
     ("i", "pg_toast", "toast"), ("m", "public", "materialized view"), (None, None, None)],
)  # fmt: skip
def test_relation_kind(relkind, schema, kind):
    assert relation_kind(relkind, schema) == kind


@pytest.mark.parametrize(
    ("requested", "available", "chosen"),
    [
        ("auto", {"extension": True, "pg_buffercache": True}, "extension"),
        ("auto", {"extension": False, "pg_buffercache": True, "summary": True}, "pg_buffercache"),
        ("auto", {"extension": False, "pg_buffercache": False}, None),
        ("summary", {"summary": True, "extension": True}, "summary"),
        ("extension", {"extension": False, "pg_buffercache": True}, None),
    ],
)
def test_choose_method(requested, available, chosen):
    assert choose_method(requested, available) == chosen


def test_table_shows_the_top_relations_and_the_totals():
    captured = _captured("18")
    snapshot = snapshot_from_relations(
        "extension", "fast", tuple(captured["facts"]), captured["extension"]
    )
    text = cache_table(snapshot, top=3)
    lines = text.splitlines()
    assert lines[0].startswith("relation")
    assert len([line for line in lines if line.startswith(("public.", "pg_"))]) == 3
    assert f"... and {len(snapshot.relations) - 3} more relation forks" in text
    assert "shared_buffers: 2,048 buffers (16MB)" in text
    assert "method: extension, fast" in text


@pytest.mark.parametrize("version", VERSIONS)
def test_settings_file_gives_port_and_socket(version):
    settings = parse_settings_file((DATA / f"pgcachelab.conf-{version}").read_text())
    assert settings["port"].isdigit()
    assert settings["unix_socket_directories"].endswith("/socket")
    assert settings["listen_addresses"] == ""


def test_settings_file_unquotes_doubled_quotes():
    assert parse_settings_file("a = 'it''s'\n# b = 'x'\n") == {"a": "it's"}


def test_resident_pages_counts_the_low_bit_only():
    assert resident_pages(bytes([0, 1, 1, 0, 3, 2, 0x81])) == 4


def test_segment_paths_follow_the_fork_suffix_and_segment_numbers(tmp_path):
    for name in ("16384", "16384.1", "16384.2", "16384_fsm", "16384_vm", "16384.4"):
        (tmp_path / name).touch()
    assert [p.name for p in segment_paths(tmp_path, "16384", "main")] == [
        "16384", "16384.1", "16384.2",
    ]  # fmt: skip
    assert [p.name for p in segment_paths(tmp_path, "16384", "fsm")] == ["16384_fsm"]
    assert segment_paths(tmp_path, "16384", "init") == []


@pytest.mark.parametrize(
    ("host", "local"),
    [(None, True), ("/tmp/x/socket", True), ("localhost", True), ("127.0.0.1", True),
     ("db.example.com", False), ("10.0.0.5", False)],
)  # fmt: skip
def test_is_local_host(host, local):
    assert is_local_host(host) is local


@pytest.mark.parametrize(
    ("parse", "value", "message"),
    [
        (parse_top, -1, "--top: invalid value -1: below 0"),
        (parse_watch, 0.0, "--watch: invalid value 0.0: below 0.1"),
        (parse_method, "fastest", "--method: unknown method 'fastest'"),
        (parse_mode, "nonconsistent", "--mode: unknown mode 'nonconsistent'"),
    ],
)
def test_bad_option_values_name_the_option_and_the_value(parse, value, message):
    with pytest.raises(UserError) as raised:
        parse(value)
    assert raised.value.message == message
    assert raised.value.hint
