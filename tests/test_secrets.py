"""Issue 48, items 1 and 2: no secret of a connection string leaks (pgcachelab/secrets.py).

The issue's own inputs through the real entry point; `--dsn` with sslpassword through a real run
on a real server (its store, report, export, doctor and every child's command line); then
properties (hypothesis) over generated passwords in every form libpq accepts.
"""

import html
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from fix_cli import run_cli_forked
from fix_clusters import dsn_of
from hypothesis import example, given, settings
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict
from test_cli import assert_user_error

from pgcachelab.clusters.client import SERVICE
from pgcachelab.clusters.targets import ExistingTarget
from pgcachelab.experiments import runner
from pgcachelab.printable import printable
from pgcachelab.progress import QuietProgress
from pgcachelab.secrets import has_secret, mask_password, parse_failure, redact
from pgcachelab.spec import load_spec
from pgcachelab.store.location import StoreLocation, parse_store
from pgcachelab.store.sqlite import SqliteResultStore

ISSUE_URL = "postgresql://lab:Lab#S3c?ret@127.0.0.1:55432/nodb"
ISSUE_PASSWORD = "Lab#S3c?ret"
ONE_POINT_SPEC = """name = "secrets-one-point"
repetitions = 1
[pgbench]
mode = "select-only"
scale = 1
duration = "1s"
"""


def leak_forms(secret: str) -> set[str]:
    """`secret` as a leak would show it: as is, escaped for a terminal, in JSON, in a repr, and
    each of those escaped for HTML."""
    shown = {secret, printable(secret), json.dumps(secret)[1:-1],
             json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1]}  # fmt: skip
    return shown | {html.escape(form) for form in shown}


def assert_absent(secret: str, *texts: str) -> None:
    for text in texts:
        for form in leak_forms(secret):
            assert form not in text, text


def assert_not_stored(secret: str, stored: bytes) -> None:
    for form in leak_forms(secret):
        assert form.encode() not in stored


# -- the masking rules, on the issue's inputs and libpq's forms ----------------------------------


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (ISSUE_URL, "postgresql://lab:***@127.0.0.1:55432/nodb"),
        ("postgresql://lab@127.0.0.1:55432/nodb?sslpassword=Lab#S3c?ret",
         "postgresql://lab@127.0.0.1:55432/nodb?sslpassword=***"),
        ("postgresql://lab@h/db?sslmode=require&SSLPassword=x%26y&application_name=lab",
         "postgresql://lab@h/db?sslmode=require&SSLPassword=***&application_name=lab"),
        ("postgresql://h/db?pass%77ord=x&port=5432", "postgresql://h/db?pass%77ord=***&port=5432"),
        ("postgresql://lab:pa/ss@h/db", "postgresql://lab:***@h/db"),  # libpq: port "pa"
        ("host=h password='it\\'s x' dbname=d", "host=h password=*** dbname=d"),
        ("host=h sslpassword = 'a b' dbname=d", "host=h sslpassword = *** dbname=d"),
        ("host=h PASSWORD=a\\ b dbname=d", "host=h PASSWORD=*** dbname=d"),
        ("postgresql://lab@h:5432/db", "postgresql://lab@h:5432/db"),
        ("host=h user=lab dbname=d", "host=h user=lab dbname=d"),
    ],
)  # fmt: skip
def test_every_form_of_a_secret_is_masked(given, shown):
    assert mask_password(given) == shown
    assert has_secret(given) == (given != shown)


def test_libpq_messages_that_quote_a_secret_are_redacted():
    """libpq quotes what it cannot parse: a password with a space or a bad %-escape."""
    for dsn in ("postgresql://lab:Zq7 a b@h/db", "postgresql://lab:Zq7%zz@h/db"):
        with pytest.raises(psycopg.ProgrammingError) as caught:
            conninfo_to_dict(dsn)
        secret = dsn.split(":", 2)[2].split("@")[0]
        assert secret in str(caught.value)  # what the lab must not pass on
        assert_absent(secret, redact(str(caught.value), dsn))


# -- item 1: a store URL's password with '#' and '?' -----------------------------------------------


def test_issue_store_url_is_masked_in_the_error(tmp_path):
    result = run_cli_forked("runs", "--store", ISSUE_URL, "--lab-dir", tmp_path / "lab")
    assert_user_error(
        result,
        r"^pgcachelab: --store: cannot connect to 'postgresql://lab:\*\*\*@127\.0\.0\.1:55432/"
        r"nodb': ",
        r"postgresql://",
    )
    assert_absent(ISSUE_PASSWORD, result.stdout, result.stderr)
    assert not (tmp_path / "lab").exists()


@pytest.mark.parametrize(
    ("url", "reason"),
    [("postgresql://lab:Zq7 a%zz@h/db", r'unexpected spaces found in "\*\*\*"'),
     ("postgresql://lab:Zq7%aa@h/db", r"a %-escape that is not UTF-8 text$")],
)  # fmt: skip
def test_a_store_url_that_libpq_cannot_parse_keeps_its_password(url, reason):
    result = run_cli_forked("runs", "--store", url)
    assert_user_error(
        result,
        r"--store: cannot connect to 'postgresql://lab:\*\*\*@h/db': " + reason,
        "postgresql",
    )
    assert_absent("Zq7", result.stderr)


@pytest.mark.parametrize(
    "url",
    [ISSUE_URL, "postgresql://lab@127.0.0.1:55432/nodb?sslpassword=Lab#S3c?ret",
     "postgresql://lab@127.0.0.1:55432/nodb?host=/tmp&PassWord=Lab#S3c?ret"],
)  # fmt: skip
@pytest.mark.parametrize("mode", ["--queue", "--plan"])
def test_a_spec_store_with_a_password_is_refused_without_showing_it(url, mode, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(f"store = {json.dumps(url)}\n{ONE_POINT_SPEC}")
    result = run_cli_forked("run", spec, mode, "--lab-dir", tmp_path / "lab")
    assert_user_error(
        result,
        r"store: a password in 'postgresql://lab[:@].*\*\*\*.*' would be stored with the run's"
        r" spec",
        r"PGPASSWORD or ~/\.pgpass",
    )
    assert_absent(ISSUE_PASSWORD, result.stdout, result.stderr)
    assert not (tmp_path / "lab").exists()


@pytest.mark.server
def test_run_queue_leaves_a_store_untouched_by_a_spec_with_its_password(module_cluster, tmp_path):
    """The queue's store reachable (trust on its socket): nothing is written there."""
    module_cluster.apply_settings({})
    with module_cluster.connect() as conn:
        conn.execute("drop database if exists secrets_queue")
        conn.execute("create database secrets_queue")
    url = (f"postgresql://lab:Lab#S3c?ret@/secrets_queue?host={module_cluster.socket_dir}"
           f"&port={module_cluster.port}")  # fmt: skip
    spec = tmp_path / "spec.toml"
    spec.write_text(f"store = {json.dumps(url)}\n{ONE_POINT_SPEC}")
    result = run_cli_forked("run", spec, "--queue", "--lab-dir", tmp_path / "lab")
    assert_user_error(result, r"a password in .* would be stored with the run's spec", "PGPASSWORD")
    assert_absent(ISSUE_PASSWORD, result.stdout, result.stderr)
    with psycopg.connect(url.replace("Lab#S3c?ret", "")) as conn:
        schemas = conn.execute("select nspname from pg_namespace").fetchall()
    assert ("pgcachelab",) not in schemas


def test_store_location_says_when_a_url_holds_a_secret():
    assert parse_store(ISSUE_URL).password_in_url()
    assert StoreLocation("postgresql", url="postgresql://h/x?sslpassword=y").password_in_url()
    assert not parse_store("postgresql://lab@h:5432/x?sslmode=require").password_in_url()


# -- item 2: sslpassword in --dsn --------------------------------------------------------------

SSL_SECRET = "Zq7 it's #S3c?ret"  # quoted in the DSN: a space, a quote, '#' and '?'
PASSWORD = "Zq7Pw&=x"


def secret_dsn(cluster, sslpassword: str = SSL_SECRET, password: str = PASSWORD) -> str:
    def quoted(text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return f"{dsn_of(cluster)} sslpassword={quoted(sslpassword)} password = {quoted(password)}"


class RecordedPopen(subprocess.Popen):
    """subprocess.Popen that first writes down each child's command line, and the service file
    its environment names (read while it exists): the boundary the lab's children cross."""

    log: Path

    def __init__(self, args, *rest, **options):
        env = options.get("env") or {}
        entry: dict = {"argv": [args] if isinstance(args, str | bytes) else list(map(str, args))}
        entry["pgpassword"] = env.get("PGPASSWORD") == PASSWORD
        if "PGSERVICEFILE" in env:
            service = Path(env["PGSERVICEFILE"])
            entry["service"] = {
                "path": str(service),
                "name": env.get("PGSERVICE"),
                "text": service.read_text(),
                "mode": service.stat().st_mode & 0o777,
                "dir_mode": service.parent.stat().st_mode & 0o777,
            }
        with open(self.log, "a") as log:
            log.write(json.dumps(entry) + "\n")
        super().__init__(args, *rest, **options)


def every_file_bytes(root: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file())


@pytest.mark.server
def test_dsn_sslpassword_reaches_no_store_report_export_doctor_or_argv(
    module_cluster, tmp_path, lab_tmp, monkeypatch
):
    module_cluster.apply_settings({})
    dsn, lab_dir = secret_dsn(module_cluster), tmp_path / "lab"
    spec = tmp_path / "spec.toml"
    spec.write_text(ONE_POINT_SPEC)
    monkeypatch.setattr(RecordedPopen, "log", tmp_path / "children.jsonl", raising=False)
    monkeypatch.setattr(subprocess, "Popen", RecordedPopen)  # the forked lab inherits it
    ran = run_cli_forked("run", spec, "--dsn", dsn, "--lab-dir", lab_dir, tmpdir=lab_tmp)
    monkeypatch.undo()
    assert ran.returncode == 0, ran.stderr
    [(run_id, status, target)] = _rows(lab_dir, "select run_id, status, target from runs")
    assert status == "done"
    assert json.loads(target)["conninfo"] == {
        "host": str(module_cluster.socket_dir), "port": str(module_cluster.port),
        "user": "lab", "dbname": "postgres",
    }  # fmt: skip
    measured = _rows(lab_dir, "select status from measurements")
    assert measured == [("ok",)]  # pgbench logged in and ran: libpq read its service file

    exported = run_cli_forked("export", run_id, "--format", "json", "--lab-dir", lab_dir)
    shown = run_cli_forked("show", run_id, "--lab-dir", lab_dir)
    doctor = run_cli_forked("doctor", "--dsn", dsn)
    doctor_json = run_cli_forked("doctor", "--dsn", dsn, "--json")
    assert exported.returncode == 0 and shown.returncode == 0, exported.stderr + shown.stderr
    assert str(module_cluster.socket_dir) in json.loads(doctor_json.stdout)["context"]["server"]
    stored = every_file_bytes(lab_dir)  # the store and the report with its files
    report = (lab_dir / "reports" / run_id / "index.html").read_text()
    assert str(module_cluster.socket_dir) in report  # it shows the target, without its secrets
    for secret in (SSL_SECRET, PASSWORD):
        assert_not_stored(secret, stored)
        for result in (ran, exported, shown, doctor, doctor_json):
            assert_absent(secret, result.stdout, result.stderr)

    children = _children(tmp_path / "children.jsonl")
    pgbenches = [c for c in children if Path(c["argv"][0]).name == "pgbench" and len(c["argv"]) > 2]
    assert len(pgbenches) >= 2  # pgbench -i, then the measurement
    for child in children:
        assert_absent(SSL_SECRET, " ".join(child["argv"]))
        assert_absent(PASSWORD, " ".join(child["argv"]))
        assert not re.search(r"(ssl)?password", " ".join(child["argv"]), re.I), child["argv"]
    for child in pgbenches:
        assert child["pgpassword"]
        service = child["service"]
        assert service["name"] == SERVICE
        assert service["text"] == f"[{SERVICE}]\nsslpassword={SSL_SECRET}\n"
        assert (service["mode"], service["dir_mode"]) == (0o600, 0o700)
        assert not Path(service["path"]).parent.exists()  # removed once pgbench ended


def _rows(lab_dir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(lab_dir / "results.sqlite") as db:
        return db.execute(sql).fetchall()


def _children(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line]


@pytest.mark.server
def test_the_service_file_gives_sslpassword_to_a_child_libpq(module_cluster):
    """What pgbench's libpq reads: another process's libpq holds the sslpassword, off argv."""
    module_cluster.apply_settings({})
    target = ExistingTarget(secret_dsn(module_cluster)).pgbench_target({})
    conninfo = target.connection_string()
    assert "password" not in conninfo
    child = (
        "import psycopg, sys\n"
        "with psycopg.connect(sys.argv[1]) as conn:\n"
        "    info = {o.keyword.decode(): o.val for o in conn.pgconn.info}\n"
        "    print(info['sslpassword'].decode(), end='')\n"
    )
    with target.child_environment() as env:
        service_dir = Path(env["PGSERVICEFILE"]).parent
        done = subprocess.run(
            [sys.executable, "-c", child, conninfo], env=env, capture_output=True, text=True
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout == SSL_SECRET
    assert not service_dir.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (" service=nosuch", r"--dsn: sslpassword with the service 'nosuch': pgbench would get"),
        (" sslpassword='Zq7 trailing '", r"--dsn: sslpassword holds a line break or ends in"),
    ],
)  # fmt: skip
def test_dsn_secrets_a_service_file_cannot_carry_are_refused(extra, message):
    """Refused before any connection: the host does not exist."""
    dsn = f"host=/nonexistent dbname=x sslpassword='Zq7 secret'{extra}"
    result = run_cli_forked("doctor", "--dsn", dsn)
    assert_user_error(result, message, r"sslpassword")
    assert_absent("Zq7", result.stderr)


def test_a_dsn_libpq_cannot_parse_keeps_its_secret():
    for dsn in ("postgresql://lab:Zq7 a b@h/db", "postgresql://h/db?sslpassword=Zq7%zz",
                "postgresql://lab:Zq7%aa@h/db"):  # fmt: skip
        result = run_cli_forked("doctor", "--dsn", dsn)
        assert_user_error(result, r"--dsn: not a connection string: ", r"host=")
        assert_absent("Zq7", result.stderr)
        result = run_cli_forked("inspect", "--dsn", dsn)
        assert_user_error(result, r"--dsn: not a connection string: ", r"host=")
        assert_absent("Zq7", result.stderr)


# -- properties: any password, in every accepted form ---------------------------------------------

PREFIX = "Zq7"  # a generated password starts with it: it cannot appear by chance
_SPECIAL = list("#?:&='\"\\% \t;,{}[]$@/é€😀")
_ANY = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
_TAIL = st.text(st.one_of(st.sampled_from(_SPECIAL), _ANY), min_size=4, max_size=24)
_URL_TAIL = _TAIL.map(lambda text: text.replace("@", "a").replace("/", "b"))


def _kv_quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _kv_unquoted(text: str) -> str:
    return "".join("\\" + c if c in " \t\n\r\f\v'\\" else c for c in text)


# form -> (how the password is written, the connection string around it, libpq must parse it)
FORMS = {
    "userinfo": (lambda p: p, "postgresql://lab:{}@db.example:5432/bench", False),
    "userinfo-encoded": (lambda p: quote(p, safe=""), "postgresql://lab:{}@db.example/bench",
                         True),
    "query-password": (lambda p: p, "postgresql://lab@db.example/bench?password={}", False),
    "query-sslpassword-encoded": (
        lambda p: quote(p, safe=""),
        "postgresql://lab@db.example/bench?sslmode=prefer&sslpassword={}&application_name=x",
        True,
    ),
    "kv-password-quoted": (_kv_quoted, "host=db.example password = {} dbname=bench", True),
    "kv-sslpassword-quoted": (_kv_quoted, "host=db.example sslpassword={} dbname=bench", True),
    "kv-password-unquoted": (_kv_unquoted, "host=db.example password={} dbname=bench", True),
    "kv-sslpassword-unquoted": (_kv_unquoted, "host=db.example SSLPASSWORD= {} dbname=bench",
                                False),  # libpq's keywords have one case: masked all the same
}  # fmt: skip


def _keyword_inside(password: str) -> bool:
    """A password that holds `password=` or `://` may make masking take more than itself."""
    lowered = password.lower()
    return "password" in lowered or "://" in lowered or "secret" in lowered or "_key" in lowered


@pytest.mark.parametrize("form", FORMS)
@given(data=st.data())
def test_no_form_of_any_password_survives_masking(form, data):
    write, template, parses = FORMS[form]
    password = PREFIX + data.draw(_URL_TAIL if form.startswith(("userinfo", "query")) and
                                  not form.endswith("encoded") else _TAIL)  # fmt: skip
    written = write(password)
    text = template.format(written)
    masked = mask_password(text)
    assert password not in masked and written not in masked, masked
    assert has_secret(text)
    if not _keyword_inside(password):  # the rest is still readable
        assert "db.example" in masked and "bench" in masked, masked
    try:
        parsed = conninfo_to_dict(text)
    except (psycopg.ProgrammingError, UnicodeDecodeError) as error:  # what the lab shows of it
        assert not parses, (text, error)
        assert password not in parse_failure(error, text), str(error)
    else:
        if parses:
            keyword = "sslpassword" if "sslpassword" in form else "password"
            assert parsed[keyword] == password


@pytest.mark.server
@settings(max_examples=3, deadline=None)
@example(sslpassword="Zq7 it's #S3c?&=\\x\x1b", password="Zq7:p@ss/w?#é\x7f")
@given(sslpassword=_TAIL.map(lambda t: PREFIX + t), password=_TAIL.map(lambda t: PREFIX + t))
def test_no_printer_or_store_writer_shows_a_generated_password(
    module_cluster, sslpassword, password
):
    """doctor, run --plan, runs --store, a stored run's rows and pgbench's command line."""
    module_cluster.apply_settings({})
    dsn = secret_dsn(module_cluster, sslpassword, password)
    url = f"postgresql://lab:{quote(password, safe='')}@127.0.0.1:1/x?sslpassword={sslpassword}"
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        spec = base / "spec.toml"
        store_value = json.dumps(url, ensure_ascii=False).replace("\x7f", "\\u007f")
        spec.write_text(f"store = {store_value}\n{ONE_POINT_SPEC}")
        results = [
            run_cli_forked("doctor", "--dsn", dsn),
            run_cli_forked("run", spec, "--plan", "--lab-dir", base / "lab"),
            run_cli_forked("run", spec, "--plan", "--dsn", dsn, "--lab-dir", base / "lab"),
            run_cli_forked("runs", "--store", url, "--lab-dir", base / "lab"),
        ]
        for result in results:
            assert "Traceback" not in result.stderr, result.stderr
        texts = [text for result in results for text in (result.stdout, result.stderr)]
        store_file = base / "results.sqlite"
        try:
            target = ExistingTarget(dsn)
        except Exception as error:  # refused (a trailing space): only its message to check
            texts.append(str(error))
        else:
            texts.append(target.pgbench_target({"work_mem": "8MB"}).connection_string())
            spec.write_text(ONE_POINT_SPEC)
            store = SqliteResultStore(store_file)
            try:
                runner.record_run(load_spec(spec), target, store, QuietProgress())
            finally:
                store.close()
        stored = b"".join(path.read_bytes() for path in base.glob("results.sqlite*"))
        for secret in (sslpassword, password):
            assert_absent(secret, *texts)
            assert_not_stored(secret, stored)


@pytest.mark.server
def test_the_server_never_inherits_the_labs_secrets(cluster, monkeypatch):
    """The postmaster runs as the server user, who (like root) can read its environment in
    /proc: the lab's PGPASSWORD, a store URL with its password, a libpq string in any variable
    stay the lab's."""
    monkeypatch.setenv("PGPASSWORD", "Zq7lab-password")
    monkeypatch.setenv("PGCACHELAB_STORE", "postgresql://lab:Zq7store#pw@db/results")
    monkeypatch.setenv("SOME_TOOL_DSN", "host=db sslpassword=Zq7tool")
    monkeypatch.setenv("PGCACHELAB_PLAIN", "kept")
    assert cluster.apply_settings({}) == "start"
    environment = Path(f"/proc/{cluster.process.pid}/environ").read_bytes()
    assert b"Zq7" not in environment
    assert b"PGCACHELAB_PLAIN=kept" in environment.split(b"\0")


def test_a_run_stored_before_the_fix_shows_no_sslpassword(tmp_path):
    """Runs stored before issue 48 kept sslpassword in runs.target: read back without it, so
    show, export and the report (which all read through the store) cannot print it."""
    store = SqliteResultStore(tmp_path / "results.sqlite")
    conninfo = {"host": "/run/pg", "dbname": "bench", "sslpassword": "Zq7old", "PassWord": "x"}
    run_id = store.create_run("old", "old.toml", "", {"kind": "existing", "conninfo": conninfo},
                              {}, [], "big-cache")  # fmt: skip
    assert store.run(run_id).target == {
        "kind": "existing",
        "conninfo": {"host": "/run/pg", "dbname": "bench"},
    }
    store.close()
    for args in (["show", run_id], ["export", run_id, "--format", "json"]):
        done = run_cli_forked(*args, "--lab-dir", tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Zq7old" not in done.stdout + done.stderr
