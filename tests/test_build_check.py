"""Whether a server binary was compiled with optimisation (clusters/build_check.py, issue 47):
real machine code from gcc at -O0 and -O2, and the pure reading of ELF symbol tables."""

import shutil
import subprocess

import pytest

from pgcachelab.clusters.binaries import embedded_bin_dir
from pgcachelab.clusters.build_check import UNOPTIMISED_SHARE, check_binary, check_code
from pgcachelab.clusters.guc import shown_unit

# Functions with arguments, as a server is full of: -O0 stores each into the frame.
PROGRAM = (
    "\n".join(f"long f{i}(long a, long b) {{ return a * {i} + b; }}" for i in range(40))
    + "\nint main(int argc, char **argv) { return (int) f1(argc, (long) argv); }\n"
)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize(
    ("level", "optimised"),
    [("-O0", False), ("-O2", True), ("-Os", True), ("-O2 -fno-omit-frame-pointer", True)],
)
def test_gcc_code_at_each_level(tmp_path, level, optimised):
    source = tmp_path / "p.c"
    source.write_text(PROGRAM)
    binary = tmp_path / "p"
    subprocess.run(["gcc", *level.split(), "-o", binary, source], check=True)
    check = check_binary(binary)
    assert check.optimised is optimised, check.evidence()
    assert check.functions >= 30  # at -O2 a few are shorter than the 8 bytes read


def test_the_wheels_server_is_optimised():
    check = check_binary(embedded_bin_dir() / "postgres")
    assert check.optimised is True and check.share is not None
    assert check.share < UNOPTIMISED_SHARE / 10


@pytest.mark.parametrize("data", [b"", b"\x7fELF", b"#!/bin/sh\n", b"\x7fELF\x01\x01" + b"\0" * 60])
def test_what_is_not_a_64_bit_elf_is_unknown_not_unoptimised(data):
    check = check_code(data)
    assert check.optimised is None and "not a 64-bit ELF" in check.evidence()


def test_a_truncated_binary_is_unknown(tmp_path):
    whole = (embedded_bin_dir() / "postgres").read_bytes()
    assert check_code(whole[:4096]).optimised is None


def test_9_5_shows_max_wal_size_without_its_unit():
    # 9.5.3's pg_settings: ('max_wal_size', '64', None, 'integer'); 9.6 shows '16MB'
    assert shown_unit("max_wal_size", None, "integer") == "16MB"
    assert shown_unit("min_wal_size", None, "integer") == "16MB"
    assert shown_unit("max_wal_size", "MB", "integer") == "MB"  # 10+: as the server says
    assert shown_unit("shared_buffers", None, "integer") is None
