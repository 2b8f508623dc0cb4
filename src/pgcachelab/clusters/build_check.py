"""Whether a server binary was compiled with optimisation: read from its machine code.

A published build is not always what its version number promises for a benchmark:
otj-pg-embedded 0.7.1's PostgreSQL 9.5.3 was compiled at -O0 and ran 25-35% below 9.3.5 and
9.6 in every cell of a quick archaeology run (issue 47), which was the compiler, not 9.5. At
-O0 gcc opens every x86-64 function with a frame pointer (`push %rbp; mov %rsp,%rbp`) and
stores each argument register into the frame (`mov %rdi,-0x18(%rbp)`); from -O1 arguments stay
in registers, even where frame pointers are kept (Fedora's builds). Measured on the binaries
the lab installs: 82% of the 9.5.3 build's functions open so, and at most 0.2% of any other's
(zonky 9.6 to 13, otj's 9.3.5, Debian's 15, the wheel's 18).

Only 64-bit little-endian ELF files are read (the lab's platform); anything else is
"unknown", never "unoptimised".
"""

import re
import struct
from dataclasses import dataclass
from pathlib import Path

# endbr64 (-fcf-protection) may come first; then the frame, up to 12 bytes of pushes and the
# frame's allocation, then %rdi or %edi stored at a negative offset from %rbp.
_UNOPTIMISED_ENTRY = re.compile(
    rb"(?:\xf3\x0f\x1e\xfa)?\x55\x48\x89\xe5.{0,12}?(?:\x48\x89\x7d|\x89\x7d)[\x80-\xff]", re.S
)
UNOPTIMISED_SHARE = 0.3  # -O0 builds measure 0.8, optimised ones at most 0.002
_SHT_SYMTAB, _SHT_DYNSYM, _STT_FUNC = 2, 11, 2
_SPECIAL_SECTIONS = (0, 0xFFF1, 0xFFF2)  # undefined, absolute, common
_ENTRY_BYTES = 32


@dataclass(frozen=True)
class BuildCheck:
    optimised: bool | None  # None: the file could not be read as a 64-bit ELF binary
    share: float | None  # functions whose entry is -O0's
    functions: int

    def evidence(self) -> str:
        if self.share is None:
            return "not a 64-bit ELF binary the lab can read"
        return (
            f"{self.share:.0%} of its {self.functions:,} functions open with -O0's frame and "
            "argument stores"
        )


def function_offsets(data: bytes) -> list[int] | None:
    """File offsets of the defined functions in an ELF64 little-endian file's symbol table
    (.symtab, else .dynsym: stripped servers keep the symbols extensions link against)."""
    if data[:4] != b"\x7fELF" or len(data) < 0x40 or data[4] != 2 or data[5] != 1:
        return None
    (section_table,) = struct.unpack_from("<Q", data, 0x28)
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for index in range(count):
        start = section_table + index * entry_size
        if start + 64 > len(data):
            return None
        _, kind, _, address, offset, size, _, _, _, _ = struct.unpack_from(
            "<IIQQQQIIQQ", data, start
        )
        sections.append((kind, address, offset, size))
    tables = [s for s in sections if s[0] == _SHT_SYMTAB] or [
        s for s in sections if s[0] == _SHT_DYNSYM
    ]
    if not tables:
        return None
    _, _, table_offset, table_size = tables[0]
    offsets = []
    for index in range(table_size // 24):
        start = table_offset + index * 24
        if start + 24 > len(data):
            break
        _, info, _, section, value, size = struct.unpack_from("<IBBHQQ", data, start)
        defined = section not in _SPECIAL_SECTIONS and section < len(sections)
        if info & 0xF == _STT_FUNC and defined and size >= 8:
            _, address, offset, _ = sections[section]
            offsets.append(offset + value - address)
    return offsets


def check_code(data: bytes) -> BuildCheck:
    """The build check of a binary's bytes."""
    offsets = function_offsets(data)
    if not offsets:
        return BuildCheck(None, None, 0)
    unoptimised = sum(
        1 for offset in offsets if _UNOPTIMISED_ENTRY.match(data, offset, offset + _ENTRY_BYTES)
    )
    share = unoptimised / len(offsets)
    return BuildCheck(share < UNOPTIMISED_SHARE, share, len(offsets))


def check_binary(path: Path) -> BuildCheck:
    """The build check of the file at `path` (None when it cannot be read)."""
    try:
        return check_code(Path(path).read_bytes())
    except OSError:
        return BuildCheck(None, None, 0)
