"""The bench/ scripts hold the lab's speed and overhead targets; they are run by hand, so a
refactor can break one unnoticed (issue 50 found bench/overhead.py importing a function gone
for weeks). Each must at least import and parse its options."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).parent.parent / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH_DIR.glob("*.py")))
def test_each_bench_script_imports_and_shows_its_options(script):
    result = subprocess.run(
        [sys.executable, BENCH_DIR / script, "--help"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout
