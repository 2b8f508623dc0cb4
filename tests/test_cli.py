"""The `pgcachelab` command through its real entry point, in a subprocess.

Bad input must end in exit code 2 with one `pgcachelab: ...` line (and at most one `hint: ...`)
before any server starts; a small real run must be listed, shown, exported and reported.
"""

import contextlib
import csv
import io
import json
import os
import pwd
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from fix_cli import SPECS_DIR, own_lines, run_cli, run_cli_forked
from fix_clusters import dsn_of
from fix_lab import store_query
from fix_processes import output_as_user, postmaster_pid, processes_mentioning, server_reachable_dir

from pgcachelab.spec import load_spec
from pgcachelab.store.metric_keys import undocumented_keys

VALID_SPEC = (SPECS_DIR / "two-points.toml").read_text()
REPORT_RUNS_STORE = Path(__file__).parent / "data" / "report-runs" / "results.sqlite"

# (spec text or None, arguments, stderr message regex, hint regex or None)
# Placeholders: {spec} the written spec, {lab} the lab dir, {empty} an empty directory, {other}
# another application's SQLite database.
BAD_INPUT = [
    pytest.param(
        'name = "x"\nbogus = 1\n',
        ["run", "{spec}"],
        r"spec\.toml: bogus: unknown key",
        r"use one of .*name.*pgbench",
        id="unknown-top-level-key",
    ),
    pytest.param(
        "[pgbench]\nclient = 2\n",
        ["run", "{spec}"],
        r"spec\.toml: pgbench\.client: unknown key",
        r"use one of .*clients",
        id="unknown-pgbench-key",
    ),
    pytest.param(
        '[server.settings]\nshared_bufers = "64MB"\n',
        ["run", "{spec}"],
        r'server\.settings\.shared_bufers: unknown server setting "shared_bufers"',
        r"did you mean shared_buffers\b",
        id="unknown-server-setting",
    ),
    pytest.param(
        '[server.settings]\nshared_buffers = "12XB"\n',
        ["run", "{spec}"],
        r'server\.settings\.shared_buffers: invalid value "12XB": unknown unit \'XB\'',
        r"fix the value",
        id="unknown-memory-unit",
    ),
    pytest.param(
        '[sweep.settings]\nwork_mem = ["64MB", "lots"]\n',
        ["run", "{spec}"],
        r'sweep\.settings\.work_mem: invalid value "lots": work_mem takes a number',
        r"fix the value",
        id="bad-swept-setting-value",
    ),
    pytest.param(
        "[sweep]\nscale = []\n",
        ["run", "{spec}"],
        r"spec\.toml: sweep\.scale: empty sweep",
        r"at least one value",
        id="empty-sweep",
    ),
    pytest.param(
        '[pgbench]\nmode = "read-only"\n',
        ["run", "{spec}"],
        r'pgbench\.mode: invalid value "read-only": unknown mode',
        r"use one of select-only, ",
        id="bad-mode",
    ),
    pytest.param(
        'workload = "cache-wash"\n[cache_wash]\nwarmup = "5s"\nwarmup_lookups = 1000\n',
        ["run", "{spec}"],
        r"spec\.toml: cache_wash\.warmup_lookups: cannot be given with cache_wash\.warmup$",
        r"keep one: warmup = \"100s\" warms for a time, warmup_lookups = N for a count",
        id="cache-wash-warmup-and-warmup-lookups",
    ),
    pytest.param(
        'workload = "cache-wash"\n[cache_wash]\nwarmup_lookups = 2.5\n',
        ["run", "{spec}"],
        r"cache_wash\.warmup_lookups: invalid value 2\.5: not an integer >= 0",
        r"use 0 or more",
        id="cache-wash-bad-warmup-lookups",
    ),
    pytest.param(
        "name = \n",
        ["run", "{spec}"],
        r"spec\.toml: not valid TOML",
        r"fix the TOML syntax",
        id="not-toml",
    ),
    pytest.param(
        None,
        ["run", "{empty}/nope.toml"],
        r"cannot read spec '.*/nope\.toml': No such file or directory",
        r"experiment TOML file",
        id="nonexistent-spec",
    ),
    pytest.param(
        None,
        ["run"],
        r"give either a spec file or --resume RUN",
        r"pgcachelab run x\.toml",
        id="neither-spec-nor-resume",
    ),
    pytest.param(
        None,
        ["run", "--resume", "nosuchrun"],
        r"no run 'nosuchrun' in .*results\.sqlite",
        r"pgcachelab runs",
        id="resume-unknown-run",
    ),
    pytest.param(
        VALID_SPEC,
        ["run", "{spec}", "--dsn", "host={empty} port=5999 user=lab dbname=postgres"],
        r"--dsn: cannot connect to dbname=postgres host=.* port=5999 user=lab: ",
        r"check that the server runs",
        id="dsn-where-nothing-listens",
    ),
    pytest.param(
        VALID_SPEC,
        ["run", "{spec}", "--dsn", "host={empty}", "--pg-bin", "{empty}"],
        r"--dsn and --pg-bin together",
        r"a server given by --dsn has its binaries",
        id="dsn-and-pg-bin",
    ),
    pytest.param(
        VALID_SPEC,
        ["run", "{spec}", "--pg-bin", "{empty}"],
        r"--pg-bin: no postgres binary in '.*'",
        r"/usr/lib/postgresql/15/bin",
        id="pg-bin-without-postgres",
    ),
    pytest.param(
        None,
        ["runs"],
        r"--lab-dir: no results in '.*'",
        r"run an experiment first",
        id="runs-without-results",
    ),
    pytest.param(
        None,
        ["export", "last", "--format", "xml"],
        r"--format: unknown format 'xml'",
        r"use csv or json",
        id="export-unknown-format",
    ),
]


def _spec_case(text: str, message: str, hint: str, case_id: str, *more_args):
    return pytest.param(text, ["run", "{spec}", *more_args], message, hint, id=case_id)


# Every table of a spec, and the options of `run` (issue 18): the value quoted, the key named.
BAD_INPUT += [
    _spec_case('repetitions = "many"', r'repetitions: invalid value "many"', r"\bauto\b",
               "repetitions-not-a-number"),
    _spec_case('order = "sideways"', r'order: invalid value "sideways"', r"interleaved",
               "unknown-order"),
    _spec_case('seed = "x"', r'seed: invalid value "x": not an integer', r"integer",
               "seed-not-an-integer"),
    _spec_case("warmup_repetitions = -1", r"warmup_repetitions: invalid value -1", r"0 or more",
               "negative-warmup-repetitions"),
    _spec_case("target_ci = 2", r"target_ci: only used with repetitions", r'"auto"',
               "target-ci-without-auto"),
    _spec_case('repetitions = "auto"\nmax_repetitions = 0', r"max_repetitions: invalid value 0",
               r"or more", "max-repetitions-zero"),
    _spec_case('workload = "oltp"', r'workload: invalid value "oltp"', r"pgbench, cache-wash",
               "unknown-workload"),
    _spec_case("name = 5", r"name: invalid value 5: not a string", r'name = "', "name-not-text"),
    _spec_case('store = "postgresql://u:pw@h/db"', r"store: a password in '.*u:\*\*\*@h/db'",
               r"PGPASSWORD", "store-url-with-password"),
    _spec_case('[server]\nlisten_tcp = "yes"', r'server\.listen_tcp: invalid value "yes"',
               r"true or false", "listen-tcp-not-boolean"),
    _spec_case("[server]\ndata_checksums = 1", r"server\.data_checksums: invalid value 1",
               r"true or false", "data-checksums-not-boolean"),
    _spec_case('[server]\npg_bin = "/nonexistent/bin"', r"no postgres binary in '/nonexistent/bin'",
               r"bin directory", "spec-pg-bin-missing"),
    _spec_case("[server]\nport = 5", r"server\.port: unknown key", r"listen_tcp",
               "unknown-server-key"),
    _spec_case('[machine]\nmemory = "1XB"', r'machine\.memory: invalid value "1XB"', r"1GiB",
               "machine-memory-unit"),
    _spec_case('[machine]\nmemory = "1MB"', r'machine\.memory: invalid value "1MB": below',
               r"1GiB", "machine-memory-too-small"),
    _spec_case('[machine]\nos_cache = "flush"', r'machine\.os_cache: invalid value "flush"',
               r"drop-cluster", "unknown-os-cache-mode"),
    _spec_case('[machine]\ndisk = "floppy"', r'machine\.disk: invalid value "floppy"',
               r"disk presets", "unknown-disk-preset"),
    _spec_case('[machine]\nprewarm = "yes"', r'machine\.prewarm: invalid value "yes"',
               r"true or false", "prewarm-not-boolean"),
    _spec_case("[pgbench]\nscale = 0", r"pgbench\.scale: invalid value 0", r"1 or more",
               "scale-zero"),
    _spec_case("[pgbench]\nclients = 0", r"pgbench\.clients: invalid value 0", r"1 or more",
               "clients-zero"),
    _spec_case('[pgbench]\nduration = "10 parsecs"', r"pgbench\.duration: .*'parsecs'",
               r'"20s"', "duration-unit"),
    _spec_case('[pgbench]\nduration = "1.5s"', r'pgbench\.duration: invalid value "1\.5s"',
               r'"20s"', "duration-not-whole-seconds"),
    _spec_case('[pgbench]\nprotocol = "carrier-pigeon"', r'protocol: invalid value "carrier-',
               r"extended", "unknown-protocol"),
    _spec_case("[pgbench]\nrate = -5", r"pgbench\.rate: invalid value -5", r"500",
               "negative-rate"),
    _spec_case('[pgbench]\nscale_class = "huge"', r'scale_class: invalid value "huge"',
               r"small, medium, large", "unknown-scale-class"),
    _spec_case('[pgbench]\nmode = "custom"', r"pgbench\.scripts: custom mode needs scripts",
               r"scripts = \[", "custom-without-scripts"),
    _spec_case('[pgbench]\nmode = "custom"\nscripts = [{ file = "missing.sql", weight = 1 }]',
               r'scripts\[0\]\.file: invalid value "missing\.sql": no such file',
               r"relative to the spec", "missing-script"),
    _spec_case("[pgbench]\ntransactions = 0", r"pgbench\.transactions: invalid value 0",
               r"1 or more", "transactions-zero"),
    _spec_case('workload = "cache-wash"\n[cache_wash]\ntable_size = -1',
               r"cache_wash\.table_size: invalid value -1", r"fraction", "negative-table-size"),
    _spec_case('workload = "cache-wash"\n[cache_wash]\nlookups = 0',
               r"cache_wash\.lookups: invalid value 0", r"1 or more", "cache-wash-lookups-zero"),
    _spec_case('workload = "tpcc"\n[tpcc]\nwarehouses = 0', r"tpcc\.warehouses: invalid value 0",
               r"1 or more", "tpcc-warehouses-zero"),
    _spec_case('workload = "tpcc"\n[tpcc]\nweights = "1,2,3"',
               r"tpcc\.weights: invalid value '1,2,3'", r"summing to 100", "tpcc-weights"),
    _spec_case('workload = "tpcc"\n[tpcc]\nrate_tpm = "fast"',
               r'tpcc\.rate_tpm: invalid value "fast"', r'"off"', "tpcc-rate-not-a-number"),
    _spec_case("[sweep]\nclients = 4", r"sweep\.clients: invalid value 4: a sweep needs a list",
               r"\[1, 2, 4\]", "sweep-not-a-list"),
    _spec_case("[sweep]\nbogus = [1, 2]", r"sweep\.bogus: unknown sweep key", r"sweep.settings",
               "unknown-sweep-key"),
    _spec_case("[sweep]\nclients = [1, 1]", r"sweep\.clients: invalid value \[1, 1\]: repeats",
               r"once", "sweep-repeats-a-value"),
    _spec_case("[report]\ntitle = 5", r"report\.title: invalid value 5", r'title = "',
               "report-title-not-text"),
    _spec_case('[inspect]\nmethod = "xray"', r'inspect\.method: invalid value "xray"',
               r"pg_buffercache", "unknown-inspect-method"),
    _spec_case('[inspect]\nevery = "soon"', r'inspect\.every: invalid value "soon"', r'"20s"',
               "inspect-every-not-a-duration"),
    _spec_case("[inspect]\ntop = -1", r"inspect\.top: invalid value -1", r"1 or more",
               "inspect-top-negative"),
    _spec_case('[[ladder]]\nname = "a"\nbogus = 1', r"ladder\[0\]\.bogus: a pgbench ladder step",
               r"settings = ", "ladder-step-unknown-key"),
    _spec_case("[ladder]\nx = 1", r"ladder: not a list of steps", r"\[\[ladder\]\]",
               "ladder-not-a-list"),
    _spec_case("", r"--memory: invalid value 'lots'", r"1GiB", "memory-option", "--memory", "lots"),
    _spec_case("", r"--disk: invalid value 'floppy'", r"--disk nvme", "disk-option", "--disk",
               "floppy"),
    _spec_case("", r"--store: unknown store scheme 'ftp://'", r"postgresql://", "store-scheme",
               "--store", "ftp://x/y"),
    _spec_case("", r"--pg-bin: no PostgreSQL 77 installed", r"pg install 77", "pg-bin-version",
               "--pg-bin", "77"),
    _spec_case("", r'--dsn: cannot connect to .*socket "/nonexistent/\.s\.PGSQL\.1" failed',
               r"server runs", "dsn-socket-reason-whole", "--dsn", "host=/nonexistent port=1"),
    # issue 35: what still got through
    _spec_case('[server.settings]\napplication_name = "x\\ny"',
               r'server\.settings\.application_name: invalid value "x\\ny": a server setting '
               r"cannot hold a newline", r"remove it", "setting-with-a-newline"),
    _spec_case("[pgbench]\nscale = 99999999999999999999",
               r"pgbench\.scale: invalid value 99999999999999999999: more than pgbench's limit "
               r"of 2147483647", r"from 1 to 2147483647", "scale-beyond-int"),
    _spec_case("[pgbench]\nscale = 1000000000",
               r"pgbench\.scale: invalid value 1000000000 \(about 14\.7MB per unit of scale\): "
               r"the data would take about 14006TB, more than the .* free in /tmp/",
               r"lower it, or free space there \(or set TMPDIR", "scale-beyond-free-space"),
    _spec_case("[pgbench]\nclients = 100000",
               r"pgbench\.clients: invalid value 100000: more than a cluster the lab manages "
               r"takes \(max_connections 5000, one of them the lab's own session\)",
               r"at most 4999 clients, or raise max_connections in \[server\.settings\] \(the "
               r"lab raises it by itself up to 5,000\)", "clients-beyond-max-connections"),
    _spec_case("[server.settings]\nmax_connections = 20\n[sweep]\nclients = [1, 20]",
               r"sweep\.clients: invalid value 20: .*\(max_connections 20, ",
               r"at most 19 clients", "swept-clients-beyond-max-connections"),
    _spec_case('[machine]\nmemory = "128MB"\n[server.settings]\nshared_buffers = "1GB"',
               r"server\.settings\.shared_buffers: invalid value 1GB: does not fit in the "
               r"memory limit of 128MB: every point would fail",
               r"lower shared_buffers below the limit", "shared-buffers-beyond-memory"),
    _spec_case("", r"--store: '.*other\.sqlite': not a pgcachelab store: it holds other tables "
               r"\(accounts\)", r"not a pgcachelab store: give a results\.sqlite",
               "store-another-applications-sqlite", "--store", "{other}"),
    _spec_case("", r"^pgcachelab: --dsn: empty connection string$",
               r"leave --dsn out for a cluster the lab manages", "dsn-empty", "--dsn", ""),
]  # fmt: skip

# Commands other than `run`, with complete arguments. Placeholders: {store} a copy of a real
# store, {empty} an empty directory, {lab} a lab dir that does not exist yet, {other} another
# application's SQLite database.
BAD_COMMANDS = [
    pytest.param(["run", "--resume", "x", "--disk", "nvme", "--lab-dir", "{lab}"],
                 r"--disk with --resume", r"keeps the disk", id="resume-with-disk"),
    pytest.param(["run", "/bin/ls", "--lab-dir", "{lab}"], r"/bin/ls: not a TOML text file",
                 r"experiment TOML file", id="run-a-binary-file"),
    pytest.param(["show", "nope", "--store", "{store}"], r"no run 'nope' in .*results\.sqlite",
                 r"pgcachelab runs", id="show-unknown-run"),
    pytest.param(["show", "last", "--lab-dir", "{empty}"], r"--lab-dir: no results in",
                 r"run an experiment first", id="show-empty-lab-dir"),
    pytest.param(["report", "nope", "--store", "{store}"], r"no run 'nope'", r"pgcachelab runs",
                 id="report-unknown-run"),
    pytest.param(["report", "last", "--store", "{store}", "--output", "/proc/x"],
                 r"^pgcachelab: /proc/x: no such file or directory", r"check the path",
                 id="report-output-unwritable"),
    pytest.param(["advise", "nope", "--store", "{store}"], r"no run 'nope'", r"pgcachelab runs",
                 id="advise-unknown-run"),
    pytest.param(["compare", "nope1", "nope2", "--store", "{store}"], r"no run 'nope1'",
                 r"pgcachelab runs", id="compare-unknown-run"),
    pytest.param(["runs", "--store", "{spec}"], r"--store: '.*spec\.toml': file is not a database",
                 r"not a pgcachelab store", id="runs-store-not-a-database"),
    pytest.param(["runs", "--store", "{other}"],
                 r"--store: '.*other\.sqlite': not a pgcachelab store: it holds other tables",
                 r"not a pgcachelab store", id="runs-store-another-applications-sqlite"),
    pytest.param(["runs", "--store", "postgresql://u:secret@/nodb?host=/nonexistent"],
                 r"--store: cannot connect to 'postgresql://u:\*\*\*@/nodb.*socket",
                 r"PGPASSWORD", id="runs-store-unreachable-password-masked"),
    pytest.param(["runs", "--lab-dir", "/tmp/" + "a" * 300], r"a{300}/results\.sqlite: file name",
                 r"shorter path", id="lab-dir-too-long"),
    pytest.param(["store", "copy", "--from", "{store}", "--to", "/proc/x.sqlite"],
                 # root may write to /proc's directory and SQLite says why not; a user may not
                 r"--to: '/proc/x\.sqlite': (unable to open|permission denied)",
                 r"directory|permissions", id="copy-to-proc"),
    pytest.param(["store", "copy", "--from", "{empty}", "--to", "{lab}/x.sqlite"],
                 r"--from: no results in", r"run an experiment first", id="copy-from-empty"),
    pytest.param(["agent", "--store", "{store}"], r"--store: .*a queue needs the shared PostgreSQL",
                 r"postgresql://user@host/dbname", id="agent-with-sqlite"),
    pytest.param(["agent", "--lease", "1s", "--store", "postgresql://u@/d?host=/nonexistent"],
                 r"--lease: invalid value '1s': below 3s", r"--lease 60s", id="agent-short-lease"),
    pytest.param(["agent", "--once", "--wait", "--lab-dir", "{lab}"], r"--once with --wait",
                 r"stops after one unit", id="agent-once-and-wait"),
    pytest.param(["agent", "--store", "postgresql://u:secret@/nodb?host=/nonexistent"],
                 r"--store: cannot connect to 'postgresql://u:\*\*\*@/nodb", r"PGPASSWORD",
                 id="agent-store-unreachable"),
    pytest.param(["run", "{spec}", "--queue", "--lab-dir", "{lab}"],
                 r"a queue needs the shared PostgreSQL store", r"--store postgresql://",
                 id="queue-without-postgresql"),
    pytest.param(["run", "--resume", "x", "--queue", "--lab-dir", "{lab}"],
                 r"--queue with --resume", r"pgcachelab agent", id="queue-with-resume"),
    pytest.param(["run", "--resume", "x", "--plan", "--lab-dir", "{lab}"],
                 r"^pgcachelab: --plan with --resume$", r"a new run", id="plan-with-resume"),
    pytest.param(["run", "{spec}", "--plan", "--queue", "--lab-dir", "{lab}"],
                 r"--plan with --queue", r"then queue", id="plan-with-queue"),
    pytest.param(["run", "{spec}", "--plan", "--dsn", "host=/nonexistent", "--lab-dir", "{lab}"],
                 r"--plan with --dsn", r"drop --dsn", id="plan-with-dsn"),
    pytest.param(["run", "--plan", "--lab-dir", "{lab}"], r"--plan needs a spec file",
                 r"--plan", id="plan-without-spec"),
    pytest.param(["run", "{spec}", "--json", "--lab-dir", "{lab}"], r"--json without --plan",
                 r"--plan --json", id="json-without-plan"),
    pytest.param(["run", "{spec}", "--format", "json", "--lab-dir", "{lab}"],
                 r"--format without --plan", r"--plan --format", id="format-without-plan"),
    # --format is one spelling on every command that prints a result: a format the command
    # cannot write is refused before any work, naming what it offers (issue 50)
    pytest.param(["run", "{spec}", "--plan", "--format", "csv", "--lab-dir", "{lab}"],
                 r"^pgcachelab: --format: run --plan cannot write 'csv'$", r"use text or json",
                 id="plan-format-csv"),
    pytest.param(["doctor", "--format", "csv"],
                 r"^pgcachelab: --format: doctor cannot write 'csv'$", r"^hint: use text or json$",
                 id="doctor-format-csv"),
    pytest.param(["doctor", "--format", "yaml"], r"^pgcachelab: --format: unknown format 'yaml'$",
                 r"use text or json", id="doctor-unknown-format"),
    pytest.param(["doctor", "--json", "--format", "text"],
                 r"^pgcachelab: --json with --format 'text'$", r"--json is the same as --format",
                 id="doctor-json-and-format-text"),
    pytest.param(["tpcc", "run", "--format", "markdown"],
                 r"--format: tpcc run cannot write 'markdown'", r"use text or json",
                 id="tpcc-format-markdown"),
    pytest.param(["inspect", "--dsn", "host=/nonexistent", "--format", "csv"],
                 r"--format: inspect cannot write 'csv'", r"use text or json",
                 id="inspect-format-csv"),
    pytest.param(["reproduce", "--format", "csv", "--lab-dir", "{lab}"],
                 r"--format: reproduce cannot write 'csv'", r"use text or json",
                 id="reproduce-format-csv"),
    pytest.param(["export", "last", "--format", "text", "--lab-dir", "{lab}"],
                 r"--format: export cannot write 'text'", r"use csv or json",
                 id="export-format-text"),
    pytest.param(["export", "last", "--json", "--format", "csv", "--lab-dir", "{lab}"],
                 r"--json with --format 'csv'", r"give one", id="export-json-and-format-csv"),
    pytest.param(["compare", "a", "b", "--format", "csv", "--lab-dir", "{lab}"],
                 r"--format: compare cannot write 'csv'", r"use text, json or markdown",
                 id="compare-format-csv"),
    pytest.param(["run", "{spec}", "--plan", "--memory", "lots", "--lab-dir", "{lab}"],
                 r"--memory: invalid value 'lots'", r"--memory 1GiB", id="plan-memory"),
    pytest.param(["pg", "install", "7.1"], r"invalid PostgreSQL major version '7\.1'", r"9\.6",
                 id="pg-install-unknown-version"),
    pytest.param(["tpcc", "run", "--duration", "5x"], r"--duration: invalid value '5x'",
                 r"--duration 60s", id="tpcc-duration-unit"),
    pytest.param(["tpcc", "run", "--duration", "0.5s"], r"--duration: invalid value '0\.5s'",
                 r"--duration 60s", id="tpcc-duration-fraction"),
    pytest.param(["tpcc", "run", "--clients", "0"], r"--clients: invalid value '0'",
                 r"--clients 4", id="tpcc-clients-zero"),
    pytest.param(["tpcc", "run", "--weights", "1,2"], r"--weights: invalid value '1,2'",
                 r"45,43,4,4,4", id="tpcc-weights"),
    pytest.param(["tpcc", "run", "--set", "shared_buffers"], r"--set: invalid value",
                 r"name=value", id="tpcc-set-without-value"),
    pytest.param(["tpcc", "run", "--set", "application_name=x\ny"],
                 r"--set: invalid value 'application_name=x\\ny': a server setting cannot hold",
                 r"remove it", id="tpcc-set-with-a-newline"),
    pytest.param(["tpcc", "run", "--transactions", "10", "--duration", "5"],
                 r"--duration '5' with --transactions 10: a run is timed or counted, not both",
                 r"give one", id="tpcc-transactions-and-duration"),
    pytest.param(["tpcc", "run", "--transactions", "0"], r"--transactions: invalid value '0'",
                 r"--transactions 4", id="tpcc-transactions-zero"),
    pytest.param(["tpcc", "run", "--dsn", ""], r"--dsn: empty connection string",
                 r"leave --dsn out", id="tpcc-dsn-empty"),
    pytest.param(["inspect", "--dsn", ""], r"--dsn: empty connection string",
                 r"leave --dsn out", id="inspect-dsn-empty"),
    pytest.param(["tpcc", "load", "--warehouses", "0"], r"--warehouses: invalid value '0'",
                 r"--warehouses 2", id="tpcc-load-warehouses-zero"),
    pytest.param(["tpcc", "load", "--workers", "0"], r"--workers: invalid value '0'",
                 r"--workers 2", id="tpcc-load-workers-zero"),
    pytest.param(["inspect", "--method", "xray", "--dsn", "host=/nonexistent"],
                 r"--method: unknown method 'xray'", r"pg_buffercache", id="inspect-method"),
    pytest.param(["inspect", "--dsn", "host=/nonexistent port=1"],
                 r'--dsn: cannot connect: .*socket "/nonexistent/\.s\.PGSQL\.1" failed',
                 r"server runs", id="inspect-dsn-keeps-libpq-first-line"),
    pytest.param(["inspect", "--work-dir", "{empty}"], r"--work-dir: no managed cluster in",
                 r"--dsn", id="inspect-work-dir-empty"),
    pytest.param(["doctor", "--fail-on", "never"], r"--fail-on: invalid value 'never'",
                 r"critical", id="doctor-fail-on"),
    pytest.param(["hugepages", "--shared-buffers", "lots"],
                 r"--shared-buffers: invalid value 'lots'", r"4GB", id="hugepages-size"),
    pytest.param(["extension", "install", "--pg-bin", "/nonexistent"],
                 r"--pg-bin: no postgres binary in '/nonexistent'", r"bin directory",
                 id="extension-pg-bin"),
]  # fmt: skip


def assert_user_error(result, message: str, hint: str | None) -> None:
    """Exit 2, stderr one `pgcachelab:` line matching `message`, then one `hint:` line or none."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = own_lines(result.stderr)
    assert len(lines) in (1, 2), result.stderr
    assert lines[0].startswith("pgcachelab: "), result.stderr
    assert re.search(message, lines[0]), lines[0]
    if hint is None:
        assert len(lines) == 1, result.stderr
    else:
        assert len(lines) == 2, result.stderr
        assert lines[1].startswith("hint: "), result.stderr
        assert re.search(hint, lines[1]), lines[1]


def assert_nothing_ran(lab_dir: Path, lab_tmp: Path) -> None:
    """No run in the store and no cluster work directory was ever made."""
    assert store_query(lab_dir, "select run_id from runs") == []
    assert store_query(lab_dir, "select run_id from measurements") == []
    assert list(lab_tmp.iterdir()) == []


@pytest.mark.parametrize(("spec_text", "args", "message", "hint"), BAD_INPUT)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, lab_tmp, spec_text, args, message, hint):
    lab_dir, empty = tmp_path / "lab", tmp_path / "empty"
    empty.mkdir()
    spec = tmp_path / "spec.toml"
    if spec_text is not None:
        spec.write_text(spec_text)
    other = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(other)) as db:
        db.execute("create table accounts (id integer)")
    places = {"spec": spec, "lab": lab_dir, "empty": empty, "other": other}
    arguments = [arg.format(**places) for arg in args]
    result = run_cli_forked(*arguments, "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert_user_error(result, message, hint)
    assert_nothing_ran(lab_dir, lab_tmp)
    with contextlib.closing(sqlite3.connect(other)) as db:  # not a byte of the lab's in it
        assert db.execute("select name from sqlite_master").fetchall() == [("accounts",)]
        assert db.execute("pragma journal_mode").fetchone() == ("delete",)


@pytest.mark.parametrize(("args", "message", "hint"), BAD_COMMANDS)
def test_bad_command_input_is_one_line_and_exit_code_2(tmp_path, lab_tmp, args, message, hint):
    store, empty, spec = tmp_path / "results.sqlite", tmp_path / "empty", tmp_path / "spec.toml"
    shutil.copyfile(REPORT_RUNS_STORE, store)
    empty.mkdir()
    spec.write_text(VALID_SPEC)
    other = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(other)) as db:
        db.execute("create table accounts (id integer)")
    places = {"store": store, "empty": empty, "lab": tmp_path / "lab", "spec": spec,
              "other": other}  # fmt: skip
    result = run_cli_forked(*[arg.format(**places) for arg in args], tmpdir=lab_tmp)
    assert_user_error(result, message, hint)
    assert list(lab_tmp.iterdir()) == []
    assert not (tmp_path / "lab").exists()  # nothing created for a command that failed


def test_the_bad_input_tables_cover_every_command():
    commands = {p.values[1][0] for p in BAD_INPUT} | {p.values[0][0] for p in BAD_COMMANDS}
    assert len(BAD_INPUT) + len(BAD_COMMANDS) >= 60
    assert commands >= {"run", "runs", "show", "export", "report", "advise", "compare", "store",
                        "pg", "tpcc", "inspect", "doctor", "hugepages", "extension"}  # fmt: skip


TERMINAL_TITLE = "\u001b]0;PWNED\u0007"  # an OSC sequence that retitles the terminal


def test_names_and_labels_are_printed_with_their_control_characters_escaped(tmp_path, lab_tmp):
    """A run's name and a point's label come from the spec (issue 35, F10): on a terminal
    they must not move the cursor, retitle the window or split a row."""
    store = tmp_path / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_STORE, store)
    run_id = "20261122-232256-9b0294"
    db = sqlite3.connect(store)
    with db:
        db.execute("update runs set name = ? where run_id = ?", (f"x{TERMINAL_TITLE}y", run_id))
        db.execute("update points set label = ? where run_id = ? and point_index = 0",
                   (f"scale=1\n{TERMINAL_TITLE}", run_id))  # fmt: skip
    db.close()
    runs = run_cli_forked("runs", "--store", store, tmpdir=lab_tmp)
    shown = run_cli_forked("show", run_id, "--store", store, tmpdir=lab_tmp)
    for result in (runs, shown):
        assert result.returncode == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "x\\x1b]0;PWNED\\x07y" in runs.stdout
    assert "scale=1\\n\\x1b]0;PWNED\\x07" in shown.stdout


def test_a_usage_error_is_exit_code_2_without_a_traceback(tmp_path):
    result = run_cli("run", "--no-such-option", "--lab-dir", tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "No such option: --no-such-option" in result.stderr


# -- run --plan: what a run would do, without starting anything -----------------------------------

EXPERIMENTS = Path(__file__).parent.parent / "experiments"


def test_plan_json_lists_the_measurements_in_the_order_of_the_schedule(tmp_path, lab_tmp):
    spec = EXPERIMENTS / "cache-split-quick.toml"  # memory limit, huge pages, a disk: root's
    lab_dir = tmp_path / "lab"
    result = run_cli_forked("run", spec, "--plan", "--json", "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    assert own_lines(result.stderr) == []
    plan = json.loads(result.stdout)
    experiment = load_spec(spec)
    schedule = experiment.schedule()
    assert [(p["point"], p["repetition"]) for p in plan["points"]] == schedule
    assert (plan["order"], plan["repetitions"]) == (experiment.order, experiment.repetitions)
    assert plan["estimated_seconds"] == sum(p["estimated_seconds"] for p in plan["points"])
    first = plan["points"][0]
    assert first["settings"] == experiment.points()[schedule[0][0]].settings
    on = next(p for p in plan["points"] if p["settings"]["huge_pages"] == "on")
    pool = on["huge_pages_estimate"]["pages"] * on["huge_pages_estimate"]["page_size_bytes"]
    assert on["huge_pages_estimate"]["bytes"] == pool
    assert on["memory"] == {
        "ram_bytes": 2**30,
        "huge_pages_pool_bytes": pool,
        "cap_bytes": 2**30 - pool,
    }
    assert first["workload"]["disk"] == "custom:read=500us,write=20us,sync=1ms"
    # nothing started, nothing written: no store, no cluster directory
    assert not lab_dir.exists()
    assert list(lab_tmp.iterdir()) == []


SEED_000_SHARED_BUFFERS = [
    "14GB",
    "13GB",
    "12GB",
    "11GB",
    "10GB",
    "9GB",
    "8GB",
    "7GB",
    "6GB",
    "5GB",
    "4GB",
    "3GB",
    "2GB",
    "1GB",
    "512MB",
    "256MB",
    "128MB",
    "64MB",
    "32MB",
    "16MB",
    "8MB",
    "4MB",
    "2MB",
    "1MB",
    "512kB",
    "256kB",
    "128kB",
]  # the seed's config.sh, verbatim


def test_the_cache_split_plan_is_the_seed_s_27_values_with_huge_pages_then_without(tmp_path):
    result = run_cli_forked(
        "run", EXPERIMENTS / "cache-split.toml", "--plan", "--json", "--lab-dir", tmp_path
    )
    assert result.returncode == 0, result.stderr
    points = json.loads(result.stdout)["points"]
    first_round = [(p["settings"]["huge_pages"], p["settings"]["shared_buffers"])
                   for p in points if p["repetition"] == 0]  # fmt: skip
    assert first_round == [("on", v) for v in SEED_000_SHARED_BUFFERS] + [
        ("off", v) for v in SEED_000_SHARED_BUFFERS
    ]
    # every round in the seed's order, one after the other
    assert [p["repetition"] for p in points] == [r for r in range(10) for _ in range(54)]
    # the seed's 6 fails at 128kB on 18: the most that runs there (the spec says why)
    assert all(p["settings"]["max_parallel_workers_per_gather"] == "4" for p in points)


def test_plan_honours_memory_and_disk_as_the_run_would(tmp_path, lab_tmp):
    spec = EXPERIMENTS / "tpcc-ladder-quick.toml"
    options = ["--memory", "4GiB", "--disk", "nvme", "--lab-dir", tmp_path]
    result = run_cli_forked("run", spec, "--plan", *options, tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("plan of tpcc-ladder-quick")
    assert "RAM 4GB (--memory)" in lines[1]
    step_memory = next(line for line in lines if "step=memory" in line)
    assert "shared_buffers=2048MB" in step_memory  # 50% of the 4GiB --memory gives
    total = next(line for line in lines if line.startswith("total: "))
    # 24 x (3 s warm-up + 15 s + 2 s) + 3 x (3 s warm-up + 2 s): the runs of 100 transactions
    # a terminal are not estimated but for their warm-up
    assert total.startswith("total: ~8 min (495 s)")
    as_json = run_cli_forked(
        "run", spec, "--plan", "--json", "--disk", "nvme", "--lab-dir", tmp_path, tmpdir=lab_tmp
    )
    assert {p["workload"]["disk"] for p in json.loads(as_json.stdout)["points"]} == {"nvme"}


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming the unprivileged user needs root")
def test_plan_works_for_an_unprivileged_user_on_a_spec_that_needs_root():
    from pgcachelab.cli.plan import plan_output
    from pgcachelab.exporters import json as json_export

    spec = EXPERIMENTS / "cache-split-quick.toml"
    nobody = pwd.getpwnam("nobody")

    def plan_json() -> str:
        out = io.StringIO()
        plan_output(spec, None, None, None, json_export.plan, out)
        return out.getvalue()

    text = output_as_user(nobody, plan_json)
    plan = json.loads(text)
    assert plan["measurement_count"] == len(load_spec(spec).schedule())
    pools = [p["huge_pages_estimate"]["pages"] for p in plan["points"] if p["huge_pages_estimate"]]
    assert max(pools) > 128  # 256MB of shared_buffers and more


# -- an existing server given by --dsn: measured, never reconfigured -----------------------------


def _server_state(cluster) -> dict:
    """What would show that the lab touched the server: its files, its settings, its pid."""
    files = {}
    for name in ("postgresql.conf", "postgresql.auto.conf", "pgcachelab.conf"):
        path = cluster.data_dir / name
        files[name] = (path.read_bytes(), path.stat().st_mtime_ns)
    with cluster.connect() as conn:
        loaded_at = conn.execute("select pg_conf_load_time()").fetchone()[0]
        settings = dict(
            conn.execute(
                "select name, setting || ':' || source from pg_settings"
                " where name in ('shared_buffers', 'work_mem')"
            ).fetchall()
        )
    return {
        "files": files,
        "conf_loaded_at": loaded_at,
        "settings": settings,
        "postmaster": postmaster_pid(cluster.work_dir),
    }


@pytest.mark.server
def test_dsn_refuses_a_restart_setting_before_anything_runs(shared_cluster, tmp_path, lab_tmp):
    shared_cluster.apply_settings({})
    before = _server_state(shared_cluster)
    lab_dir = tmp_path / "lab"
    result = run_cli(
        "run", SPECS_DIR / "sweep-shared-buffers.toml", "--dsn", dsn_of(shared_cluster),
        "--lab-dir", lab_dir, tmpdir=lab_tmp,
    )  # fmt: skip
    assert_user_error(
        result,
        r'sweep\.settings\.shared_buffers: "shared_buffers" needs a restart of the server given'
        r" by --dsn",
        r"run without --dsn",
    )
    assert_nothing_ran(lab_dir, lab_tmp)
    assert _server_state(shared_cluster) == before  # shared_buffers included


@pytest.fixture(scope="module")
def work_mem_run_on_dsn(module_cluster, tmp_path_factory):
    """`pgcachelab run sweep-work-mem.toml --dsn` once: the server's state around it, the store."""
    module_cluster.stop()
    module_cluster.apply_settings({})
    lab_dir = tmp_path_factory.mktemp("dsn-run") / "lab"
    before = _server_state(module_cluster)
    with server_reachable_dir() as lab_tmp:
        result = run_cli(
            "run", SPECS_DIR / "sweep-work-mem.toml", "--dsn", dsn_of(module_cluster),
            "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp,
        )  # fmt: skip
        made_in_tmp = list(lab_tmp.iterdir())
    after = _server_state(module_cluster)
    module_cluster.stop()
    return {"result": result, "lab_dir": lab_dir, "before": before, "after": after,
            "made_in_tmp": made_in_tmp}  # fmt: skip


@pytest.mark.server
@pytest.mark.slow
def test_dsn_runs_a_session_setting_sweep_and_leaves_the_server_alone(work_mem_run_on_dsn):
    result, lab_dir = work_mem_run_on_dsn["result"], work_mem_run_on_dsn["lab_dir"]
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [(run_id, status, target)] = store_query(lab_dir, "select run_id, status, target from runs")
    assert status == "done"
    assert json.loads(target)["kind"] == "existing"
    measured = store_query(
        lab_dir,
        "select point_index, repetition, status, server_action from measurements"
        " where run_id = ? order by point_index",
        (run_id,),
    )
    assert measured == [(0, 0, "ok", "session"), (1, 0, "ok", "session")]
    assert work_mem_run_on_dsn["after"] == work_mem_run_on_dsn["before"]
    assert work_mem_run_on_dsn["made_in_tmp"] == []  # no managed cluster was made


@pytest.mark.server
@pytest.mark.slow
def test_dsn_run_records_the_session_settings_each_point_ran_with(work_mem_run_on_dsn):
    lab_dir = work_mem_run_on_dsn["lab_dir"]
    recorded = store_query(
        lab_dir, "select point_index, settings from point_server_settings order by point_index"
    )
    work_mem_kb = [json.loads(settings)["work_mem"]["setting"] for _, settings in recorded]
    assert work_mem_kb == [str(8 * 1024), str(16 * 1024)]


# A point fails when its statement_timeout cuts pgbench's one statement short: a failure the
# server decides, with no timing in the test (the statement takes 0.5 s, the limit is half that).
SLEEP_SCRIPT = "select pg_sleep(0.5);\n"
SLEEP_SPEC = """name = "timeouts"
[pgbench]
mode = "custom"
scripts = [{ file = "sleep.sql", weight = 1 }]
duration = "1s"
"""


def _run_sleep_spec(cluster, tmp_path, lab_tmp, settings: str):
    (tmp_path / "sleep.sql").write_text(SLEEP_SCRIPT)
    spec = tmp_path / "spec.toml"
    spec.write_text(SLEEP_SPEC + settings)
    cluster.apply_settings({})
    return run_cli(
        "run", spec, "--dsn", dsn_of(cluster), "--lab-dir", tmp_path / "lab", "--no-report",
        tmpdir=lab_tmp,
    )  # fmt: skip


@pytest.mark.server
def test_a_run_that_measured_nothing_exits_1_with_the_first_failure(
    shared_cluster, tmp_path, lab_tmp
):
    result = _run_sleep_spec(
        shared_cluster, tmp_path, lab_tmp, '[server.settings]\nstatement_timeout = "250ms"\n'
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    last, hint = own_lines(result.stderr)[-2:]
    assert re.search(r"^pgcachelab: run \S+: 0 of 1 points measured; first failure: pgbench "
                     r"exited with 2: ", last), result.stderr  # fmt: skip
    assert hint.startswith("hint: every point failed")


@pytest.mark.server
def test_a_run_with_some_failed_points_says_so_in_its_last_line(shared_cluster, tmp_path, lab_tmp):
    result = _run_sleep_spec(
        shared_cluster, tmp_path, lab_tmp, '[sweep.settings]\nstatement_timeout = ["0", "250ms"]\n'
    )
    assert result.returncode == 0, result.stderr
    last = own_lines(result.stderr)[-1]
    assert re.search(r"^run \S+ finished: 1 of 2 points measured, 1 failed; first failure: "
                     r"pgbench exited with 2: ", last), result.stderr  # fmt: skip


# -- a small real run, then every command that reads it -----------------------------------------

POINTS, REPETITIONS, WARMUP = 2, 2, 1  # tests/data/specs/two-points.toml
STORED = POINTS * (WARMUP + REPETITIONS)  # warm-up repetitions are stored, left out of figures


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """`pgcachelab run two-points.toml` once for the module: (lab dir, run id, result)."""
    lab_dir = tmp_path_factory.mktemp("cli-run") / "lab"
    with server_reachable_dir() as lab_tmp:
        result = run_cli("run", SPECS_DIR / "two-points.toml", "--lab-dir", lab_dir, tmpdir=lab_tmp)
        left_behind = sorted(path.name for path in lab_tmp.iterdir())
        servers_left = processes_mentioning(str(lab_tmp))
    assert result.returncode == 0, result.stderr
    [(run_id,)] = store_query(lab_dir, "select run_id from runs")
    return {
        "lab_dir": lab_dir,
        "run_id": run_id,
        "result": result,
        "left_behind": left_behind,
        "servers_left": servers_left,
    }


@pytest.mark.server
@pytest.mark.slow
def test_run_measures_every_point_and_cleans_up(finished_run):
    result, run_id, lab_dir = (
        finished_run["result"],
        finished_run["run_id"],
        finished_run["lab_dir"],
    )
    assert "Traceback" not in result.stderr
    assert f"run {run_id} finished" in result.stderr
    assert finished_run["left_behind"] == []
    assert finished_run["servers_left"] == []
    [(status, work_dir, failure)] = store_query(
        lab_dir, "select status, work_dir, failure from runs where run_id = ?", (run_id,)
    )
    assert (status, work_dir, failure) == ("done", None, None)
    measured = store_query(
        lab_dir,
        "select point_index, repetition, status from measurements where run_id = ?",
        (run_id,),
    )
    expected = {(p, r, "ok") for p in range(POINTS) for r in range(WARMUP + REPETITIONS)}
    assert sorted(measured) == sorted(expected)
    [(environment,)] = store_query(lab_dir, "select environment from runs")
    assert json.loads(environment)["schedule"] == {
        "order": "random", "seed": 5, "repetitions": 2, "max_repetitions": None,
        "target_ci": None, "warmup_repetitions": 1,
    }  # fmt: skip
    # stdout carries the result: the report page written at the end
    report_page = Path(result.stdout.strip())
    assert report_page == (lab_dir / "reports" / run_id / "index.html").resolve()
    assert report_page.is_file()


@pytest.mark.server
@pytest.mark.slow
def test_runs_lists_the_run(finished_run):
    result = run_cli("runs", "--lab-dir", finished_run["lab_dir"])
    assert result.returncode == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if finished_run["run_id"] in line]
    assert re.search(rf"\bcli-two-points\s+done\b.*\b{STORED}/{STORED}\b", row), row


@pytest.mark.server
@pytest.mark.slow
def test_show_last_and_show_run_id_print_the_same_table(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    by_last = run_cli("show", "last", "--lab-dir", lab_dir)
    by_id = run_cli("show", run_id, "--lab-dir", lab_dir)
    assert by_last.returncode == 0 == by_id.returncode, by_last.stderr + by_id.stderr
    assert by_last.stdout == by_id.stdout
    assert by_last.stdout.startswith(f"run {run_id} (cli-two-points, done)")
    for label in ("clients=1", "clients=2"):
        [row] = [line for line in by_last.stdout.splitlines() if label in line]
        assert f"{REPETITIONS}/{REPETITIONS}" in row


@pytest.mark.server
@pytest.mark.slow
def test_export_csv_has_one_row_per_measurement(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    result = run_cli("export", run_id, "--format", "csv", "--lab-dir", lab_dir)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == STORED
    assert {(row["point_index"], row["repetition"]) for row in rows} == {
        (str(p), str(r)) for p in range(POINTS) for r in range(WARMUP + REPETITIONS)
    }
    assert {row["status"] for row in rows} == {"ok"}
    assert {row["run_id"] for row in rows} == {run_id}
    assert sorted({row["clients"] for row in rows}) == ["1", "2"]
    assert all(float(row["tps"]) > 0 for row in rows)


@pytest.mark.server
@pytest.mark.slow
def test_export_json_is_the_whole_run(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    result = run_cli("export", "last", "--format", "json", "--lab-dir", lab_dir)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["format"] == "pgcachelab-run/1"
    assert document["run"]["run_id"] == run_id
    assert document["run"]["status"] == "done"
    assert document["run"]["target"]["kind"] == "managed"
    assert [p["swept"] for p in document["points"]] == [{"clients": 1}, {"clients": 2}]
    assert len(document["measurements"]) == STORED
    assert all(m["status"] == "ok" for m in document["measurements"])


@pytest.mark.server
@pytest.mark.slow
def test_every_stored_metric_key_is_in_the_table_of_them(finished_run):
    """The docs' reference/metrics.md is generated from store/metric_keys.py: a key a real
    run stores and the table lacks would be a hole in it (test_metric_keys.py reads the code)."""
    rows = store_query(finished_run["lab_dir"], "select metrics from measurements")
    stored = set().union(*(json.loads(text) for (text,) in rows))
    assert {"pgbench", "latency", "probes", "resources", "data"} <= stored
    assert undocumented_keys(stored) == set()


@pytest.mark.server
@pytest.mark.slow
def test_every_measurement_stores_the_machine_s_resources_per_second(finished_run):
    """Issue 32: the sampler's series over each 1 s run, on the data directory's own device
    (no emulated disk here), and pg_stat_io's deltas among the probes."""
    rows = store_query(finished_run["lab_dir"], "select metrics from measurements")
    assert len(rows) == STORED
    for (text,) in rows:
        metrics = json.loads(text)
        resources = metrics["resources"]
        assert resources["failed"] == 0, resources["first_error"]
        assert resources["source"]["device_source"] in ("diskstats", None)
        # no [machine] memory, so no cgroup: the server's processes are counted instead
        assert resources["source"]["cgroup"].startswith("the server's processes (postmaster")
        assert len(resources["rows"]) >= 1 and resources["samples"] == len(resources["rows"]) + 1
        columns = resources["columns"]
        for row in resources["rows"]:
            values = dict(zip(columns, row, strict=True))
            shares = [values[c] for c in columns if c.startswith("cpu_") and c.endswith("_pct")]
            assert all(0 <= share <= 100 for share in shares), values
            assert sum(shares) == pytest.approx(100, abs=1)
            assert values["ctx_switches_per_s"] > 0 and values["page_cache_bytes"] > 0
            assert values["dirty_bytes"] >= 0 and values["writeback_bytes"] >= 0
            if resources["source"]["device_source"] == "diskstats":
                assert values["device_reads_per_s"] >= 0 and values["device_writes_per_s"] >= 0
        summary = resources["summary"]
        assert 0 < summary["cgroup_cpu_pct"] <= 100
        assert 0 <= summary["cpu_idle_pct"] <= 100 and summary["seconds"] >= 1
        assert 0 <= resources["sampler_cpu_s"] < summary["seconds"]
        io = metrics["probes"]["io"]  # the lab's default install is PostgreSQL 16+
        assert io["client backend"]["hits"] > 0  # pgbench's selects, found in shared_buffers


# What a browser would fetch: src/href-like attributes, CSS url() and @import. (Inline SVG also
# holds URLs that are never fetched: xmlns namespace names, RDF identifiers, the creator's name.)
_FETCHED = re.compile(
    r"""(?:\b(?:src|href|srcset|action|poster|data)\s*=\s*|url\(|@import\s+)\s*["']?([^"'\s)>]*)""",
    re.IGNORECASE,
)


@pytest.mark.server
@pytest.mark.slow
def test_report_is_rebuilt_from_the_store_and_opens_offline(finished_run):
    lab_dir, run_id = finished_run["lab_dir"], finished_run["run_id"]
    report_dir = lab_dir / "reports" / run_id
    shutil.rmtree(report_dir)
    result = run_cli("report", run_id, "--lab-dir", lab_dir)
    assert result.returncode == 0, result.stderr
    index = Path(result.stdout.strip())
    assert index == (report_dir / "index.html").resolve()
    page = index.read_text()
    assert "<svg" in page
    assert run_id in page
    assert "order random (seed 5)" in page
    assert "after 1 warm-up repetition(s) per point that no figure uses" in page
    assert "Noise of this machine during the run (tps)" in page
    assert "<script" not in page and "<link" not in page
    fetched = set(_FETCHED.findall(page))
    assert fetched, "expected at least the links to the PNG files"
    for reference in fetched:
        # in-page anchors (SVG glyph uses) or files of the report folder itself, nothing else
        if not reference.startswith("#"):
            assert "/" not in reference and ":" not in reference, reference
            assert (report_dir / reference).is_file(), reference
    pngs = {path.stem for path in report_dir.glob("*.png")}
    svgs = {path.stem for path in report_dir.glob("*.svg")}
    assert "tps-by-clients" in pngs
    assert pngs == svgs
    assert all(path.stat().st_size > 0 for path in report_dir.iterdir())


@pytest.mark.server
@pytest.mark.slow
def test_auto_repetitions_run_to_the_maximum_and_record_the_point_that_never_settled(tmp_path):
    lab_dir = tmp_path / "lab"
    with server_reachable_dir() as lab_tmp:
        result = run_cli(
            "run", SPECS_DIR / "auto-never-settles.toml", "--lab-dir", lab_dir, tmpdir=lab_tmp
        )
    assert result.returncode == 0, result.stderr
    repetitions = store_query(lab_dir, "select repetition from measurements where status = 'ok'")
    assert sorted(r for (r,) in repetitions) == list(range(1 + 7))  # warm-up + the maximum
    assert "round 7: 1 point(s) not yet within ±0.0%" in result.stderr
    assert "1 point(s) never settled within ±0.0% after 7 repetitions" in result.stderr
    page = Path(result.stdout.strip()).read_text()
    assert "<b>never settled within the target interval</b>: 1 point(s)" in page
    assert "repetitions auto: until the median is known to ±0.0% or 7 repetitions" in page


@pytest.mark.server
@pytest.mark.slow
def test_resuming_a_managed_run_against_a_dsn_is_refused(finished_run):
    run_id, lab_dir = finished_run["run_id"], finished_run["lab_dir"]
    result = run_cli("run", "--resume", run_id, "--lab-dir", lab_dir, "--dsn", "host=/nowhere")
    assert result.returncode == 2
    assert result.stderr.startswith(f"pgcachelab: --dsn: run '{run_id}' measured a cluster")
    assert "Traceback" not in result.stderr
