"""Unpacking a tar archive so that nothing lands outside its target directory.

Python's extraction filters (PEP 706, `extractall(filter="data")`) arrived in 3.11.4, and
Debian 12's python3 is 3.11.2 (issue 23). So every member is checked here, on every
interpreter, before anything is written; where the interpreter has the `data` filter it checks
again as it extracts. The check is stricter than the filter: a member's name and a hard link's
target may not hold `..` at all, and a symbolic link's target may climb only with leading `..`s
that stay inside, from a directory no link leads to. The filter resolves such paths against
what is already on disk as it goes; judged before extraction, `a -> .` then `b -> a/..` looks
inside and is not, and neither is `d/up -> ..` then `d/up/e/z -> ../../..`: so a `..` after a
name is refused, and no member may lie under a symbolic link of the archive. The zonky archives
`pg install` unpacks hold only files, directories and links within a folder; otj-pg-embedded's
(9.3, 9.5) hold timezone links such as `US/Alaska -> ../America/Anchorage`.
"""

import copy
import os
import tarfile
from pathlib import PurePosixPath
from typing import Any


class UnsafeMember(Exception):
    """A member that could write outside the target directory, or create a device."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name!r}: {reason}")
        self.name = name
        self.reason = reason


def has_data_filter() -> bool:
    """Whether this interpreter has PEP 706's extraction filters (3.11.4+, 3.12+)."""
    return hasattr(tarfile, "data_filter")


def _path_problem(path: str) -> str | None:
    """Why a path inside the archive is unsafe to join to the target, or None."""
    if not path:
        return "an empty path"
    if path.startswith("/"):
        return "an absolute path"
    if ".." in PurePosixPath(path).parts:
        return "a path that climbs out with '..'"
    return None


def _symlink_target_problem(name: str, target: str) -> str | None:
    """Why a symbolic link `name -> target` could lead outside, judged as if every directory
    above `name` were a real one (extract_all makes sure of that), or None."""
    if not target:
        return "an empty path"
    if target.startswith("/"):
        return "an absolute path"
    parts = PurePosixPath(target).parts
    climbs = 0
    while climbs < len(parts) and parts[climbs] == "..":
        climbs += 1
    if ".." in parts[climbs:]:
        return "a path that climbs out with '..' after a name"
    depth = len([p for p in PurePosixPath(name).parent.parts if p != "."])
    if climbs > depth:
        return "a path that climbs out with '..'"
    return None


def unsafe_reason(member: tarfile.TarInfo) -> str | None:
    """Why extracting `member` is unsafe (outside the target, a device, a fifo), or None."""
    problem = _path_problem(member.name)
    if problem:
        return problem
    if member.ischr() or member.isblk():
        return "a device file"
    if member.isfifo():
        return "a fifo"
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        return "a special file"
    if not member.isdir() and PurePosixPath(member.name).parts in [(), (".",)]:
        return "a file in place of the target directory itself"
    if member.issym():
        problem = _symlink_target_problem(member.name, member.linkname)
        if problem:
            return f"a symbolic link to {member.linkname!r}, {problem}"
    if member.islnk():
        problem = _path_problem(member.linkname)
        if problem:
            return f"a hard link to {member.linkname!r}, {problem}"
    return None


def _under_a_link(members: list[tarfile.TarInfo]) -> tuple[str, str] | None:
    """(member, link) for the first member that lies under one of the archive's symbolic
    links: written through it, or climbing from it, it could land anywhere the link leads."""
    links = {PurePosixPath(m.name) for m in members if m.issym()}
    for member in members:
        for parent in PurePosixPath(member.name).parents:
            if parent in links:
                return member.name, str(parent)
    return None


def filtered_copy(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """A copy of a safe member with the `data` filter's ownership and modes: owned by whoever
    extracts it, no setuid, setgid or sticky bit, not writable by group or others."""
    member = copy.copy(member)
    member.uid, member.gid, member.uname, member.gname = os.geteuid(), os.getegid(), "", ""
    mode = member.mode & 0o755
    if member.isdir():
        mode |= 0o700  # the filter leaves directories as mkdir makes them: the owner may enter
    elif member.isreg() or member.islnk():
        if not mode & 0o100:
            mode &= ~0o111
        mode |= 0o600
    member.mode = mode
    return member


def extract_all(tar: tarfile.TarFile, target: str | os.PathLike, data_filter: bool) -> None:
    """Extract every member of `tar` under `target` after checking them all; UnsafeMember names
    the first bad one (nothing is written then). `data_filter`: also apply Python's (3.11.4+)."""
    members = []
    for member in tar.getmembers():
        reason = unsafe_reason(member)
        if reason:
            raise UnsafeMember(member.name, reason)
        members.append(filtered_copy(member))
    under = _under_a_link(members)
    if under:
        raise UnsafeMember(under[0], f"a path under the symbolic link {under[1]!r}")
    if not data_filter:
        # Interpreters that have filters warn (3.12+) when none is named: ours is done above.
        trusted: dict[str, Any] = {"filter": "fully_trusted"} if has_data_filter() else {}
        tar.extractall(target, members=members, **trusted)
        return
    try:
        tar.extractall(target, members=members, filter="data")
    except tarfile.FilterError as error:  # never seen after the checks above; kept as a net
        raise UnsafeMember(error.tarinfo.name, str(error)) from None
