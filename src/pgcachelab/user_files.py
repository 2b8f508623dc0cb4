"""Files a user names (a spec, a custom script) read safely: regular files only, and only so
much of them (issue 48: `run /dev/zero --plan` read until the OOM killer ended it at 23.9 GB).

A device, a FIFO or a directory is refused before a byte is read (a FIFO is opened without
waiting for a writer), and a file larger than its cap is refused at the cap, whatever it
claims to be: a file that grows while it is read is cut there too.
"""

import os
import stat
from pathlib import Path

from pgcachelab.errors import UserError

# A spec of the lab's own is a few kB; the largest custom script a user might write is tens.
MAX_TEXT_BYTES = 4 * 1024 * 1024

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def regular_file_refusal(path: Path, limit: int = MAX_TEXT_BYTES) -> str | None:
    """Why `path` is not a file the lab reads (None when it is one: regular, at most `limit`
    bytes); a missing or unreadable path is left to the reader's own error."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return f"{_kind(info.st_mode)}, not a regular file"
    if info.st_size > limit:
        return f"{info.st_size:,} bytes, more than the {limit:,} the lab reads"
    return None


def read_user_text(path: Path, what: str, hint: str, limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of the regular file `path`, at most `limit` bytes; anything else is one
    UserError naming `what` (e.g. "spec") and the path, with `hint`.

    OSError (no such file, no permission) and UnicodeDecodeError are left to the caller, which
    words them for its file."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO: no wait
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(
                f"{what} {str(path)!r}: {_kind(info.st_mode)}, not a regular file",
                hint,
            )
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UserError(
            f"{what} {str(path)!r}: larger than the {limit:,} bytes the lab reads of one",
            hint,
        )
    return data.decode("utf-8")
