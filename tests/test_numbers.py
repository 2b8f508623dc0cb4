"""One reader of the numbers a user gives (quantities.py, units.py): NaN, infinity, other
scripts' digits and out-of-range values are refused with the option's or key's name and its
range, one line and exit code 2, never a traceback (issue 48, items 5, 6 and 7).

The exact inputs of the issue, through the CLI (each fails before anything starts) and through
spec loading (one test per key); then properties of the readers over any text and any number.
"""

import math
import re
from pathlib import Path

import pytest
from fix_cli import SPECS_DIR, own_lines, run_cli
from hypothesis import given
from hypothesis import strategies as st

from pgcachelab.errors import UserError
from pgcachelab.quantities import (
    INT_MAX,
    MAX_RATE,
    NumberError,
    duration,
    number,
    size,
    whole_number,
)
from pgcachelab.spec import parse_spec
from pgcachelab.units import (
    MAX_BYTES,
    MAX_NUMBER,
    MAX_SECONDS,
    parse_bytes,
    parse_seconds,
    shared_buffers_bytes,
    split_number_and_unit,
)

DIGITS_400 = "1" * 400
# Every spelling Python's float() takes for a number that is none (or infinity).
NOT_FINITE = ["nan", "NaN", "inf", "-inf", "infinity", "Infinity", "1e999", "-1e999"]
NOT_ASCII = ["²", "٣", "１", "৪"]  # superscript two (isdigit, not int), Arabic-Indic, full-width


def one_line_error(result, message: str, hint: str) -> None:
    """Exit 2, no traceback, one `pgcachelab:` line matching `message` and one hint."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = own_lines(result.stderr)
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("pgcachelab: ") and re.search(message, lines[0]), lines[0]
    assert lines[1].startswith("hint: ") and re.search(hint, lines[1]), lines[1]


# -- the CLI: the exact inputs of the issue ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        pytest.param(["tpcc", "run", "--duration", "inf"],
                     r"--duration: invalid value 'inf': infinite$", r"from 1s to 365d",
                     id="tpcc-duration-inf"),
        pytest.param(["tpcc", "run", "--duration", DIGITS_400],
                     rf"--duration: invalid value '{DIGITS_400}': above 365d$", r"from 1s to 365d",
                     id="tpcc-duration-400-digits"),
        pytest.param(["tpcc", "run", "--duration", DIGITS_400 + "s"], r"above 365d$",
                     r"--duration 60s", id="tpcc-duration-400-digits-s"),
        pytest.param(["tpcc", "run", "--rate-tpm", "nan"],
                     r"--rate-tpm: invalid value 'nan': not a number \(NaN\)$",
                     r"above 0, at most 1000000000", id="tpcc-rate-tpm-nan"),
        pytest.param(["tpcc", "run", "--rate-tpm", "inf"],
                     r"--rate-tpm: invalid value 'inf': infinite$", r"--rate-tpm 300",
                     id="tpcc-rate-tpm-inf"),
        pytest.param(["tpcc", "run", "--weights", "²,43,4,4,47"],
                     r"--weights: invalid value '²,43,4,4,47': '²' is not ASCII",
                     r"45,43,4,4,4", id="tpcc-weights-superscript"),
        pytest.param(["tpcc", "run", "--clients", "٣"],
                     r"--clients: invalid value '٣': not ASCII", r"from 1 to 2147483647",
                     id="tpcc-clients-arabic-indic"),
        pytest.param(["tpcc", "run", "--clients", DIGITS_400], r"--clients: .*: above 2147483647$",
                     r"--clients 4", id="tpcc-clients-400-digits"),
        pytest.param(["hugepages", "--shared-buffers", DIGITS_400],
                     r"--shared-buffers: invalid value '1{400}': above 1024TB$",
                     r"from 128kB to 1024TB, e\.g\. --shared-buffers 4GB",
                     id="hugepages-shared-buffers-400-digits"),
        pytest.param(["hugepages", "--shared-buffers", DIGITS_400 + "GB"], r"above 1024TB$",
                     r"from 128kB to 1024TB", id="hugepages-shared-buffers-400-digits-gb"),
        pytest.param(["agent", "--lease", DIGITS_400 + "s",
                      "--store", "postgresql://u@/d?host=/nonexistent"],
                     r"--lease: invalid value '1{400}s': above 1d$", r"from 3s to 1d",
                     id="agent-lease-400-digits"),
        pytest.param(["agent", "--lease", "inf", "--store", "postgresql://u@/d?host=/nonexistent"],
                     r"--lease: invalid value 'inf': infinite$", r"--lease 60s",
                     id="agent-lease-inf"),
        pytest.param(["queue", "retry", "r/²/0", "--store", "postgresql://u@/d?host=/nonexistent"],
                     r"queue retry: invalid unit 'r/²/0': not ASCII", r"RUN/POINT/REPETITION",
                     id="queue-retry-superscript"),
        pytest.param(["pg", "install", "²"], r"invalid PostgreSQL major version '²'", r"9\.6",
                     id="pg-install-superscript"),
        pytest.param(["inspect", "--watch", "nan"], r"--watch: invalid value 'nan': not a number",
                     r"from 0\.1 to 86400", id="inspect-watch-nan"),
        pytest.param(["report", "last", "--point", "²"], r"--point: invalid value '²': not ASCII",
                     r"from 0 to 2147483647", id="report-point-superscript"),
    ],
)  # fmt: skip
def test_a_bad_number_option_is_one_line_and_exit_code_2(args, message, hint, lab_tmp):
    one_line_error(run_cli(*args, tmpdir=lab_tmp), message, hint)


@pytest.mark.parametrize(
    ("extra", "message", "hint"),
    [
        pytest.param(["--plan", "--memory", DIGITS_400 + "GB"],
                     r"--memory: invalid value '1{400}GB': above 1024TB$", r"from 64MB to 1024TB",
                     id="plan-memory-400-digits"),
        pytest.param(["--plan", "--memory", "1e999"], r"--memory: invalid value '1e999': infinite$",
                     r"--memory 1GiB", id="plan-memory-1e999"),
        pytest.param(["--pg-bin", "²"], r"invalid PostgreSQL major version '²'", r"9\.6",
                     id="run-pg-bin-superscript"),
    ],
)  # fmt: skip
def test_run_refuses_a_bad_number_option_before_anything_starts(
    extra, message, hint, tmp_path, lab_tmp
):
    lab = tmp_path / "lab"
    result = run_cli("run", SPECS_DIR / "two-points.toml", "--lab-dir", lab, *extra, tmpdir=lab_tmp)
    one_line_error(result, message, hint)
    assert not any(lab_tmp.iterdir())  # no cluster's work directory was made


def test_plan_json_of_a_nan_rate_is_refused_not_printed_as_invalid_json(tmp_path, lab_tmp):
    spec = tmp_path / "spec.toml"
    spec.write_text('[pgbench]\nduration = "1s"\nrate = nan\n')
    result = run_cli("run", spec, "--plan", "--json", tmpdir=lab_tmp)
    one_line_error(result, r"spec\.toml: pgbench\.rate: invalid value nan: not a number", r"tps")
    assert result.stdout == ""


# -- specs: one test per key ---------------------------------------------------------------------


def spec_error(text: str) -> UserError:
    with pytest.raises(UserError) as caught:
        parse_spec(text, Path("exp.toml"))
    assert "\n" not in caught.value.message
    return caught.value


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("[pgbench]\nrate = nan", r"pgbench\.rate: invalid value nan: not a number \(NaN\)",
         r"tps, e\.g\. 500; a number above 0, at most 1000000000"),
        ("[pgbench]\nrate = inf", r"pgbench\.rate: invalid value inf: infinite", r"at most"),
        ("[pgbench]\nrate = -inf", r"pgbench\.rate: invalid value -inf: infinite", r"above 0"),
        ("[pgbench]\nrate = 1e300", r"pgbench\.rate: invalid value 1e\+300: above 1000000000",
         r"at most 1000000000"),
        ("[pgbench]\nrate = 0", r"pgbench\.rate: invalid value 0: not above 0", r"above 0"),
        ("[pgbench]\nrate = 10\nlatency_limit = nan",
         r"pgbench\.latency_limit: invalid value nan: not a number \(NaN\)",
         r"milliseconds, e\.g\. 50; a number above 0, at most 31536000000"),
        ("[pgbench]\nrate = 10\nlatency_limit = inf",
         r"pgbench\.latency_limit: invalid value inf: infinite", r"milliseconds"),
        ('workload = "tpcc"\n[tpcc]\nrate_tpm = nan',
         r"tpcc\.rate_tpm: invalid value nan: not a number \(NaN\)", r'"off"; a number above 0'),
        ('workload = "tpcc"\n[tpcc]\nrate_tpm = inf',
         r"tpcc\.rate_tpm: invalid value inf: infinite", r'"off"'),
        ("[pgbench]\nduration = inf", r"pgbench\.duration: invalid value inf: infinite",
         r'a whole number of seconds from 1s to 365d, e\.g\. "20s"'),
        ("[pgbench]\nduration = nan", r"pgbench\.duration: invalid value nan: not a number",
         r"from 1s to 365d"),
        (f"[pgbench]\nduration = {DIGITS_400}",
         rf"pgbench\.duration: invalid value {DIGITS_400}: above 365d", r"from 1s to 365d"),
        (f'[pgbench]\nduration = "{DIGITS_400}s"', r"pgbench\.duration: .*: above 365d",
         r"from 1s to 365d"),
        ('[pgbench]\nduration = "٣s"', r'pgbench\.duration: invalid value "٣s": not ASCII',
         r"from 1s to 365d"),
        ('[pgbench]\nwarmup = "1e999s"', r"pgbench\.warmup: invalid value \"1e999s\"",
         r"from 0s to 365d"),
        (f'workload = "tpcc"\n[tpcc]\nduration = {DIGITS_400}', r"tpcc\.duration: .*above 365d",
         r"from 1s to 365d"),
        ("[inspect]\nevery = inf", r"inspect\.every: invalid value inf: infinite", r"365d"),
        (f'[machine]\nmemory = "{DIGITS_400}MB"', r"machine\.memory: .*: above 1024TB",
         r'a size from 64MB to 1024TB, e\.g\. "1GiB"'),
        (f"[machine]\nmemory = {DIGITS_400}", r"machine\.memory: .*: above 1024TB",
         r"from 64MB to 1024TB"),
        ('[machine]\nmemory = "1e999GB"', r"machine\.memory: invalid value \"1e999GB\"",
         r"from 64MB to 1024TB"),
        (f'[server.settings]\nshared_buffers = "{DIGITS_400}MB"',
         r"server\.settings\.shared_buffers: .*: above 1024TB", r"up to 1024TB"),
        (f"[server.settings]\nshared_buffers = {DIGITS_400}",
         r"server\.settings\.shared_buffers: .*: above 9223372036854775808", r"up to 1024TB"),
        ("[server.settings]\nshared_buffers = inf",
         r"server\.settings\.shared_buffers: invalid value inf: not a finite number", r"64MB"),
        (f'[sweep.settings]\nshared_buffers = ["{DIGITS_400}MB"]',
         r"sweep\.settings\.shared_buffers: .*: above 1024TB", r"up to 1024TB"),
        (f"[machine.host]\nvm.dirty_bytes = {DIGITS_400}",
         r"machine\.host\.vm\.dirty_bytes: invalid value 1{400}: above 1024TB", r"256MB"),
        (f'[machine.host]\nvm.dirty_bytes = "{DIGITS_400}MB"',
         r"machine\.host\.vm\.dirty_bytes: .*: above 1024TB", r"256MB"),
        (f'[machine.host]\nreadahead = "{DIGITS_400}kB"',
         r"machine\.host\.readahead: .*: above 1024TB", r"8MB"),
        (f"[machine.host]\nreadahead = {DIGITS_400}",
         r"machine\.host\.readahead: .*: above 2199023255552 sectors \(1024TB\)", r"8MB"),
        ("[machine.disk]\niops = inf", r"machine\.disk: .*iops: inf is not a positive integer",
         r"disk presets"),
        (f"[machine.disk]\nbandwidth = {DIGITS_400}",
         r"machine\.disk: .*bandwidth: .* is not a size per second", r"disk presets"),
        ("[sweep]\nclients = {from = 1, to = inf}", r"sweep\.clients: .*finite numbers",
         r"fix them"),
        ("[sweep]\nrate = {from = 1, to = 1e12, step = 1}",
         r"sweep\.rate: .*a range of 1e\+12 values, more than 10000", r"larger step"),
        ("[sweep]\nrate = [100, nan]", r"sweep\.rate: invalid value nan: not a number",
         r"above 0"),
        ("[[ladder]]\nname = \"x\"\nrate = inf", r"ladder\[0\]\.rate: invalid value inf: infinite",
         r"above 0"),
        ("repetitions = 2147483647", r"repetitions: invalid value 2147483647: neither an integer "
         r"from 1 to 10000", r"auto"),
        ("warmup_repetitions = 100000", r"warmup_repetitions: invalid value 100000: more than "
         r"10000", r"from 0 to 10000"),
        ('workload = "tpcc"\n[tpcc]\nweights = "²,43,4,4,47"',
         r"tpcc\.weights: invalid value '²,43,4,4,47': '²' is not ASCII", r"summing to 100"),
        ('workload = "tpcc"\n[tpcc]\nweights = [45, 43, 4, 4, 1e999]',
         r"tpcc\.weights: invalid value", r"summing to 100"),
    ],
)  # fmt: skip
def test_a_bad_number_in_a_spec_names_its_key_and_range(text, message, hint):
    error = spec_error(text)
    assert re.search(r"^exp\.toml: " + message, error.message), error.message
    assert error.hint and re.search(hint, error.hint), error.hint


def test_a_custom_script_weight_beyond_pgbench_s_int_is_refused(tmp_path):
    (tmp_path / "a.sql").write_text("select 1;\n")
    text = f'[pgbench]\nmode = "custom"\nscripts = [{{ file = "a.sql", weight = {DIGITS_400} }}]'
    with pytest.raises(UserError, match=r"scripts\[0\]\.weight: .*from 0 to 2147483647"):
        parse_spec(text, tmp_path / "exp.toml")


def test_the_agent_refuses_a_lease_out_of_range_before_it_looks_at_its_host():
    from pgcachelab.experiments.fleet import Agent

    for lease in (math.inf, math.nan, 1e300, 1.0):
        with pytest.raises(NumberError, match=r"^lease: invalid value"):
            Agent(store=None, progress=None, lease_s=lease)  # type: ignore[arg-type]


def test_good_values_still_read():
    assert parse_spec('[pgbench]\nrate = 500\nduration = "2min"', Path("x.toml")).parameters
    assert size("1.5GB", "--memory", 0) == 3 * 2**29
    assert size(" 64 MB ", "--memory", 0) == 64 * 2**20
    assert duration("2min", "--lease", 3) == 120
    assert duration(30, "x", 0, whole=True) == 30
    assert number("300", "--rate-tpm", 0, MAX_RATE, above=True) == 300
    assert number(0.5, "x", 0, 1) == 0.5
    assert whole_number("0042", "--top", 0) == 42
    assert shared_buffers_bytes("16384") == 128 * 2**20
    assert split_number_and_unit("1.5 GB") == (1.5, "GB")


# -- the readers: every spelling, and any text ---------------------------------------------------


@pytest.mark.parametrize("text", NOT_FINITE)
def test_nan_and_infinity_are_no_number_in_any_spelling(text):
    for read in (
        lambda: number(text, "--x", -1e9, 1e9),
        lambda: whole_number(text, "--x", -5, 5),
        lambda: size(text, "--x", 0),
        lambda: duration(text, "--x", 0),
    ):
        with pytest.raises(NumberError, match=r"^--x: invalid value .*(NaN|infinite|not a)"):
            read()
    assert split_number_and_unit(text) is None


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_from_toml_are_no_number(value):
    with pytest.raises(NumberError, match=r"NaN|infinite"):
        number(value, "rate", 0, 1e9)
    with pytest.raises(NumberError, match=r"NaN|infinite|finite"):
        duration(value, "duration", 0)
    with pytest.raises(ValueError, match="not a finite number"):
        parse_seconds(value)


@pytest.mark.parametrize("digit", NOT_ASCII)
def test_digits_of_other_scripts_are_refused(digit):
    for read in (
        lambda: whole_number(digit, "--x", 0, 9),
        lambda: number(digit, "--x", 0, 9),
        lambda: size(digit + "MB", "--x", 0),
        lambda: duration(digit + "s", "--x", 0),
    ):
        with pytest.raises(NumberError, match="not ASCII"):
            read()
    assert split_number_and_unit(digit + "MB") is None
    with pytest.raises(ValueError):  # neither 3 buffers nor a ValueError of int()'s
        shared_buffers_bytes(digit)


def test_huge_values_are_out_of_range_not_overflow_errors():
    with pytest.raises(NumberError, match="above 2147483647"):
        whole_number("9" * 5000, "--x", 0)  # int() itself refuses beyond 4300 digits
    with pytest.raises(NumberError, match="below 0"):
        whole_number("-" + "9" * 5000, "--x", 0)
    with pytest.raises(NumberError, match="above 1024TB"):
        size(10**400, "memory", 0)
    with pytest.raises(NumberError, match="above 365d"):
        duration(10**400, "duration", 0)
    with pytest.raises(ValueError, match="above"):
        shared_buffers_bytes(DIGITS_400)
    with pytest.raises(ValueError, match="above"):
        parse_bytes(DIGITS_400 + "TB")
    assert split_number_and_unit(DIGITS_400 + "MB") is None


def test_the_error_names_the_option_the_value_and_the_range():
    with pytest.raises(NumberError) as caught:
        size("2000TB", "--memory", 64 * 2**20, example="--memory 1GiB")
    error = caught.value
    assert str(error) == (
        "--memory: invalid value '2000TB': above 1024TB\n"
        "hint: a size from 64MB to 1024TB, e.g. --memory 1GiB"
    )
    assert (error.why, error.allowed) == ("above 1024TB", "a size from 64MB to 1024TB")


ANY_VALUE = st.one_of(
    st.text(),
    st.text(alphabet="0123456789.-+eE _²٣ kMGTBiBsminhd"),
    st.from_regex(r"\A-?[0-9]{1,400}(\.[0-9]{1,20})?(kB|MB|GB|TB|B|s|ms|min|h|d)?\Z"),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)


@given(ANY_VALUE)
def test_each_reader_returns_a_finite_value_in_range_or_a_number_error(value):
    readers = [
        (lambda: whole_number(value, "--x", 0, INT_MAX), 0, INT_MAX),
        (lambda: number(value, "--x", 0, MAX_RATE, above=True), 0, MAX_RATE),
        (lambda: size(value, "--x", 1024), 1024, MAX_BYTES),
        (lambda: duration(value, "--x", 1, whole=True), 1, MAX_SECONDS),
        (lambda: duration(value, "--x", 3, 86400.0), 3, 86400),
    ]
    for read, low, high in readers:
        try:
            result = read()
        except NumberError as error:
            assert error.message.startswith("--x: invalid value ")
            assert "\n" not in error.message and error.hint
            continue
        assert math.isfinite(result) and low <= result <= high


@given(ANY_VALUE)
def test_the_unit_parsers_return_a_bounded_amount_or_a_value_error(value):
    for read, high in ((parse_bytes, MAX_BYTES), (parse_seconds, MAX_SECONDS)):
        try:
            result = read(value)  # type: ignore[arg-type]
        except ValueError:
            continue
        assert math.isfinite(result) and 0 <= result <= high
    parsed = split_number_and_unit(value)  # type: ignore[arg-type]
    assert parsed is None or (math.isfinite(parsed[0]) and abs(parsed[0]) < MAX_NUMBER)
