"""Put the readers and the checks together: one diagnosis of the host and, with a DSN, a server."""

import contextlib
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pgcachelab.clusters.client import one_row
from pgcachelab.doctor.findings import Outcome
from pgcachelab.doctor.host_checks import host_checks, memory_for_server_bytes
from pgcachelab.doctor.host_facts import HostFacts, HostReader, device_of, postmaster_of_backend
from pgcachelab.doctor.lab_evidence import (
    HostIdentity,
    major_of_version_num,
    read_cache_split_evidence,
)
from pgcachelab.doctor.server_checks import server_checks, server_summary
from pgcachelab.doctor.server_facts import ServerFacts, read_server_facts
from pgcachelab.machine.hugepages import pages_for_bytes, parse_vmpeak_bytes


@dataclass
class Diagnosis:
    outcomes: list[Outcome]
    context: dict = field(default_factory=dict)  # what was examined, for the header and JSON


def diagnose_host_and_server(
    host: HostReader,
    server: ServerFacts | None,
    data_dir: Path | None = None,
    postmaster_pid: int | None = None,
    lab_dir: Path | None = None,
    no_data_dir: str | None = None,
) -> Diagnosis:
    """Host checks always; server checks when `server` is given, with the evidence of a
    cache-split run in `lab_dir` made on this host for this major version; `no_data_dir`
    says why there is no `data_dir`."""
    device, device_reason = None, no_data_dir or "no data directory known: give --dsn or --data-dir"
    if data_dir is not None:
        try:
            device = device_of(data_dir)
        except OSError as error:
            device_reason = f"cannot stat the data directory {data_dir}: {error.strerror}"
    facts = host.read(postmaster_pid, device, device_reason)
    summary = server_summary(server) if server else {}
    summary["postmaster_pid"] = postmaster_pid
    if server and summary["huge_pages_needed"] is None and postmaster_pid:
        # Before 15 the server cannot say: the seeds' way, from the postmaster's VmPeak.
        summary["huge_pages_needed"] = _pages_from_vmpeak(host, facts, postmaster_pid)
    outcomes = host_checks(facts, summary)
    memory = memory_for_server_bytes(facts)
    limited = facts.cgroup_memory_limit_bytes and memory == facts.cgroup_memory_limit_bytes
    evidence, evidence_note = None, "no server"
    if server and lab_dir is not None:
        identity = HostIdentity(
            platform.node(), facts.memory_total_bytes, major_of_version_num(server.version_num)
        )
        in_use = summary.get("huge_pages_in_use")
        huge_pages = server.text("huge_pages") if in_use is None else ("on" if in_use else "off")
        evidence, evidence_note = read_cache_split_evidence(lab_dir, identity, huge_pages)
    if server:
        outcomes += server_checks(server, memory, "cgroup limit" if limited else "RAM", evidence)
    context = {
        "root": str(host.root),
        "memory_total_bytes": facts.memory_total_bytes,
        "memory_for_server_bytes": memory,
        "data_directory": str(data_dir) if data_dir else None,
        "postmaster_pid": postmaster_pid,
        "server_version": server.server_version if server else None,
        "running_as": "root" if os.geteuid() == 0 else f"uid {os.geteuid()}",
        "lab_evidence": f"run {evidence.run_id}" if evidence else evidence_note,
    }
    return Diagnosis(outcomes, context)


def _pages_from_vmpeak(host: HostReader, facts: HostFacts, pid: int) -> int | None:
    try:
        vmpeak = parse_vmpeak_bytes(host.text(f"/proc/{pid}/status"))
    except OSError:
        return None
    page = facts.hugepages.get("page_size_bytes", 2 * 1024**2)
    return pages_for_bytes(vmpeak, page) if vmpeak else None


def diagnose(
    root: Path = Path("/"),
    dsn: str | None = None,
    data_dir: Path | None = None,
    lab_dir: Path | None = None,
) -> Diagnosis:
    """The doctor command's work: read, check, never change."""
    host = HostReader(root)
    if dsn is None:
        return diagnose_host_and_server(host, None, data_dir)
    from pgcachelab.clusters.targets import ExistingTarget  # UserError on a bad or dead DSN

    target = ExistingTarget(dsn)
    not_read = []  # what this role may not read: said, not a traceback (issue 48)
    with target.connect() as conn:
        server = read_server_facts(conn)
        server_data_dir = _data_directory(conn)
        if server_data_dir is None:
            not_read.append(
                f"data_directory (role {conn.info.user!r} is neither a superuser nor a member of"
                " pg_read_all_settings): the data directory's disk is not checked"
            )
        # While connected: the backend exits with the connection, and its parent is the lead.
        assert server.backend_pid is not None  # read_server_facts asks the server for it
        postmaster_pid = postmaster_of_backend(server.backend_pid, root)
    if postmaster_pid and server_data_dir:
        postmaster_pid = _confirm_postmaster(postmaster_pid, server_data_dir, root)
    if data_dir is None and postmaster_pid and server_data_dir:
        data_dir = Path(server_data_dir)  # only a local server's directory is ours to stat
    diagnosis = diagnose_host_and_server(
        host,
        server,
        data_dir,
        postmaster_pid,
        lab_dir,
        no_data_dir="this role may not read the server's data_directory: give --data-dir"
        if not_read
        else None,
    )
    diagnosis.context["server"] = target.safe_description()
    diagnosis.context["not_read"] = not_read
    return diagnosis


def _data_directory(conn: psycopg.Connection) -> str | None:
    """data_directory is visible to superusers and pg_read_all_settings only: None (no row)
    for any other role."""
    try:
        return one_row(
            conn.execute("select setting from pg_settings where name = 'data_directory'")
        )[0]
    except (LookupError, TypeError, psycopg.Error):
        return None


def _confirm_postmaster(pid: int, data_directory: str, root: Path) -> int | None:
    """A pid found on this host is our server's only if it runs in the server's data
    directory (the postmaster chdirs there); where its cwd is not readable, trust the pid."""
    with contextlib.suppress(OSError):
        cwd = os.readlink(HostReader(root).path(f"/proc/{pid}/cwd"))
        if Path(cwd) != Path(data_directory):
            return None
    return pid
