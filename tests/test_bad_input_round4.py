"""Issue 48, bad input round 4: each case with the issue's own input, through the real entry
point; the doctor case on a real server with a role that cannot read data_directory."""

import os
import resource
import subprocess

import pytest
from fix_cli import cli_command, cli_env, run_cli_forked

CLI_MEMORY_BYTES = 1024**3  # a --plan takes ~200 MB; the unbounded read took 23.9 GB


def _limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLI_MEMORY_BYTES, CLI_MEMORY_BYTES))


def run_cli_bounded(*args, timeout_s: float = 60) -> subprocess.CompletedProcess:
    """`pgcachelab ARGS` in a new process with a memory limit and a timeout: a regression that
    reads without bound fails the test instead of eating the machine's memory."""
    return subprocess.run(
        cli_command(*args),
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        preexec_fn=_limited_memory,
    )


def refused(result: subprocess.CompletedProcess, pattern: str) -> None:
    """Exit 2, one `pgcachelab:` line matching `pattern`, and a hint: no traceback."""
    import re

    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("pgcachelab:")]
    assert len(lines) == 1 and re.search(pattern, lines[0]), result.stderr
    assert "Traceback" not in result.stderr
    assert re.search(r"^hint: ", result.stderr, re.MULTILINE), result.stderr


# -- 3. a spec read without bound ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/dev/zero", "a character device"),
        ("/dev/urandom", "a character device"),
        ("/", "a directory"),
    ],  # fmt: skip
)
def test_a_spec_that_is_not_a_regular_file_is_refused_before_a_byte_is_read(path, kind):
    result = run_cli_bounded("run", path, "--plan")
    refused(result, rf"spec '{path}': {kind}, not a regular file")


def test_a_fifo_spec_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    refused(run_cli_bounded("run", fifo, "--plan"), r"a FIFO \(named pipe\), not a regular file")


def test_a_spec_larger_than_the_cap_is_refused_at_the_cap(tmp_path):
    spec = tmp_path / "huge.toml"
    with open(spec, "wb") as out:
        out.truncate(64 * 1024**2)  # sparse: 64 MiB that take no disk
    refused(run_cli_bounded("run", spec, "--plan"), r"larger than the 4,194,304 bytes")


def test_a_custom_script_that_is_a_device_is_refused_in_the_spec(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('[pgbench]\nmode = "custom"\nscripts = ["/dev/zero"]\n')
    result = run_cli_forked("run", spec, "--plan")
    refused(result, r'pgbench\.scripts\[0\]\.file: invalid value "/dev/zero": a character device')


def test_inspect_refuses_a_work_dir_whose_settings_file_is_a_fifo(tmp_path):
    (tmp_path / "pgdata").mkdir()
    os.mkfifo(tmp_path / "pgdata" / "pgcachelab.conf")
    result = run_cli_bounded("inspect", "--work-dir", tmp_path)
    refused(result, r"pgcachelab\.conf': a FIFO \(named pipe\), not a regular file")
