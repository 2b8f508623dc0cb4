"""Build the lab's C extension `pg_cachelab` with PGXS and install it into a server install.

The build happens out of tree (make -f SOURCE/Makefile VPATH=SOURCE) in a scratch directory, so
the source folder stays clean and two builds for two versions never share objects. Installing
copies the three files into the install's own directories (pg_config --pkglibdir, --sharedir):
when the lab runs as root its servers run from a copy of the install the server user can read
(osuser.install_usable_by), and that copy is where the files must go.
"""

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.errors import UserError

EXTENSION_NAME = "pg_cachelab"
EXTENSION_VERSION = "1.0"
# The source lives at the top of the repository, beside src/ (the lab installs in editable mode).
SOURCE_DIR = Path(__file__).resolve().parents[3] / "extension" / EXTENSION_NAME
SUPPORTED_MAJORS = range(15, 19)


@dataclass(frozen=True)
class ExtensionFiles:
    """The three files of a build, or of an install."""

    library: Path
    control: Path
    script: Path

    def all(self) -> list[Path]:
        return [self.library, self.control, self.script]


def pg_config_value(install: PgInstall, option: str) -> str:
    """One `pg_config --OPTION` value of `install` (pg_config knows where it was relocated)."""
    pg_config = install.tool("pg_config")
    if not pg_config.is_file():
        raise UserError(
            f"--pg-bin: {str(install.bin_dir)!r} has no pg_config",
            "build the extension against an install that ships pg_config and server headers",
        )
    result = subprocess.run([str(pg_config), f"--{option}"], capture_output=True, text=True)
    if result.returncode != 0:
        raise UserError(f"{pg_config} --{option} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def has_pgxs(install: PgInstall) -> bool:
    """True when the install can build extensions: PGXS and the server headers are present."""
    try:
        pgxs = Path(pg_config_value(install, "pgxs"))
        headers = Path(pg_config_value(install, "includedir-server"))
    except UserError:
        return False
    return pgxs.is_file() and (headers / "storage" / "buf_internals.h").is_file()


def installed_files(install: PgInstall) -> ExtensionFiles:
    """Where the extension's files go (or are) in `install`."""
    libdir = Path(pg_config_value(install, "pkglibdir"))
    extension_dir = Path(pg_config_value(install, "sharedir")) / "extension"
    return ExtensionFiles(
        library=libdir / f"{EXTENSION_NAME}.so",
        control=extension_dir / f"{EXTENSION_NAME}.control",
        script=extension_dir / f"{EXTENSION_NAME}--{EXTENSION_VERSION}.sql",
    )


def is_installed(install: PgInstall) -> bool:
    return all(path.is_file() for path in installed_files(install).all())


def _check_buildable(install: PgInstall) -> None:
    if install.major not in SUPPORTED_MAJORS:
        raise UserError(
            f"--pg-bin: pg_cachelab supports PostgreSQL 15 to 18, not {install.version}",
            "name a 15, 16, 17 or 18 install with --pg-bin",
        )
    if not SOURCE_DIR.is_dir():
        raise UserError(
            f"the extension's source is not in {SOURCE_DIR}",
            "install the lab from its repository (pip install -e .), where extension/ lives",
        )
    if not has_pgxs(install):
        raise UserError(
            f"--pg-bin: {str(install.bin_dir)!r} has no PGXS or server headers",
            f"install the server development files, e.g. apt-get install "
            f"postgresql-server-dev-{install.major}",
        )
    if shutil.which("make") is None or shutil.which("gcc") is None:
        raise UserError(
            "building pg_cachelab needs make and gcc", "apt-get install build-essential"
        )


def build(install: PgInstall, build_dir: Path) -> ExtensionFiles:
    """Compile the extension for `install` in `build_dir` (created if needed); returns its files."""
    _check_buildable(install)
    build_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            "make",
            "-C",
            str(build_dir),
            "-f",
            str(SOURCE_DIR / "Makefile"),
            f"VPATH={SOURCE_DIR}",
            f"PG_CONFIG={install.tool('pg_config')}",
        ],
        capture_output=True,
        text=True,
    )
    library = build_dir / f"{EXTENSION_NAME}.so"
    if result.returncode != 0 or not library.is_file():
        errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
        raise UserError(
            f"building pg_cachelab for PostgreSQL {install.version} failed: "
            f"{(errors or result.stderr.strip().splitlines() or ['no output'])[-1][:300]}",
            f"run make yourself in {build_dir} to see every message",
        )
    return ExtensionFiles(
        library=library,
        control=SOURCE_DIR / f"{EXTENSION_NAME}.control",
        script=SOURCE_DIR / f"{EXTENSION_NAME}--{EXTENSION_VERSION}.sql",
    )


def _copy_atomically(source: Path, target: Path, mode: int) -> None:
    """Copy then rename: a running server that has the old library mapped keeps its inode."""
    staging = target.with_name(f".{target.name}.tmp{os.getpid()}")
    shutil.copyfile(source, staging)
    staging.chmod(mode)  # the server user must read (and map) it
    os.replace(staging, target)


def install_files(built: ExtensionFiles, install: PgInstall) -> ExtensionFiles:
    """Copy a build into `install`'s directories; returns where the files went."""
    target = installed_files(install)
    try:
        target.control.parent.mkdir(parents=True, exist_ok=True)
        _copy_atomically(built.library, target.library, 0o755)
        _copy_atomically(built.control, target.control, 0o644)
        _copy_atomically(built.script, target.script, 0o644)
    except PermissionError as error:
        raise UserError(
            f"cannot install pg_cachelab into {str(install.bin_dir.parent)!r}: {error.strerror}",
            "run as root or as the owner of the install, or name another one with --pg-bin",
        ) from None
    return target


def uninstall(install: PgInstall) -> None:
    """Remove the extension's files from `install` (databases that created it keep the SQL)."""
    for path in installed_files(install).all():
        path.unlink(missing_ok=True)


def build_and_install(installs: list[PgInstall]) -> list[ExtensionFiles]:
    """Build once per server version and install into each of `installs` (an install and the
    copy the server user runs are the same version); the scratch builds are removed."""
    placed = []
    builds: dict[str, ExtensionFiles] = {}
    with tempfile.TemporaryDirectory(prefix="pgcachelab-extension-") as scratch:
        for install in installs:
            if install.version not in builds:
                builds[install.version] = build(install, Path(scratch) / install.version)
            placed.append(install_files(builds[install.version], install))
    return placed


def install_for_lab(install: PgInstall) -> list[ExtensionFiles]:
    """Build and install pg_cachelab where the lab's servers of `install` load it: the install
    itself and, when the server's OS user runs a copy of it, that copy too."""
    runnable = install_usable_by(install, server_user())
    installs = [install] if runnable.bin_dir == install.bin_dir else [install, runnable]
    return build_and_install(installs)
