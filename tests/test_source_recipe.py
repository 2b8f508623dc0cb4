"""The recipe for building PostgreSQL from source (issue 47): versions, tarball names, flags,
directories, checksum files and the install's identity, on inputs captured from real releases
and Debian's source package (tests/data/source-build/, capture.sh beside them)."""

from pathlib import Path

import pytest

from pgcachelab.clusters import source_recipe as recipe
from pgcachelab.errors import UserError

DATA = Path(__file__).parent / "data" / "source-build"
DSC = DATA / "postgresql-15_15.18-0+deb12u1.dsc"
ORIG = "postgresql-15_15.18.orig.tar.bz2"
ORIG_SHA256 = "11df0df97fe3ea4ba9a791faaf39cee1d2fe571e78885b5b55d8517d27c323b4"


def test_releases_name_every_major_from_8_3_to_18():
    assert list(recipe.RELEASES) == ["8.3", "8.4", "9.0", "9.1", "9.2", "9.3", "9.4", "9.5",
                                     "9.6", "10", "11", "12", "13", "14", "15", "16", "17",
                                     "18"]  # fmt: skip
    for major, release in recipe.RELEASES.items():
        assert recipe.major_of(release) == major
        assert recipe.is_release(release)


@pytest.mark.parametrize(("text", "major", "release"), [
    ("8.3", "8.3", None), ("8.4.22", "8.4", "8.4.22"), ("9.0", "9.0", None),
    ("9.4.26", "9.4", "9.4.26"), ("10", "10", None), ("15", "15", None),
    ("15.14", "15", "15.14"), ("18.0", "18", "18.0"), (" 16 ", "16", None),
])  # fmt: skip
def test_version_requests(text, major, release):
    assert recipe.parse_version_request(text) == (major, release)


@pytest.mark.parametrize("text", ["8.2", "7.4", "9", "9.7", "9.10", "15.14.1", "9.4.26.1",
                                  "nine", "9.²", "１５", "", "15.x", "100"])  # fmt: skip
def test_bad_version_requests(text):
    with pytest.raises(UserError, match=f"invalid PostgreSQL version {text!r}"):
        recipe.parse_version_request(text)


def test_releases_order_as_numbers():
    assert recipe.version_key("9.4.26") > recipe.version_key("9.4.3")
    assert max(["15.9", "15.14", "15.10"], key=recipe.version_key) == "15.14"


@pytest.mark.parametrize(("name", "version"), [
    ("postgresql-9.4.26.tar.bz2", "9.4.26"),
    ("postgresql-9.4.26.tar.gz", "9.4.26"),
    ("postgresql-8.3.23.tar.bz2", "8.3.23"),
    ("postgresql-18.0.tar.bz2", "18.0"),
    ("postgresql-15_15.14.orig.tar.bz2", "15.14"),
    ("postgresql-15_15.18.orig.tar.gz", "15.18"),
    ("postgresql-15_15.18.orig.tar.xz", "15.18"),
    ("postgresql-9.6_9.6.24.orig.tar.bz2", "9.6.24"),
])  # fmt: skip
def test_tarball_names(name, version):
    assert recipe.tarball_version(name) == version


@pytest.mark.parametrize("name", [
    "postgresql-9.4.26.tar.xz",  # the project publishes .bz2 and .gz
    "postgresql-9.4.26.tar", "postgresql-9.4.26.zip", "postgresql-15.tar.bz2",
    "postgresql-9.4.tar.bz2", "pgsql-15.14.tar.bz2", "postgresql-15.14.tar.bz2.sha256",
    "postgresql-15_16.1.orig.tar.bz2",  # a package of one major holding another
    "postgresql-15_15.18-0+deb12u1.debian.tar.xz", "postgresql-15_15.18-0+deb12u1.dsc",
    "postgresql-7.4.30.tar.bz2", "postgresql-9.4.26.tar.bz2 ", "my-postgresql-9.4.26.tar.bz2",
])  # fmt: skip
def test_names_that_say_nothing(name):
    assert recipe.tarball_version(name) is None


def test_configure_version():
    # the lines of 15.18's configure around its version
    head = (
        "# Identity of this package.\nPACKAGE_NAME='PostgreSQL'\nPACKAGE_TARNAME='postgresql'\n"
        "PACKAGE_VERSION='15.18'\nPACKAGE_STRING='PostgreSQL 15.18'\n"
    )
    assert recipe.configure_version(head) == "15.18"
    assert recipe.configure_version("PACKAGE_VERSION='8.4devel'\n") is None
    assert recipe.configure_version("#!/bin/sh\n") is None


@pytest.mark.parametrize("version", ["8.3.23", "9.4.26", "9.6.24", "15.14", "18.0"])
def test_every_release_gets_the_base_flags(version):
    flags = recipe.cflags(version)
    assert flags[:1] == ["-O2"]
    for flag in ("-fno-aggressive-loop-optimizations", "-fwrapv", "-fexcess-precision=standard",
                 "-fcommon"):  # fmt: skip
        assert flag in flags


@pytest.mark.parametrize(("version", "icu"), [("8.3.23", False), ("9.6.24", False),
                                              ("15.14", False), ("16.10", True),
                                              ("18.0", True)])  # fmt: skip
def test_configure_options(version, icu):
    options = recipe.configure_options(version)
    assert options[:3] == ["--without-readline", "--without-zlib", "--without-openssl"]
    assert ("--without-icu" in options) is icu
    assert not [o for o in options if "ecpg" in o or "doc" in o or "ssl=" in o]
    args = recipe.configure_args(version, "/cache/pg/15.14-source-abc")
    assert args == ["--prefix=/cache/pg/15.14-source-abc", *options]


def directories(version: str) -> list[str]:
    return [step.directory for step in recipe.make_steps(version)]


@pytest.mark.parametrize(("version", "pgbench", "prewarm"), [
    ("8.3.23", "contrib/pgbench", False), ("9.3.25", "contrib/pgbench", False),
    ("9.4.26", "contrib/pgbench", True), ("9.5.25", "src/bin/pgbench", True),
    ("15.14", "src/bin/pgbench", True),
])  # fmt: skip
def test_directories_by_release(version, pgbench, prewarm):
    dirs = directories(version)
    other = {"contrib/pgbench", "src/bin/pgbench"} - {pgbench}
    assert pgbench in dirs and not other & set(dirs)
    assert ("contrib/pg_prewarm" in dirs) is prewarm
    assert "contrib/pg_buffercache" in dirs
    assert len(dirs) == len(set(dirs))


def test_directories_in_build_order():
    dirs = directories("15.14")
    # the libraries before the server, the server and libpq before the programs
    assert dirs.index("src/port") < dirs.index("src/backend") < dirs.index("src/bin/initdb")
    assert dirs.index("src/interfaces/libpq") < dirs.index("src/bin/pg_ctl")
    assert dirs.index("src/timezone") < dirs.index("src/backend")
    assert not [d for d in dirs if "ecpg" in d or d.startswith("doc") or "psql" in d]
    # src itself only installs PGXS's makefiles: its `install` would recurse everywhere
    [src] = [step for step in recipe.make_steps("15.14") if step.directory == "src"]
    assert (src.build, src.install_target) == (False, "install-local")
    assert recipe.make_steps("15.14")[-1] == src


def test_makefile_targets():
    # from 15.18's src/Makefile
    makefile = (
        "install: install-local\n\ninstall-local: installdirs-local\n"
        "\t$(INSTALL_DATA) Makefile.global '$(DESTDIR)$(pgxsdir)/$(subdir)/Makefile.global'\n"
        "installdirs-local:\n\t$(MKDIR_P) '$(DESTDIR)$(pgxsdir)/$(subdir)'\n"
        ".PHONY: install-local installdirs-local uninstall-local\n"
    )
    assert recipe.makefile_has_target(makefile, "install-local")
    assert recipe.makefile_has_target(makefile, "installdirs-local")
    assert not recipe.makefile_has_target(makefile, "uninstall-local")  # named, not a rule
    assert not recipe.makefile_has_target("install-local := yes\n", "install-local")
    assert not recipe.makefile_has_target("install-local-x: y\n", "install-local")


def test_the_projects_sha256_file():
    text = (DATA / "postgresql-17.4.tar.bz2.sha256").read_text()
    digest = "c4605b73fea11963406699f949b966e5d173a7ee0ccaef8938dec0ca8a995fe7"
    assert recipe.parse_sha256_file(text, "postgresql-17.4.tar.bz2") == digest
    assert recipe.parse_sha256_file(text, "postgresql-17.5.tar.bz2") is None
    assert recipe.parse_sha256_file(f"{digest.upper()} *x.tar.gz\n", "x.tar.gz") == digest
    assert recipe.parse_sha256_file(f"{digest}\n", "anything.tar.gz") == digest
    assert recipe.parse_sha256_file("not a digest  x.tar.gz\n", "x.tar.gz") is None


def test_debian_dsc_checksums():
    text = DSC.read_text()
    assert recipe.dsc_sha256(text, ORIG) == ORIG_SHA256
    assert recipe.dsc_sha256(text, "postgresql-15_15.18-0+deb12u1.debian.tar.xz") == (
        "efe6fc2007229a2cc7b087d75cb1213d49e275ec47c4b896d5e0880b4904f8b3"
    )
    assert recipe.dsc_sha256(text, "postgresql-15_15.14.orig.tar.bz2") is None
    assert recipe.dsc_files(text) == [ORIG, "postgresql-15_15.18-0+deb12u1.debian.tar.xz"]
    # the SHA-1 and MD5 fields list the same names: only Checksums-Sha256 counts
    sha1_only = text.split("Checksums-Sha256:")[0]
    assert recipe.dsc_sha256(sha1_only, ORIG) is None


def test_download_urls():
    tarball, sha = recipe.download_urls("https://example.org/pub/source/", "9.4.26")
    assert tarball == "https://example.org/pub/source/v9.4.26/postgresql-9.4.26.tar.bz2"
    assert sha == tarball + ".sha256"


def test_deb822_sources_become_deb_src():
    text = (
        "Types: deb\n# http://snapshot.example/archive/20250520T000000Z\n"
        "URIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Types: deb deb-src\nURIs: http://mirror.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n\n"
        "Types: deb\nURIs: http://off.example/\nSuites: x\nComponents: y\nEnabled: no\n\n"
        "Types: deb-src\nURIs: http://src-only.example/\nSuites: x\nComponents: y\n"
    )
    assert recipe.deb_src_sources(text) == (
        "Types: deb-src\nURIs: http://mirror.example/debian\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Types: deb-src\nURIs: http://mirror.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n\n"
    )
    assert recipe.deb_src_sources("# nothing here\n") == ""


def test_one_line_sources_become_deb_src():
    text = (
        "# comment\ndeb http://mirror.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] https://other.example/apt stable main # note\n"
        "deb-src http://mirror.example/debian bookworm main\n\n  \n"
    )
    assert recipe.deb_src_list(text) == (
        "deb-src http://mirror.example/debian bookworm main\n"
        "deb-src [arch=amd64 signed-by=/k.gpg] https://other.example/apt stable main\n"
    )


def test_showsrc_versions_newest_first():
    text = (DATA / "showsrc-postgresql-15.txt").read_text()
    assert recipe.showsrc_versions(text, "postgresql-15") == ["15.20-0+deb12u1",
                                                              "15.18-0+deb12u1"]  # fmt: skip
    assert recipe.showsrc_versions(text, "postgresql-16") == []
    assert recipe.debian_source_package("9.6") == "postgresql-9.6"


def test_debian_versions_order():
    ordered = sorted(["15.9-1", "15.10-1", "1:15.2-1", "15.10-0+deb12u1"],
                     key=recipe.debian_version_key)  # fmt: skip
    assert ordered == ["15.9-1", "15.10-0+deb12u1", "15.10-1", "1:15.2-1"]  # an epoch first
    assert recipe.debian_upstream_version("15.18-0+deb12u1") == "15.18"
    assert recipe.debian_upstream_version("1:9.6.24-1~bpo") == "9.6.24"
    assert recipe.debian_upstream_version("15.18") == "15.18"


def test_install_identity():
    steps = recipe.make_steps("15.18")
    flags = recipe.cflags("15.18")
    options = recipe.configure_options("15.18")
    compiler = "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"
    identity = recipe.install_identity(ORIG_SHA256, flags, options, compiler, steps)
    assert len(identity) == 64
    assert recipe.install_identity(ORIG_SHA256.upper(), flags, options, compiler, steps) == (
        identity
    )
    changed = [
        recipe.install_identity("0" * 64, flags, options, compiler, steps),
        recipe.install_identity(ORIG_SHA256, [*flags, "-g"], options, compiler, steps),
        recipe.install_identity(ORIG_SHA256, flags, options[:-1], compiler, steps),
        recipe.install_identity(ORIG_SHA256, flags, options, "gcc (GCC) 13.1.0", steps),
        recipe.install_identity(ORIG_SHA256, flags, options, compiler, steps[:-1]),
    ]
    assert identity not in changed and len(set(changed)) == len(changed)
    assert recipe.install_dir_name("15.18", identity) == f"15.18-source-{identity[:12]}"


def test_the_error_line_of_a_failed_configure():
    log = (DATA / "configure-fail.log").read_text()
    assert recipe.last_error_line(log) == (
        "configure: error: clang not found, but required when compiling --with-llvm, "
        "specify with CLANG="
    )


def test_the_error_line_of_a_failed_make():
    log = (DATA / "make-fail.log").read_text()
    assert recipe.last_error_line(log) == (
        "../../src/include/port.h:237:16: error: anonymous variadic macros were introduced "
        "in C99 [-Wvariadic-macros]"
    )
    # without a compiler's words, make's own line; without either, the last line
    assert recipe.last_error_line("cc x.c\nmake: *** [x.o] Killed\nmake: Leaving dir\n") == (
        "make: *** [x.o] Killed"
    )
    assert recipe.last_error_line("one\ntwo\n\n") == "two"
    assert recipe.last_error_line("") == "no output"


def test_server_version():
    assert recipe.server_version("postgres (PostgreSQL) 15.18\n") == "15.18"
    assert recipe.server_version("postgres (PostgreSQL) 9.4.26\n") == "9.4.26"
    assert recipe.server_version("sh: postgres: not found") is None
