"""Building PostgreSQL from source (issue 47): where the source comes from, what a failure
leaves, and (marked `source_build`) the whole path on Debian's postgresql-15 source package: a
real build, initdb, a server and the built pgbench against it.

The tarballs of the fast tests are tiny fakes whose `configure` fails: everything before it is
the real code (fetching, checksums, unpacking, the scratch and staging directories, the log)."""

import contextlib
import functools
import hashlib
import http.server
import io
import json
import os
import re
import signal
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fix_cli import run_cli

from pgcachelab.clusters import source_build
from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.source_build import (
    find_source,
    from_sources_dir,
    given_tarball,
    install_from_source,
    private_apt_sources,
)
from pgcachelab.errors import UserError
from pgcachelab.machine import owned

FAILING_CONFIGURE = (
    'echo "checking for gcc... gcc"\n'
    'echo "configure: error: this fake tree cannot be configured" >&2\nexit 1\n'
)


def fake_tarball(path: Path, version: str, configure: str = FAILING_CONFIGURE) -> Path:
    """A tarball shaped like a release's: one top directory holding a `configure` script."""
    top = f"postgresql-{version}"
    script = f"#!/bin/sh\nPACKAGE_VERSION='{version}'\n{configure}".encode()
    mode = {".bz2": "w:bz2", ".xz": "w:xz", ".tar": "w"}.get(path.suffix, "w:gz")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode) as tar:
        directory = tarfile.TarInfo(top)
        directory.type, directory.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(directory)
        member = tarfile.TarInfo(f"{top}/configure")
        member.size, member.mode = len(script), 0o755
        tar.addfile(member, io.BytesIO(script))
    return path


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(tmp_path, monkeypatch) -> Iterator[dict[str, Path]]:
    """The lab's cache, temporary directory and owned registry, all under tmp_path; no source
    directory, and a source archive URL nothing answers on."""
    dirs = {name: tmp_path / name for name in ("cache", "tmp", "registry")}
    dirs["tmp"].mkdir()
    monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(dirs["cache"]))
    monkeypatch.setattr(tempfile, "tempdir", str(dirs["tmp"]))
    monkeypatch.setattr(owned, "registry_dir", lambda *_: dirs["registry"])
    monkeypatch.delenv("PGCACHELAB_PG_SOURCES", raising=False)
    monkeypatch.setenv("PGCACHELAB_PG_SOURCE_URL", f"http://127.0.0.1:{closed_port()}")
    yield dirs


def files_under(directory: Path) -> list[str]:
    if not directory.exists():
        return []
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def assert_only_the_log_is_left(lab: dict[str, Path], version: str) -> None:
    assert files_under(lab["cache"]) == ["build-logs", f"build-logs/postgresql-{version}.log"]
    assert files_under(lab["tmp"]) == []
    assert owned.entries() == []


def test_a_failed_build_leaves_only_its_log(lab, tmp_path):
    tarball = fake_tarball(tmp_path / "given" / "postgresql-9.4.99.tar.gz", "9.4.99")
    notes: list[str] = []
    with pytest.raises(UserError) as failed:
        install_from_source("9.4", tarball, notes.append)
    log = lab["cache"] / "build-logs" / "postgresql-9.4.99.log"
    assert failed.value.message == (
        "PostgreSQL 9.4.99: configure failed: configure: error: this fake tree cannot be configured"
    )
    assert failed.value.hint == f"see the build log {log}"
    assert notes[0] == f"PostgreSQL 9.4.99 from source: the tarball {tarball}"
    assert "PostgreSQL 9.4.99 from source: configure (2/5)…" in notes
    text = log.read_text()
    assert "checked against: not checked (given by the user)" in text
    assert "$ ./configure --prefix=" in text and "--without-openssl" in text
    assert "configure: error: this fake tree cannot be configured" in text
    assert_only_the_log_is_left(lab, "9.4.99")


def test_ctrl_c_ends_the_step_and_cleans_up(lab, tmp_path):
    # configure starts a long child in its process group and records its pid
    pid_file = tmp_path / "child.pid"
    slow = f"sleep 60 &\necho $! > {pid_file}\nwait\n"
    tarball = fake_tarball(tmp_path / "given" / "postgresql-9.4.99.tar.gz", "9.4.99", slow)

    def interrupt_once_configuring() -> None:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    interrupter = threading.Thread(target=interrupt_once_configuring)
    # Ctrl-C raising KeyboardInterrupt, as the lab's handler does, whatever an earlier test of
    # this process left as SIGINT's handler (in CI's full run the signal went unanswered)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            install_from_source("9.4", tarball, lambda _: None)
    finally:
        interrupter.join()
        signal.signal(signal.SIGINT, previous)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # a guard against hanging, not a speed check
    assert not Path(f"/proc/{child}").exists()  # the whole group went
    assert_only_the_log_is_left(lab, "9.4.99")


def test_a_tarball_of_another_major(lab, tmp_path):
    tarball = fake_tarball(tmp_path / "postgresql-9.4.99.tar.gz", "9.4.99")
    with pytest.raises(UserError) as other:
        install_from_source("15", tarball, print)
    assert (
        other.value.message == "--source: 'postgresql-9.4.99.tar.gz' is PostgreSQL 9.4.99, not 15"
    )
    assert other.value.hint == "ask for 9.4, or give a tarball of 15"
    assert files_under(lab["cache"]) == files_under(lab["tmp"]) == []


def test_a_tarball_whose_name_says_nothing_is_read(tmp_path):
    tarball = fake_tarball(tmp_path / "snapshot.tar.gz", "9.4.99")
    source = given_tarball(tarball, "9.4", None)
    assert (source.version, source.sha256) == ("9.4.99", sha256_of(tarball))
    other = fake_tarball(tmp_path / "other.tar.gz", "9.4.99", configure="exit 1\n")
    (tmp_path / "inner").mkdir()
    with tarfile.open(other, "w:gz") as tar:  # no configure at its top: not a source tree
        tar.add(tmp_path / "inner", arcname="inner")
    with pytest.raises(UserError, match="'other.tar.gz' is not a PostgreSQL source tarball"):
        given_tarball(other, "9.4", None)


@pytest.mark.parametrize(
    "name",
    [
        "postgresql-9.4.99.tar.gz",
        "postgresql-9.4.99.tar.bz2",
        "postgresql-9.4_9.4.99.orig.tar.xz",
        "postgresql-9.4.99.tar",
    ],
)
def test_every_compression_unpacks(tmp_path, name):
    tarball = fake_tarball(tmp_path / name, "9.4.99")
    plain = source_build._decompressed(tarball, tmp_path / "plain.tar")
    assert (plain == tarball) is name.endswith(".tar")
    with tarfile.open(plain) as tar:
        assert tar.getnames() == ["postgresql-9.4.99", "postgresql-9.4.99/configure"]


def test_checksum_files_beside_a_tarball(tmp_path):
    tarball = fake_tarball(tmp_path / "postgresql-9.4.99.tar.gz", "9.4.99")
    digest = sha256_of(tarball)
    sha_file = tmp_path / "postgresql-9.4.99.tar.gz.sha256"
    sha_file.write_text(f"{digest}  postgresql-9.4.99.tar.gz\n")
    assert given_tarball(tarball, "9.4", None).checked_against == str(sha_file)
    sha_file.write_text(f"{'0' * 64}  postgresql-9.4.99.tar.gz\n")
    with pytest.raises(UserError, match=f"does not match its checksum in {sha_file} "
                                        f"\\(sha256 {digest}, expected 0{{64}}\\)"):  # fmt: skip
        given_tarball(tarball, "9.4", None)
    sha_file.unlink()
    # a Debian .dsc that lists it (the Checksums-Sha256 field of a real one, this file in it)
    dsc = tmp_path / "postgresql-9.4_9.4.99-1.dsc"
    dsc.write_text(
        f"Format: 3.0 (quilt)\nChecksums-Sha256:\n {digest} 1 postgresql-9.4.99.tar.gz\n"
    )
    assert given_tarball(tarball, "9.4", None).checked_against == str(dsc)


def test_the_newest_tarball_of_a_major_in_the_sources_directory(tmp_path, monkeypatch):
    for version in ("9.4.3", "9.4.26", "9.5.1"):
        fake_tarball(tmp_path / f"postgresql-{version}.tar.gz", version)
    (tmp_path / "README").write_text("not a tarball")
    monkeypatch.setenv("PGCACHELAB_PG_SOURCES", str(tmp_path))
    newest = from_sources_dir("9.4", None)
    assert (newest.version, newest.tarball.name) == ("9.4.26", "postgresql-9.4.26.tar.gz")
    assert newest.checked_against == f"not checked (no checksum in {tmp_path})"
    assert from_sources_dir("9.4", "9.4.3").version == "9.4.3"
    with pytest.raises(source_build._Unavailable, match=f"no tarball of 9.3 in {tmp_path}"):
        from_sources_dir("9.3", None)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test's output is not the server's log
        pass


@contextlib.contextmanager
def archive_server(root: Path) -> Iterator[str]:
    """A local source archive: `root` served over HTTP, in a thread."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/pub/source"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_download_checked_against_the_published_sha256(lab, tmp_path, monkeypatch):
    release = tmp_path / "archive" / "pub" / "source" / "v9.4.99"
    tarball = fake_tarball(release / "postgresql-9.4.99.tar.bz2", "9.4.99")
    sha_file = release / "postgresql-9.4.99.tar.bz2.sha256"
    sha_file.write_text(f"{sha256_of(tarball)}  postgresql-9.4.99.tar.bz2\n")
    with archive_server(tmp_path / "archive") as url:
        monkeypatch.setenv("PGCACHELAB_PG_SOURCE_URL", url)
        notes: list[str] = []
        with pytest.raises(UserError, match="^PostgreSQL 9.4.99: configure failed: "):
            install_from_source("9.4.99", None, notes.append)  # right: it goes on to configure
        assert notes[0] == (
            f"PostgreSQL 9.4.99 from source: {url}/v9.4.99/postgresql-9.4.99.tar.bz2"
        )
        log = (lab["cache"] / "build-logs" / "postgresql-9.4.99.log").read_text()
        assert f"checked against: {url}/v9.4.99/postgresql-9.4.99.tar.bz2.sha256" in log
        assert_only_the_log_is_left(lab, "9.4.99")

        (lab["cache"] / "build-logs" / "postgresql-9.4.99.log").unlink()
        sha_file.write_text(f"{'1' * 64}  postgresql-9.4.99.tar.bz2\n")
        with pytest.raises(UserError) as refused:
            install_from_source("9.4.99", None, notes.append)
    assert refused.value.message == (
        f"PostgreSQL 9.4.99: {url}/v9.4.99/postgresql-9.4.99.tar.bz2 does not match its "
        f"checksum in {url}/v9.4.99/postgresql-9.4.99.tar.bz2.sha256 "
        f"(sha256 {sha256_of(tarball)}, expected {'1' * 64})"
    )
    assert refused.value.hint.startswith("refused: nothing was built")
    assert files_under(lab["cache"]) == ["build-logs"]  # no log: nothing was run
    assert files_under(lab["tmp"]) == [] and owned.entries() == []


def test_no_source_reachable_is_one_line(lab):
    port = os.environ["PGCACHELAB_PG_SOURCE_URL"].rsplit(":", 1)[1]
    with pytest.raises(UserError) as none:
        install_from_source("8.4", None, print)
    message = none.value.message
    assert "\n" not in message
    assert re.fullmatch(
        r"PostgreSQL 8\.4\.22: no source to build from \(\$PGCACHELAB_PG_SOURCES: not set; "
        rf"download: cannot reach 127\.0\.0\.1:{port}: Connection refused; "
        r"Debian: (apt knows no postgresql-8\.4|no apt-get here)\)",
        message,
    ), message
    assert none.value.hint == (
        "give one: --source postgresql-8.4.22.tar.bz2, or a directory of tarballs in "
        "$PGCACHELAB_PG_SOURCES"
    )
    assert files_under(lab["tmp"]) == [] and owned.entries() == []


def test_the_sources_directory_is_tried_first(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("PGCACHELAB_PG_SOURCES", str(tmp_path / "sources"))
    with pytest.raises(UserError, match=r"\(\$PGCACHELAB_PG_SOURCES: no directory '.*/sources'; "):
        find_source("8.4", None, None, lab["tmp"])
    fake_tarball(tmp_path / "sources" / "postgresql-8.4.21.tar.bz2", "8.4.21")
    assert find_source("8.4", None, None, lab["tmp"]).version == "8.4.21"


def test_the_private_apt_sources(tmp_path):
    etc = tmp_path / "etc"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text("deb http://mirror.example/debian bookworm main\n")
    (etc / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\n"
    )
    (etc / "sources.list.d" / "off.list.disabled").write_text("deb http://x.example/ y z\n")
    options = private_apt_sources(tmp_path / "apt", etc)
    parts = tmp_path / "apt" / "sources.list.d"
    assert sorted(p.name for p in parts.iterdir()) == ["01-sources.list", "02-debian.sources"]
    assert (parts / "01-sources.list").read_text() == (
        "deb-src http://mirror.example/debian bookworm main\n"
    )
    assert (parts / "02-debian.sources").read_text().startswith("Types: deb-src\n")
    settings = dict(option.split("=", 1) for option in options[1::2])
    assert settings["Dir::Etc::SourceParts"] == str(parts)
    assert settings["Dir::State::Lists"] == str(tmp_path / "apt" / "lists")
    assert settings["Dir::Cache"] == str(tmp_path / "apt" / "cache")
    assert all(value.startswith(str(tmp_path)) for name, value in settings.items()
               if name.startswith("Dir::"))  # fmt: skip
    with pytest.raises(source_build._Unavailable, match="no apt sources in"):
        private_apt_sources(tmp_path / "apt2", tmp_path / "empty")


@pytest.mark.parametrize(("args", "message"), [
    (["15", "16", "--source", "postgresql-15.14.tar.bz2"],
     "--source: one tarball builds one version, not 2: 15 16"),
    (["15", "--source", "/no/such/postgresql-15.14.tar.bz2"],
     "--source: no such file '/no/such/postgresql-15.14.tar.bz2'"),
    (["15", "--source", __file__], f"--source: {__file__!r} is not a tar archive"),
    (["8.2", "--from-source"], "invalid PostgreSQL major version '8.2'"),
])  # fmt: skip
def test_bad_input_through_the_cli(args, message):
    result = run_cli("pg", "install", *args)
    assert result.returncode == 2, result.stderr
    first, hint = result.stderr.splitlines()[:2]
    assert first == f"pgcachelab: {message}"
    assert hint.startswith("hint: ")


# -- the whole path on a real release --------------------------------------------------------


@pytest.mark.source_build
@pytest.mark.server
@pytest.mark.slow
def test_debian_postgresql_15_built_and_benchmarked(pg_cache, server_os_user, cluster_parent,
                                                   monkeypatch):  # fmt: skip
    from pgcachelab.clusters.managed import ManagedCluster
    from pgcachelab.clusters.osuser import install_usable_by

    monkeypatch.delenv("PGCACHELAB_PG_SOURCES", raising=False)
    # no download: Debian's source package is the path under test
    monkeypatch.setenv("PGCACHELAB_PG_SOURCE_URL", f"http://127.0.0.1:{closed_port()}")
    notes: list[str] = []
    started = time.monotonic()
    try:
        known = install_from_source("15", None, notes.append)
    except UserError as error:
        if error.message.startswith("PostgreSQL 15: no source to build from"):
            pytest.skip(f"apt-get cannot fetch Debian's postgresql-15 source: {error.message}")
        raise
    build_seconds = time.monotonic() - started
    print(f"\nPostgreSQL {known.version} built from source in {build_seconds:.0f} s")
    assert notes[0].startswith(f"PostgreSQL {known.version} from source: Debian's postgresql-15 ")
    assert known.major == "15" and known.source == "built from source"
    assert known.bin_dir.parent.parent == pg_cache
    record = json.loads((known.bin_dir.parent / "pgcachelab-install.json").read_text())
    assert record["source"] == "built from source" and record["version"] == known.version
    assert record["checksum_checked_against"].endswith(
        ".dsc (apt checked it against Debian's signed Sources index)"
    )
    assert record["tarball"] == f"postgresql-15_{known.version}.orig.tar.bz2"
    # every directory of the recipe exists in a 15 tree
    from pgcachelab.clusters.source_recipe import make_steps

    assert record["make_directories"] == [s.directory for s in make_steps(known.version)]
    assert sorted(p.name for p in pg_cache.iterdir()) == sorted(
        ["build-logs", known.bin_dir.parent.name]
    )
    for directory in [known.bin_dir.parent, *known.bin_dir.parent.rglob("*")]:
        if directory.is_dir() and not directory.is_symlink():
            assert directory.stat().st_mode & 0o777 == 0o755, directory

    install = find_install(known.bin_dir)
    assert install.version == known.version and install.major == 15
    pg_config = known.bin_dir / "pg_config"
    pgxs = subprocess.run([pg_config, "--pgxs"], capture_output=True, text=True, check=True)
    assert Path(pgxs.stdout.strip()).is_file()  # extensions can be built against it
    server_headers = subprocess.run([pg_config, "--includedir-server"], capture_output=True,
                                    text=True, check=True).stdout.strip()  # fmt: skip
    assert (Path(server_headers) / "postgres.h").is_file()

    cluster = ManagedCluster.create(
        install_usable_by(install, server_os_user), server_os_user, parent_dir=cluster_parent
    )
    try:
        assert cluster.apply_settings({}) == "start"
        with cluster.connect() as conn:
            assert conn.execute("show server_version").fetchone()[0] == known.version
            conn.execute("create extension pg_buffercache")
            conn.execute("create extension pg_prewarm")
        dsn = f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"
        pgbench = str(known.bin_dir / "pgbench")
        subprocess.run([pgbench, "-i", "-s", "1", "-q", dsn], check=True, capture_output=True)
        run = subprocess.run([pgbench, "-S", "-T", "2", "-n", dsn], capture_output=True,
                             text=True, check=True)  # fmt: skip
        assert f"pgbench (PostgreSQL) {known.version}" in run.stdout or "pgbench" in run.stdout
        tps = float(re.search(r"^tps = ([0-9.]+)", run.stdout, re.MULTILINE).group(1))
        assert tps > 0
    finally:
        cluster.destroy()

    again: list[str] = []
    assert install_from_source("15", None, again.append) == known
    assert again[-1] == f"PostgreSQL {known.version}: already installed in {known.bin_dir.parent}"
