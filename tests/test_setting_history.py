"""Settings renamed between major versions: one spec runs on 8.3 to 18, each version with its
own spelling of the same amount (issue 47)."""

import pytest

from pgcachelab.clusters.setting_history import (
    names_in,
    translate_setting,
    translate_settings,
    version_parts,
)


@pytest.mark.parametrize(("text", "parts"), [("9.3", (9, 3)), ("9.3.25", (9, 3)), ("8.4", (8, 4)),
                                             ("18", (18, 0)), ("18.6", (18, 0)),
                                             ("10.23", (10, 0))])  # fmt: skip
def test_version_parts(text, parts):
    assert version_parts(text) == parts


@pytest.mark.parametrize(("value", "segments"), [("1GB", "21"), ("48MB", "1"), ("1MB", "1"),
                                                 ("4GB", "85"), ("1024", "21")])  # fmt: skip
def test_max_wal_size_before_9_5_is_checkpoint_segments_by_the_release_notes(value, segments):
    # 9.5's notes: max_wal_size = (3 * checkpoint_segments) * 16MB; a bare number is in MB
    result = translate_setting("max_wal_size", value, "9.4")
    assert (result.name, result.value) == ("checkpoint_segments", segments)
    assert "3 x 16MB" in result.note


def test_checkpoint_segments_from_9_5_is_max_wal_size():
    result = translate_setting("checkpoint_segments", "21", "9.5")
    assert (result.name, result.value) == ("max_wal_size", "1008MB")


def test_nothing_changes_where_the_version_knows_the_name():
    for version in ("9.5", "9.6", "13", "18"):
        assert translate_setting("max_wal_size", "1GB", version).note == ""
    assert translate_setting("checkpoint_segments", "3", "9.4").note == ""
    assert translate_setting("shared_buffers", "128MB", "8.3").value == "128MB"


def test_wal_keep_size_before_13_rounds_up_to_whole_segments():
    result = translate_setting("wal_keep_size", "100MB", "12")
    assert (result.name, result.value) == ("wal_keep_segments", "7")
    assert translate_setting("wal_keep_segments", "7", "13").value == "112MB"


def test_wal_level_replica_before_9_6_is_hot_standby():
    assert translate_setting("wal_level", "replica", "9.5").value == "hot_standby"
    assert translate_setting("wal_level", "replica", "9.6").value == "replica"
    assert translate_setting("wal_level", "minimal", "9.3").value == "minimal"


def test_a_whole_point_is_translated_and_what_changed_is_said():
    settings, notes = translate_settings({"shared_buffers": "128MB", "max_wal_size": "1GB"}, "9.3")
    assert settings == {"shared_buffers": "128MB", "checkpoint_segments": "21"}
    assert list(notes) == ["max_wal_size"]
    assert notes["max_wal_size"].startswith("checkpoint_segments = 21")


def test_names_in_a_version():
    names = ["shared_buffers", "max_wal_size", "jit"]
    assert names_in("9.3", names) == {"max_wal_size": "checkpoint_segments"}
    assert names_in("18", names) == {"max_wal_size": "max_wal_size"}


def test_a_value_that_is_not_an_amount_stays_for_the_server_to_refuse():
    assert translate_setting("max_wal_size", "lots", "9.3").name == "max_wal_size"
    assert translate_setting("checkpoint_segments", "x", "12").name == "checkpoint_segments"
