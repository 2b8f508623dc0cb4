"""Build PostgreSQL from a release source tarball into the lab's cache (issue 47).

`pg install --from-source` for the majors that have no prebuilt binaries (8.3 .. 9.5) or when
the binaries are not wanted. What to build and how is `source_recipe.py`; this module finds a
source, runs configure and make, and moves the result into place.

The source, in this order: a tarball the user names (--source); the newest one of the major in
$PGCACHELAB_PG_SOURCES; the project's source archive ($PGCACHELAB_PG_SOURCE_URL) with its
published sha256; Debian's source package of the major, fetched by apt-get through a private
sources list and private state (the machine's apt is not touched: no root needed, nothing
written outside the scratch directory). Every tarball is checked against a checksum where one
exists, and the install records what it was checked against.

The build runs in a scratch directory (machine/owned.py: removed on success, failure and
Ctrl-C; a later lab reaps it after a kill -9); its output goes to a log in the cache, kept for
the user to read when a step fails. The install is staged beside its final directory and
renamed into place, so a directory named like an install is always a whole one.
"""

import bz2
import contextlib
import ctypes
import datetime
import gzip
import hashlib
import json
import lzma
import os
import shlex
import shutil
import signal
import subprocess
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from pgcachelab.clusters import source_recipe as recipe
from pgcachelab.clusters.installs import RECORD_FILE, KnownInstall, cache_root, major_label
from pgcachelab.clusters.tar_extraction import UnsafeMember, extract_all, has_data_filter
from pgcachelab.errors import UserError
from pgcachelab.machine import owned

SOURCES_DIR_ENV = "PGCACHELAB_PG_SOURCES"
SOURCE_URL_ENV = "PGCACHELAB_PG_SOURCE_URL"
SOURCE_LABEL = "built from source"
CONNECT_TIMEOUT_S = 10.0
KILL_GRACE_S = 5.0
STEPS = ("unpack", "configure", "build", "install", "check")
APT_ETC = Path("/etc/apt")
_PR_SET_PDEATHSIG = 1
_CHUNK_BYTES = 1 << 20
_CALLING_MAKE = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")


def _die_with_parent() -> None:
    """Between fork and exec: end with the lab. SIGTERM, not managed.py's SIGQUIT: make passes
    SIGTERM on to the jobs it runs (the kernel's request reaches only our direct child)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass(frozen=True)
class Source:
    """A tarball to build, and what vouches for it."""

    version: str
    tarball: Path
    sha256: str
    checked_against: str  # the checksum file or index it matched, or why it was not checked
    origin: str  # where it came from: a path, a URL, a Debian source package
    transcript: str = ""  # what fetching it printed (apt), for the build log


class _Unavailable(Exception):
    """This way of getting a source does not deliver here; the message says why, briefly."""


# -- the entry point -------------------------------------------------------------------------


def install_from_source(
    major_or_version: str, tarball: Path | None, note: Callable[[str], None]
) -> KnownInstall:
    """Build PostgreSQL `major_or_version` ('9.4', '15.14') from source into the lab's cache;
    `tarball`: the source to build (--source), else one is found. Idempotent: the same
    source, flags and compiler give the same directory, built once."""
    major, release = recipe.parse_version_request(major_or_version)
    if tarball is not None:
        tarball = _checked_tarball_argument(Path(tarball))
    compiler = compiler_version_line()
    with owned.scratch_dir("pgcachelab-source-") as scratch:
        source = find_source(major, release, tarball, scratch)
        note(f"PostgreSQL {source.version} from source: {source.origin}")
        steps = recipe.make_steps(source.version)
        flags = recipe.cflags(source.version)
        options = recipe.configure_options(source.version)
        identity = recipe.install_identity(source.sha256, flags, options, compiler, steps)
        target = cache_root() / recipe.install_dir_name(source.version, identity)
        if (target / "bin" / "postgres").is_file():
            note(f"PostgreSQL {source.version}: already installed in {target}")
        else:
            _Build(source, target, flags, steps, compiler, scratch, note).run()
            note(f"PostgreSQL {source.version}: installed in {target}")
    return KnownInstall(major_label(source.version), source.version, target / "bin", SOURCE_LABEL)


def _checked_tarball_argument(tarball: Path) -> Path:
    """--source's file: there, and a tar archive (read before anything is fetched or built)."""
    if not tarball.is_file():
        raise UserError(
            f"--source: no such file {str(tarball)!r}",
            "name a PostgreSQL source tarball, e.g. --source postgresql-8.4.22.tar.bz2",
        )
    if not tarfile.is_tarfile(tarball):
        raise UserError(
            f"--source: {str(tarball)!r} is not a tar archive",
            "name a PostgreSQL source tarball (.tar.bz2, .tar.gz or Debian's .orig.tar.*)",
        )
    return tarball.resolve()


def compiler_version_line() -> str:
    """gcc's version line (part of an install's identity); a UserError without gcc or make."""
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        raise UserError(
            f"building PostgreSQL from source needs {' and '.join(missing)} on the PATH",
            "install them (Debian: apt-get install gcc make)",
        )
    result = subprocess.run(["gcc", "--version"], capture_output=True, text=True)
    lines = result.stdout.splitlines()
    if result.returncode != 0 or not lines:
        raise UserError(f"gcc --version failed: {result.stderr.strip()[:200]}", "check gcc")
    return lines[0].strip()


# -- finding a source ------------------------------------------------------------------------


def find_source(major: str, release: str | None, tarball: Path | None, scratch: Path) -> Source:
    """The source to build: `tarball`, else the first way that delivers (see the module's
    docstring); a UserError naming every way tried and why it failed when none does."""
    if tarball is not None:
        return given_tarball(tarball, major, release)
    wanted = release or recipe.RELEASES.get(major)
    tried = []
    ways: list[tuple[str, Callable[[], Source]]] = [
        (f"${SOURCES_DIR_ENV}", lambda: from_sources_dir(major, release)),
        ("download", lambda: download(wanted, scratch / "download")),
        ("Debian", lambda: from_debian(major, release, scratch)),
    ]
    for name, way in ways:
        try:
            return way()
        except _Unavailable as why:
            tried.append(f"{name}: {why}")
    example = wanted or f"{major}.0"
    raise UserError(
        f"PostgreSQL {wanted or major}: no source to build from ({'; '.join(tried)})",
        f"give one: --source postgresql-{example}.tar.bz2, or a directory of tarballs "
        f"in ${SOURCES_DIR_ENV}",
    )


def given_tarball(tarball: Path, major: str, release: str | None) -> Source:
    """--source's tarball: its version from its name, else from its `configure`."""
    version = recipe.tarball_version(tarball.name) or _version_inside(tarball)
    if version is None:
        raise UserError(
            f"--source: {tarball.name!r} is not a PostgreSQL source tarball",
            "its name says no version and it has no top directory with a configure script",
        )
    if recipe.major_of(version) != major or (release and version != release):
        raise UserError(
            f"--source: {tarball.name!r} is PostgreSQL {version}, not {release or major}",
            f"ask for {recipe.major_of(version)}, or give a tarball of {release or major}",
        )
    sha256, checked = check_local_tarball(tarball, version, "not checked (given by the user)")
    return Source(version, tarball, sha256, checked, f"the tarball {tarball}")


def _version_inside(tarball: Path) -> str | None:
    """PACKAGE_VERSION of the `configure` at the top of a tarball, read as a stream."""
    with contextlib.suppress(tarfile.TarError, OSError), tarfile.open(tarball, "r|*") as tar:
        for member in tar:
            parts = member.name.strip("/").split("/")
            if len(parts) == 2 and parts[1] == "configure" and member.isfile():
                configure = tar.extractfile(member)
                if configure is not None:
                    return recipe.configure_version(configure.read().decode(errors="replace"))
    return None


def from_sources_dir(major: str, release: str | None) -> Source:
    """The newest tarball of `major` (or `release` itself) in $PGCACHELAB_PG_SOURCES."""
    value = os.environ.get(SOURCES_DIR_ENV)
    if not value:
        raise _Unavailable("not set")
    directory = Path(value)
    if not directory.is_dir():
        raise _Unavailable(f"no directory {value!r}")
    candidates = []
    for path in directory.iterdir():
        version = recipe.tarball_version(path.name)
        if version and recipe.major_of(version) == major and release in (None, version):
            candidates.append((recipe.version_key(version), path.name, version, path))
    if not candidates:
        raise _Unavailable(f"no tarball of {release or major} in {value}")
    *_, version, path = max(candidates)
    sha256, checked = check_local_tarball(path, version, f"not checked (no checksum in {value})")
    return Source(version, path, sha256, checked, f"the tarball {path}")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        while chunk := data.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def check_local_tarball(tarball: Path, version: str, unchecked: str) -> tuple[str, str]:
    """(sha256, what it was checked against) for a tarball on disk: a `<tarball>.sha256`
    beside it, else a Debian .dsc beside it that lists it, else `unchecked`. A mismatch is a
    UserError: the file is not the one published."""
    sha256 = file_sha256(tarball)
    sha_file = tarball.with_name(tarball.name + ".sha256")
    if sha_file.is_file():
        expected = recipe.parse_sha256_file(sha_file.read_text(errors="replace"), tarball.name)
        if expected is None:
            raise UserError(
                f"PostgreSQL {version}: {sha_file} gives no sha256 for {tarball.name}",
                f"remove {sha_file.name} or put the published one there",
            )
        _compare(version, tarball, sha256, expected, sha_file)
        return sha256, str(sha_file)
    for dsc in sorted(tarball.parent.glob("*.dsc")):
        with contextlib.suppress(OSError):
            expected = recipe.dsc_sha256(dsc.read_text(errors="replace"), tarball.name)
            if expected is not None:
                _compare(version, tarball, sha256, expected, dsc)
                return sha256, str(dsc)
    return sha256, unchecked


def _compare(version: str, tarball: Path | str, actual: str, expected: str, where) -> None:
    if actual != expected:
        raise UserError(
            f"PostgreSQL {version}: {tarball} does not match its checksum in {where} "
            f"(sha256 {actual}, expected {expected})",
            "refused: nothing was built; fetch the tarball again from the PostgreSQL project",
        )


def download(version: str | None, directory: Path) -> Source:
    """The release from the project's source archive ($PGCACHELAB_PG_SOURCE_URL), checked
    against the sha256 published beside it."""
    if version is None:
        raise _Unavailable("no release of this major is known to download")
    base = os.environ.get(SOURCE_URL_ENV) or recipe.DEFAULT_SOURCE_URL
    tarball_url, sha_url = recipe.download_urls(base, version)
    name = tarball_url.rsplit("/", 1)[1]
    host = urllib.parse.urlsplit(base).netloc or base
    try:
        with urllib.request.urlopen(sha_url, timeout=CONNECT_TIMEOUT_S) as response:
            published = response.read(1 << 16).decode(errors="replace")
        expected = recipe.parse_sha256_file(published, name)
        if expected is None:
            raise _Unavailable(f"{sha_url} gives no sha256 for {name}")
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        digest = hashlib.sha256()
        with (
            urllib.request.urlopen(tarball_url, timeout=CONNECT_TIMEOUT_S) as response,
            open(path, "wb") as out,
        ):
            while chunk := response.read(_CHUNK_BYTES):
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as error:
        raise _Unavailable(f"{host} answered HTTP {error.code} for {error.url}") from None
    except urllib.error.URLError as error:
        raise _Unavailable(f"cannot reach {host}: {_reason(error.reason)}") from None
    except (OSError, ValueError) as error:  # a timeout mid-download, a malformed URL
        raise _Unavailable(f"{host}: {_reason(error)}") from None
    _compare(version, tarball_url, digest.hexdigest(), expected, sha_url)
    return Source(version, path, expected, sha_url, tarball_url)


def _reason(error: object) -> str:
    """An OS error's words without its errno: 'Connection refused'."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


# -- Debian's source package -----------------------------------------------------------------


def private_apt_sources(apt_dir: Path, etc: Path = APT_ETC) -> list[str]:
    """A deb-src twin of the machine's apt sources in `apt_dir`, and the apt options that use
    it with state and caches of its own: `apt-get update` there changes nothing of the
    machine's. The repositories are the machine's own, read at run time."""
    parts = apt_dir / "sources.list.d"
    for directory in (parts, apt_dir / "lists" / "partial", apt_dir / "cache" / "archives"):
        directory.mkdir(parents=True, exist_ok=True)
    (apt_dir / "sources.list").write_text("")
    written = 0
    one_line = [etc / "sources.list", *sorted((etc / "sources.list.d").glob("*.list"))]
    for path in [*one_line, *sorted((etc / "sources.list.d").glob("*.sources"))]:
        with contextlib.suppress(OSError):
            text = path.read_text(errors="replace")
            if path.suffix == ".sources":
                converted, suffix = recipe.deb_src_sources(text), ".sources"
            else:
                converted, suffix = recipe.deb_src_list(text), ".list"
            if converted:
                written += 1
                (parts / f"{written:02d}-{path.stem}{suffix}").write_text(converted)
    if not written:
        raise _Unavailable(f"no apt sources in {etc}")
    options = {
        "Dir::Etc::SourceList": str(apt_dir / "sources.list"),
        "Dir::Etc::SourceParts": str(parts),
        "Dir::State::Lists": str(apt_dir / "lists"),
        "Dir::Cache": str(apt_dir / "cache"),
        "Acquire::Languages": "none",
    }
    if os.geteuid() == 0:
        # apt downloads as _apt when root, and _apt cannot enter the 0700 scratch directory
        options["APT::Sandbox::User"] = "root"
    return [arg for name, value in options.items() for arg in ("-o", f"{name}={value}")]


def from_debian(major: str, release: str | None, scratch: Path) -> Source:
    """Debian's upstream tarball of the major (apt-get source --download-only), checked
    against its .dsc (which apt checked against the signed Sources index)."""
    package = recipe.debian_source_package(major)
    if shutil.which("apt-get") is None or shutil.which("apt-cache") is None:
        raise _Unavailable("no apt-get here")
    if _quiet(["apt-cache", "show", "--no-all-versions", package]).returncode != 0:
        raise _Unavailable(f"apt knows no {package}")
    apt_dir = scratch / "apt"
    options = private_apt_sources(apt_dir)
    transcript = []
    update = _quiet(["apt-get", "-q", *options, "update"])
    transcript.append(update.stdout)
    if update.returncode != 0:
        hint = "" if os.geteuid() == 0 else " (as an ordinary user)"
        raise _Unavailable(f"apt-get update{hint} failed: {recipe.last_error_line(update.stdout)}")
    showsrc = _quiet(["apt-cache", *options, "showsrc", "--only-source", package])
    versions = recipe.showsrc_versions(showsrc.stdout, package)
    if release:
        versions = [v for v in versions if recipe.debian_upstream_version(v) == release]
    if not versions:
        raise _Unavailable(f"apt's deb-src indexes have no {package} {release or ''}".strip())
    failures = []
    for debian_version in versions:  # newest first; a pool may lack it (a security update)
        out_dir = scratch / "debian" / debian_version.replace(":", "_")
        out_dir.mkdir(parents=True)
        wanted = f"{package}={debian_version}"
        fetch = ["apt-get", "-q", *options, "source", "--download-only", "--only-source", wanted]
        fetched = _quiet(fetch, cwd=out_dir)
        transcript.append(fetched.stdout)
        if fetched.returncode == 0:
            source = _debian_tarball(out_dir, package, debian_version)
            return replace(source, transcript="".join(transcript))
        failures.append(f"{debian_version}: {recipe.last_error_line(fetched.stdout)}")
    raise _Unavailable(f"apt-get source {package} failed ({'; '.join(failures)})")


def _debian_tarball(out_dir: Path, package: str, debian_version: str) -> Source:
    dscs = sorted(out_dir.glob("*.dsc"))
    if not dscs:
        raise _Unavailable(f"apt-get source {package} gave no .dsc")
    dsc_text = dscs[0].read_text(errors="replace")
    origs = [n for n in recipe.dsc_files(dsc_text) if ".orig.tar." in n]
    version = recipe.tarball_version(origs[0]) if origs else None
    if version is None:
        raise _Unavailable(f"{dscs[0].name} lists no upstream tarball")
    tarball = out_dir / origs[0]
    expected = recipe.dsc_sha256(dsc_text, tarball.name)
    if expected is None:
        raise _Unavailable(f"{dscs[0].name} gives no sha256 for {tarball.name}")
    actual = file_sha256(tarball)
    _compare(version, tarball.name, actual, expected, dscs[0].name)
    checked = f"{dscs[0].name} (apt checked it against Debian's signed Sources index)"
    return Source(version, tarball, actual, checked, f"Debian's {package} {debian_version}")


def _quiet(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """A short tool run (apt), its output captured; ends with the lab, Ctrl-C ends it."""
    env = {**os.environ, "LC_ALL": "C"}
    process = subprocess.Popen(
        args,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    try:
        output, _ = process.communicate()
    except BaseException:
        _end_group(process)
        raise
    return subprocess.CompletedProcess(args, process.returncode, output, "")


def _end_group(process: subprocess.Popen) -> None:
    """Stop a child's whole process group (make and its jobs): SIGTERM, then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=KILL_GRACE_S)
            return


# -- the build -------------------------------------------------------------------------------


class _StepFailed(Exception):
    """A command of a step exited non-zero; the message is its last error line."""


@dataclass
class _Build:
    source: Source
    target: Path
    flags: list[str]
    steps: list[recipe.MakeStep]
    compiler: str
    scratch: Path
    note: Callable[[str], None]
    log: IO[bytes] | None = None
    log_path: Path = field(default_factory=Path)
    present: list[recipe.MakeStep] = field(default_factory=list)

    def run(self) -> None:
        started = time.monotonic()
        self.log_path = _build_logs_dir() / f"postgresql-{self.source.version}.log"
        with open(self.log_path, "wb") as log:
            self.log = log
            self._write(self._header())
            with self._step("unpack"):
                tree = self._unpack()
            configure_args = recipe.configure_args(self.source.version, str(self.target))
            with self._step("configure"):
                self._run(["./configure", *configure_args], tree)
            self.present = [step for step in self.steps if self._has(tree, step)]
            with self._step("build"):
                jobs = str(len(os.sched_getaffinity(0)))
                for step in [step for step in self.present if step.build]:
                    self._run(["make", "-j", jobs, "-C", step.directory], tree)
            self._install(tree, configure_args, started)
        self.log = None

    def _install(self, tree: Path, configure_args: list[str], started: float) -> None:
        """make install into a staging directory beside the target (the same filesystem),
        check what it holds, then rename it into place."""
        staging, [entry] = owned.new_dir(self.target.parent, ".staging-", {"dir": {}})
        try:
            with self._step("install"):
                for step in self.present:
                    destdir = f"DESTDIR={staging}"
                    self._run(["make", "-C", step.directory, step.install_target, destdir], tree)
            installed = Path(f"{staging}{self.target}")  # DESTDIR + the configured prefix
            with self._step("check"):
                self._check(installed)
            self._record(installed, configure_args, time.monotonic() - started)
            _open_to_all(installed)
            try:
                os.replace(installed, self.target)
            except OSError:
                if not (self.target / "bin" / "postgres").is_file():
                    raise
                # another lab built the same install meanwhile: theirs is as good as ours
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            owned.forget(entry)

    def _header(self) -> str:
        source = self.source
        lines = [
            f"PostgreSQL {source.version} built from source by pgcachelab",
            f"started: {_now()}",
            f"source: {source.origin}",
            f"tarball: {source.tarball.name} sha256 {source.sha256}",
            f"checked against: {source.checked_against}",
            f"compiler: {self.compiler}",
            f"CFLAGS: {' '.join(self.flags)}",
            f"target: {self.target}",
            "",
        ]
        return "\n".join(lines) + (source.transcript and f"{source.transcript}\n")

    @contextlib.contextmanager
    def _step(self, name: str) -> Iterator[None]:
        number = f"({STEPS.index(name) + 1}/{len(STEPS)})"
        self.note(f"PostgreSQL {self.source.version} from source: {name} {number}…")
        self._write(f"\n== {name} {number} {_now()}\n")
        started = time.monotonic()
        try:
            yield
        except _StepFailed as failed:
            raise UserError(
                f"PostgreSQL {self.source.version}: {name} failed: {failed}",
                f"see the build log {self.log_path}",
            ) from None
        elapsed = time.monotonic() - started
        self.note(
            f"PostgreSQL {self.source.version} from source: {name} {number} done, {elapsed:.0f} s"
        )

    def _write(self, text: str) -> None:
        assert self.log is not None
        self.log.write(text.encode())
        self.log.flush()

    def _run(self, args: list[str], cwd: Path) -> None:
        """Run one command of a step, its output appended to the log; _StepFailed if it fails."""
        assert self.log is not None
        self._write(f"$ {shlex.join(args)}\n")
        offset = self.log.tell()
        # make's own variables from a calling make (a jobserver we do not share) stay out
        inherited = {k: v for k, v in os.environ.items() if k not in _CALLING_MAKE}
        env = {
            **inherited,
            "CC": "gcc",
            "CFLAGS": " ".join(self.flags),
            "LC_ALL": "C",  # the English "error:" that last_error_line looks for
        }
        process = subprocess.Popen(
            args,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C reaches the lab, which ends the group
            preexec_fn=_die_with_parent,
        )
        try:
            returncode = process.wait()
        except BaseException:
            _end_group(process)
            raise
        if returncode != 0:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                output = log.read().decode(errors="replace")
            raise _StepFailed(recipe.last_error_line(output))

    def _unpack(self) -> Path:
        tree = self.scratch / "tree"
        tree.mkdir()
        name = self.source.tarball.name
        try:
            plain = _decompressed(self.source.tarball, self.scratch / "source.tar")
            with tarfile.open(plain) as tar:
                extract_all(tar, tree, data_filter=has_data_filter())
            if plain != self.source.tarball:
                plain.unlink()
        except UnsafeMember as unsafe:
            raise UserError(
                f"PostgreSQL {self.source.version}: refusing to unpack {name}: member {unsafe}",
                "nothing was unpacked; this is not a tarball the PostgreSQL project publishes",
            ) from None
        except (tarfile.TarError, OSError, EOFError) as error:
            raise _StepFailed(f"{name}: {error}") from None
        tops = [p for p in tree.iterdir() if (p / "configure").is_file()]
        if len(tops) != 1:
            raise _StepFailed(f"{name} has no top directory with a configure script")
        inside = recipe.configure_version((tops[0] / "configure").read_text(errors="replace"))
        if inside != self.source.version:
            raise UserError(
                f"PostgreSQL {self.source.version}: {name} holds PostgreSQL {inside}",
                "give a tarball whose name says the release it holds",
            )
        return tops[0]

    @staticmethod
    def _has(tree: Path, step: recipe.MakeStep) -> bool:
        """Whether this release has the step's directory (and its install target)."""
        makefile = tree / step.directory / "Makefile"
        if not makefile.is_file():
            return False
        if step.install_target == "install":
            return True
        makefile_text = makefile.read_text(errors="replace")
        return recipe.makefile_has_target(makefile_text, step.install_target)

    def _check(self, installed: Path) -> None:
        """The staged server says it is the release we built, and the tools are all there."""
        postgres = installed / "bin" / "postgres"
        try:
            said = subprocess.run(
                [str(postgres), "--version"], capture_output=True, text=True, timeout=30
            ).stdout
        except (OSError, subprocess.TimeoutExpired) as error:
            raise _StepFailed(f"{postgres} does not run: {error}") from None
        self._write(f"$ postgres --version\n{said}")
        if recipe.server_version(said) != self.source.version:
            raise _StepFailed(f"postgres --version says {said.strip()!r}")
        tools = ["postgres", "initdb", "pg_ctl", "pg_config", "pgbench"]
        missing = [tool for tool in tools if not (installed / "bin" / tool).is_file()]
        if missing:
            raise _StepFailed(f"not installed: {', '.join(missing)}")

    def _record(self, installed: Path, configure_args: list[str], seconds: float) -> None:
        record = {
            "source": SOURCE_LABEL,
            "version": self.source.version,
            "tarball": self.source.tarball.name,
            "tarball_from": self.source.origin,
            "sha256": self.source.sha256,
            "checksum_checked_against": self.source.checked_against,
            "compiler": self.compiler,
            "cflags": " ".join(self.flags),
            "configure_args": configure_args,
            "make_directories": [s.directory for s in self.present],
            "build_seconds": round(seconds, 1),
            "built_at": _now(),
        }
        (installed / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n")
        (installed / RECORD_FILE).chmod(0o644)  # whatever the umask: every user lists installs


_COMPRESSED: dict[bytes, Callable[..., Any]] = {
    b"BZh": bz2.open,
    b"\x1f\x8b": gzip.open,
    b"\xfd7zXZ\x00": lzma.open,
}


def _decompressed(tarball: Path, plain: Path) -> Path:
    """`tarball` decompressed into `plain` (or itself when not compressed). Checking every
    member before extracting (tar_extraction) reads the archive twice: twice through bzip2
    took 9 s of 15.18's unpack, once and twice through the plain tar 5 s."""
    with open(tarball, "rb") as head:
        magic = head.read(6)
    for prefix, opener in _COMPRESSED.items():
        if magic.startswith(prefix):
            with opener(tarball, "rb") as compressed, open(plain, "wb") as out:
                shutil.copyfileobj(compressed, out, _CHUNK_BYTES)
            return plain
    return tarball


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _build_logs_dir() -> Path:
    """The cache's build-logs directory, made if missing; a UserError where we cannot write."""
    root = cache_root()
    try:
        _make_reachable(root / "build-logs")
    except OSError as error:
        raise UserError(
            f"cannot write to the lab's PostgreSQL cache {str(root)!r}: {_reason(error)}",
            "set $PGCACHELAB_PG_CACHE to a directory you can write to",
        ) from None
    return root / "build-logs"


def _make_reachable(directory: Path) -> None:
    """Create `directory` and its missing parents 0755 whatever the umask (the server user
    must reach the binaries when root built them); existing ones are left as they are."""
    missing = [d for d in [directory, *directory.parents] if not d.exists()]
    for created in reversed(missing):
        created.mkdir(exist_ok=True)
        created.chmod(0o755)


def _open_to_all(tree: Path) -> None:
    """Every directory 0755 (make install's mkdir follows the umask) so the unprivileged
    server user can read an install root built."""
    for directory, _, _ in os.walk(tree):
        os.chmod(directory, 0o755)
