"""How the lab builds PostgreSQL from a release source tarball (issue 47): pure logic, no process.

Which release to fetch for a major, what a tarball's name says, the compiler flags and configure
arguments, the directories to build and install, the checksum files that vouch for a tarball,
and the identity that names the installed directory. `source_build.py` runs what this decides.

What was checked against real trees: the directory list, the flags and the configure arguments
build, initdb, start and benchmark Debian's postgresql-15 orig tarball (15.18) with Debian 12's
gcc 12.2 (tests/test_source_build.py). The older majors are written from PostgreSQL's history
(each entry below says which release added or moved what); no tarball before 15 was at hand.
"""

import hashlib
import json
import re
from dataclasses import dataclass

from pgcachelab.errors import UserError

# The newest minor of every major, the one `pg install --from-source MAJOR` downloads.
RELEASES = {
    "8.3": "8.3.23",
    "8.4": "8.4.22",
    "9.0": "9.0.23",
    "9.1": "9.1.24",
    "9.2": "9.2.24",
    "9.3": "9.3.25",
    "9.4": "9.4.26",
    "9.5": "9.5.25",
    "9.6": "9.6.24",
    "10": "10.23",
    "11": "11.22",
    "12": "12.22",
    "13": "13.22",
    "14": "14.19",
    "15": "15.14",
    "16": "16.10",
    "17": "17.6",
    "18": "18.0",
}
# Before 10 a major is two numbers (9.6); from 10 on, one (as installs.FIRST_ONE_NUMBER_MAJOR).
FIRST_ONE_NUMBER_MAJOR = 10
DEFAULT_SOURCE_URL = "https://ftp.postgresql.org/pub/source"

# ASCII digits only: '\d' also takes '²' or '٣', which int() refuses or misreads (issue 48).
_VERSION = re.compile(r"([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?")


def version_key(version: str) -> tuple[int, ...]:
    """'9.4.26' -> (9, 4, 26), for ordering releases."""
    return tuple(int(part) for part in version.split("."))


def _parts(text: str) -> tuple[int, ...] | None:
    match = _VERSION.fullmatch(str(text).strip())
    if match is None:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)


def _major_of_parts(parts: tuple[int, ...]) -> tuple[str, int] | None:
    """(major label, how many numbers a full version of it has), or None if not a version."""
    if parts[0] < FIRST_ONE_NUMBER_MAJOR:
        # the two-number majors are a closed set: 8.3 .. 9.6
        major = f"{parts[0]}.{parts[1]}" if len(parts) > 1 else ""
        return (major, 3) if major in RELEASES else None
    return (str(parts[0]), 2) if parts[0] <= 99 else None


def parse_version_request(text: str) -> tuple[str, str | None]:
    """What `pg install` was asked: ('9.4', None) for '9.4', ('9.4', '9.4.26') for '9.4.26',
    ('15', '15.14') for '15.14'. Every major from 8.3 on; anything else is a UserError."""
    parts = _parts(text)
    found = _major_of_parts(parts) if parts else None
    if parts is None or found is None or len(parts) > found[1]:
        raise UserError(
            f"invalid PostgreSQL version {text!r}",
            "name a major version from 8.3 on (9.4, 15) or a release (9.4.26, 15.14)",
        )
    major, full_length = found
    return major, (".".join(map(str, parts)) if len(parts) == full_length else None)


def major_of(version: str) -> str:
    """The major of a release: '9.4.26' -> '9.4', '15.14' -> '15'."""
    return parse_version_request(version)[0]


def is_release(text: str) -> bool:
    """True for a full release number ('9.4.26', '15.14'), not a major alone."""
    try:
        return parse_version_request(text)[1] is not None
    except UserError:
        return False


# postgresql-9.4.26.tar.bz2 (the project's archive); postgresql-15_15.14.orig.tar.bz2 (Debian's
# upstream tarball, named source-package_upstream-version).
_TARBALL_NAME = re.compile(
    r"postgresql-(?P<release>[0-9.]+)\.tar\.(?:bz2|gz)"
    r"|postgresql-(?P<package_major>[0-9.]+)_(?P<orig>[0-9.]+)\.orig\.tar\.(?:bz2|gz|xz)"
)


def tarball_version(file_name: str) -> str | None:
    """The release a tarball's file name names, or None when the name says nothing."""
    match = _TARBALL_NAME.fullmatch(file_name)
    if match is None:
        return None
    version = match.group("release") or match.group("orig")
    if not is_release(version):
        return None
    if match.group("package_major") and major_of(version) != match.group("package_major"):
        return None  # postgresql-15_16.1.orig: not a tarball Debian would make
    return version


_PACKAGE_VERSION = re.compile(r"^PACKAGE_VERSION='([^']*)'", re.MULTILINE)


def configure_version(configure_text: str) -> str | None:
    """The release a source tree's `configure` script was generated for (PACKAGE_VERSION)."""
    match = _PACKAGE_VERSION.search(configure_text)
    return match.group(1) if match and is_release(match.group(1)) else None


# -- compiler flags and configure ------------------------------------------------------------

# Given in CFLAGS, these replace configure's default "-O2"; configure still appends its own
# gcc flags after them (-fno-strict-aliasing in every release from 8.1 on, whatever CFLAGS the
# user gave: read in that configure.in). -fwrapv and -fexcess-precision=standard are what newer
# configures add (15.18's does); given here, every release gets them whatever its configure
# knows. -fno-aggressive-loop-optimizations: gcc 4.8+ may assume a loop over an old-style "[1]"
# trailing array stops after one element. -fcommon: gcc 10 made -fno-common the default, under
# which a global defined in two files is a link error; code older than that was never built so.
#
# Nothing more for releases before 10, as nothing more could be shown to be needed: gcc 12's
# default dialect, gnu17, still accepts what they rely on (c.h's own `typedef char bool`
# before 11, gnu89-era code), and they use no -Werror. gcc 15 will need -std=gnu17 for them:
# its gnu23 makes bool a keyword ("Build failure with GCC 15 (defaults to -std=gnu23)",
# pgsql-hackers, 2024-11), and only releases from 2025 on choose gnu17 themselves. The
# compiler's version line is part of an install's identity: another compiler, another install.
BASE_CFLAGS = (
    "-O2",
    "-fno-aggressive-loop-optimizations",
    "-fwrapv",
    "-fexcess-precision=standard",
    "-fcommon",
)
FIRST_MAJOR_WITH_ICU_BY_DEFAULT = (16,)


def cflags(version: str) -> list[str]:
    """The CFLAGS the lab builds `version` with."""
    return list(BASE_CFLAGS)


def configure_options(version: str) -> list[str]:
    """configure's arguments but --prefix: the least the lab's server needs. No SSL: old
    releases do not build against OpenSSL 3, and a benchmark over the unix socket needs none
    (--without-openssl is understood by every release: from 14 it is an obsolete spelling of
    --without-ssl). No readline (no psql), no zlib (no pg_dump), no ICU (the default from 16;
    older configures do not know the option)."""
    options = ["--without-readline", "--without-zlib", "--without-openssl"]
    if version_key(version)[:1] >= FIRST_MAJOR_WITH_ICU_BY_DEFAULT:
        options.append("--without-icu")
    return options


def configure_args(version: str, prefix: str) -> list[str]:
    """The whole configure command line after ./configure."""
    return [f"--prefix={prefix}", *configure_options(version)]


# -- what to build and install ---------------------------------------------------------------


@dataclass(frozen=True)
class MakeStep:
    """One directory of the tree: `make` in it (when `build`), then `make <install_target>`."""

    directory: str
    build: bool = True
    install_target: str = "install"


def _is_at_least(version: str, major: tuple[int, ...]) -> bool:
    return version_key(version)[: len(major)] >= major


def make_steps(version: str) -> list[MakeStep]:
    """The directories to build and install for `version`, in order: only what the lab runs
    (postgres, initdb, pg_ctl, pg_config, pgbench, pg_buffercache, pg_prewarm) and what those
    need. A directory a release lacks is skipped by the builder (src/common before 9.3, say).

    Read from the 15.18 tree and the history of src/Makefile, whose SUBDIRS order this follows
    (the backend's own submakes build src/common and src/port too; listing them installs their
    libraries, which PGXS programs link against)."""
    steps = [
        MakeStep("src/common"),  # 9.3+
        MakeStep("src/port"),
        MakeStep("src/timezone"),  # zic and the time zone data initdb and the server read
        MakeStep("src/backend"),  # postgres, postgres.bki, the sample configs, tsearch data
        MakeStep("src/backend/utils/mb/conversion_procs"),  # initdb loads the conversions
        MakeStep("src/backend/snowball"),  # initdb creates the snowball dictionaries
        MakeStep("src/include", build=False),  # server headers, for PGXS extensions
        MakeStep("src/interfaces/libpq"),  # pg_ctl and pgbench link it (rpath to our lib)
        MakeStep("src/pl/plpgsql"),  # initdb installs plpgsql in template1 from 9.0 on
        MakeStep("src/bin/initdb"),
        MakeStep("src/bin/pg_ctl"),
        MakeStep("src/bin/pg_config"),
        # pgbench moved from contrib to src/bin in 9.5
        MakeStep("src/bin/pgbench" if _is_at_least(version, (9, 5)) else "contrib/pgbench"),
        MakeStep("contrib/pg_buffercache"),
    ]
    if _is_at_least(version, (9, 4)):
        steps.append(MakeStep("contrib/pg_prewarm"))  # new in 9.4
    # PGXS: pgxs.mk, the Makefile.global an extension includes, install-sh (src/Makefile's
    # install-local, not its install: that would recurse into the whole tree)
    steps += [
        MakeStep("src/makefiles", build=False),
        MakeStep("config", build=False),
        MakeStep("src", build=False, install_target="install-local"),
    ]
    return steps


def makefile_has_target(makefile_text: str, target: str) -> bool:
    """Whether a Makefile defines `target` (a rule line `target:` or `target: deps`)."""
    return re.search(rf"^{re.escape(target)}\s*::?(?!=)", makefile_text, re.MULTILINE) is not None


# -- checksums -------------------------------------------------------------------------------

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def parse_sha256_file(text: str, file_name: str) -> str | None:
    """The sha256 a `.sha256` file gives for `file_name`, lower-case; None when it names
    another file. The project's files are sha256sum's output: `<hex>  postgresql-X.tar.bz2`
    (a `*` before the name marks binary mode); a lone hash is taken as the file's."""
    for line in text.splitlines():
        fields = line.split()
        if not fields or not _HEX64.fullmatch(fields[0]):
            continue
        if len(fields) == 1 or fields[1].lstrip("*") == file_name:
            return fields[0].lower()
    return None


def dsc_checksums(dsc_text: str) -> list[tuple[str, str]]:
    """(sha256, file name) of each line of a Debian .dsc's `Checksums-Sha256:` field, whose
    value is continuation lines ` <hex> <size> <name>`; the signature around the paragraph is
    apt's to check (it verified the .dsc against the signed Sources index)."""
    checksums = []
    in_field = False
    for line in dsc_text.splitlines():
        if not line.startswith((" ", "\t")):
            in_field = line.split(":", 1)[0].strip().lower() == "checksums-sha256"
            continue
        fields = line.split()
        if in_field and len(fields) == 3:
            checksums.append((fields[0], fields[2]))
    return checksums


def dsc_sha256(dsc_text: str, file_name: str) -> str | None:
    """The sha256 a Debian .dsc's `Checksums-Sha256:` field gives for `file_name`, or None."""
    for digest, name in dsc_checksums(dsc_text):
        if name == file_name:
            return digest.lower() if _HEX64.fullmatch(digest) else None
    return None


def dsc_files(dsc_text: str) -> list[str]:
    """The file names a .dsc's Checksums-Sha256 field lists."""
    return [name for _, name in dsc_checksums(dsc_text)]


def download_urls(base_url: str, version: str) -> tuple[str, str]:
    """The tarball's URL in the project's source archive, and its published .sha256's."""
    tarball = f"{base_url.rstrip('/')}/v{version}/postgresql-{version}.tar.bz2"
    return tarball, tarball + ".sha256"


# -- Debian's source package -----------------------------------------------------------------


def debian_source_package(major: str) -> str:
    """Debian's source package of a major: postgresql-15, postgresql-9.6."""
    return f"postgresql-{major}"


def _stanzas(text: str) -> list[list[str]]:
    stanzas: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            stanzas[-1].append(line)
        elif stanzas[-1]:
            stanzas.append([])
    return [stanza for stanza in stanzas if stanza]


def deb_src_sources(text: str) -> str:
    """A deb822 `.sources` file's `deb` entries as `deb-src` ones (the same repositories, for
    source packages); stanzas without `deb` in Types, or disabled, are left out."""
    converted = []
    for stanza in _stanzas(text):
        fields = [line for line in stanza if not line.lstrip().startswith("#")]
        types = [line for line in fields if line.lower().startswith("types:")]
        if not types or "deb" not in types[0].split(":", 1)[1].split():
            continue
        if any(re.fullmatch(r"enabled:\s*no\s*", line, re.IGNORECASE) for line in fields):
            continue
        converted.append("\n".join("Types: deb-src" if line in types else line for line in fields))
    return "".join(stanza + "\n\n" for stanza in converted)


def deb_src_list(text: str) -> str:
    """A one-line-style `.list` file's `deb` lines as `deb-src` lines."""
    lines = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split(maxsplit=1)
        if len(fields) == 2 and fields[0] == "deb":
            lines.append(f"deb-src {fields[1].strip()}")
    return "".join(line + "\n" for line in lines)


def showsrc_versions(showsrc_text: str, package: str) -> list[str]:
    """The versions of `package` in `apt-cache showsrc` output, newest first."""
    versions = []
    for stanza in _stanzas(showsrc_text):
        fields = dict(line.split(":", 1) for line in stanza if ":" in line and line[0] != " ")
        if fields.get("Package", "").strip() == package and "Version" in fields:
            versions.append(fields["Version"].strip())
    return sorted(set(versions), key=debian_version_key, reverse=True)


def debian_version_key(version: str) -> tuple:
    """An order for Debian versions of PostgreSQL ('15.18-0+deb12u1'): the upstream release
    as numbers after the epoch, then the Debian revision as text (dpkg's full rules are not
    needed for these)."""
    epoch, _, rest = version.partition(":") if ":" in version else ("0", "", version)
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    numbers = tuple(int(part) for part in re.findall(r"[0-9]+", upstream))
    return int(epoch) if epoch.isascii() and epoch.isdigit() else 0, numbers, revision


def debian_upstream_version(version: str) -> str:
    """The upstream release of a Debian version: '15.18-0+deb12u1' -> '15.18'."""
    rest = version.partition(":")[2] if ":" in version else version
    return rest.rpartition("-")[0] if "-" in rest else rest


# -- the install's identity ------------------------------------------------------------------


def install_identity(
    sha256: str,
    build_cflags: list[str],
    options: list[str],
    compiler: str,
    steps: list[MakeStep],
) -> str:
    """A digest of what makes one build differ from another: the source, the flags, configure's
    options (without --prefix, which the identity decides), the compiler's version line and
    the directories built."""
    what = {
        "sha256": sha256.lower(),
        "cflags": list(build_cflags),
        "configure": list(options),
        "compiler": compiler.strip(),
        "make": [[s.directory, s.build, s.install_target] for s in steps],
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def install_dir_name(version: str, identity: str) -> str:
    """The installed directory's name under the lab's cache: '15.14-source-1a2b3c4d5e6f'."""
    return f"{version}-source-{identity[:12]}"


# -- reading a failed step's output ----------------------------------------------------------

_ERROR_LINE = re.compile(r"\berror:|^configure: error|\bfatal error\b", re.IGNORECASE)
_MAKE_FAILED = re.compile(r"^make(?:\[[0-9]+\])?: \*\*\*")


def last_error_line(output: str) -> str:
    """The line that says why a step failed: the last compiler or configure `error:` line, else
    make's last `***` line, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for pattern in (_ERROR_LINE, _MAKE_FAILED):
        found = [line for line in lines if pattern.search(line)]
        if found:
            return found[-1]
    return lines[-1] if lines else "no output"


_SERVER_VERSION = re.compile(r"\(PostgreSQL\)\s+(\S+)")


def server_version(version_output: str) -> str | None:
    """'15.18' from `postgres --version` ('postgres (PostgreSQL) 15.18')."""
    match = _SERVER_VERSION.search(version_output)
    return match.group(1) if match else None
