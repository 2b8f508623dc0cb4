"""Three hosts on this machine, for the fleet's multi-host tests (issues 38, 49): each a network
namespace joined to a private test subnet through a veth pair and a bridge, with its own host
name (a UTS namespace), its own /run/pgcachelab (a bind mount in a mount namespace: the lab's
registry of what it made, its agents' host locks), its own TMPDIR and lab directory; and a
results store that only they reach, over TCP with scram, on the bridge's address.

    10.231.R.1/24  bridge pgcl<hex>br, root namespace: the store listens here (pg_hba: only
                   this subnet over TCP, scram-sha-256)
    10.231.R.2     host a, namespace pgcl-<hex>-a, host name pgcl-<hex>-a
    10.231.R.3     host b, namespace pgcl-<hex>-b, host name pgcl-<hex>-b
    10.231.R.4     host c, namespace pgcl-<hex>-c, host name pgcl-<hex>-c

Commands enter a host with `nsenter --net`, not `ip netns exec`: the latter mounts a fresh
/sys in its own mount namespace, and /sys/fs/cgroup is then empty (the lab's cgroups and
probes read it). The hosts share this machine's pids, its files but /run/pgcachelab, and
/etc/machine-id, so agents are given distinct host ids (the host names). With a registry each,
what a killed agent left is reaped by the next lab command on its own host, as on separate
machines, and never another suite's leftovers on this machine.

Everything the fixtures make goes when they end, on failure too: what runs in a namespace is
killed, the clusters under a host's TMPDIR are stopped and removed, then the links and the
namespaces are deleted, and the module's end checks that none is left.
"""

import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from fix_cli import CLI_TIMEOUT_S, cli_command, cli_env
from fix_lab import background
from fix_processes import process_alive, server_reachable_dir

from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.machine import owned

SUBNET_PREFIX = "10.231"  # 10.231.R.0/24, R random and not on any interface or route here
HOST_SUFFIXES = ("a", "b", "c")
TOOLS = ("ip", "nsenter", "unshare", "mount", "hostname")
# What makes a command the host's, after its network: its host name in a fresh UTS namespace,
# its /run/pgcachelab in a fresh (private) mount namespace, then exec. sh's $0 is the host
# name, $1 the host's own directory, $2 the mount point.
_AS_HOST = ["unshare", "--uts", "--mount", "--", "sh", "-c",
            'mount --bind "$1" "$2" && shift 2 && hostname "$0" && exec "$@"']  # fmt: skip


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _ip_json(*args: str) -> list:
    return json.loads(_ip("-j", *args).stdout or "[]")


def free_test_subnet() -> ipaddress.IPv4Network:
    """A 10.231.R.0/24 that no interface address or route here overlaps."""
    taken = [
        ipaddress.ip_interface(f"{info['local']}/{info['prefixlen']}").network
        for link in _ip_json("addr")
        for info in link.get("addr_info", ())
        if info.get("family") == "inet"
    ]
    for route in _ip_json("route"):
        with contextlib.suppress(ValueError):
            if route.get("dst") not in (None, "default"):
                taken.append(ipaddress.ip_network(route["dst"], strict=False))
    for _ in range(50):
        subnet = ipaddress.ip_network(f"{SUBNET_PREFIX}.{secrets.randbelow(254) + 1}.0/24")
        if not any(subnet.overlaps(other) for other in taken):
            return subnet
    pytest.fail(f"no free {SUBNET_PREFIX}.R.0/24 subnet here: {taken}")


@dataclass
class Host:
    """One emulated host: a network namespace with a host name, TMPDIR and lab directory."""

    name: str  # the namespace's, the host name and the agent's --host-id
    address: str
    link: str  # the root namespace's end of its veth pair, on the bridge
    env: dict = field(default_factory=dict)  # what every command here gets besides cli_env
    tmpdir: Path | None = None  # set per test (fleet_hosts): where its clusters live
    lab_dir: Path | None = None
    out_dir: Path | None = None  # the stdout/stderr files of its commands

    def command(self, args) -> list[str]:
        """`pgcachelab ARGS` as a process of this host (its network, host name, registry)."""
        return ["nsenter", f"--net=/run/netns/{self.name}", *_AS_HOST, self.name,
                self.registry, owned.RUN_ROOT, *cli_command(*args)]  # fmt: skip

    @property
    def registry(self) -> Path:
        """The host's /run/pgcachelab, in its TMPDIR (gone with it)."""
        assert self.tmpdir is not None, "a host's TMPDIR is made per test (fleet_hosts)"
        return self.tmpdir / "run-pgcachelab"

    def environment(self) -> dict:
        assert self.tmpdir is not None, "a host's TMPDIR is made per test (fleet_hosts)"
        return {**cli_env(self.tmpdir), **self.env}

    def run(self, *args) -> subprocess.CompletedProcess:
        """`pgcachelab ARGS` on this host, waited for."""
        return subprocess.run(
            self.command(args), env=self.environment(), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        )  # fmt: skip

    def process(self, args, name: str = "agent"):
        """`pgcachelab ARGS` running on this host in the background (fix_lab.background: its
        output in files `name`.stdout/.stderr under out_dir), killed if left running.

        nsenter, unshare and sh each exec the next: the pid is the lab's own."""
        assert self.out_dir is not None
        return background(self.command(args), self.environment(), self.out_dir, name)

    def stderr(self, name: str = "agent") -> str:
        assert self.out_dir is not None
        return (self.out_dir / f"{name}.stderr").read_text()

    def unplug(self) -> None:
        """Cut the host off the network (its cable pulled: its packets are dropped, its
        connections hang rather than fail) until `plug`."""
        _ip("link", "set", self.link, "down")

    def plug(self) -> None:
        _ip("link", "set", self.link, "up")

    def running(self, program: str) -> list[list[str]]:
        """The command lines of this host's processes running `program` (a file name)."""
        found = []
        for pid in self.pids():
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
                if argv and Path(argv.split("\0")[0]).name == program:
                    found.append(argv.rstrip("\0").split("\0"))
        return found

    def pids(self) -> list[int]:
        """What runs in this host's network namespace."""
        listed = _ip("netns", "pids", self.name, check=False).stdout.split()
        return [int(pid) for pid in listed if pid.isdigit()]

    def kill_everything(self) -> None:
        """SIGKILL whatever runs in the namespace until nothing does (a postmaster killed with
        its agent, a backend exiting)."""
        deadline = time.monotonic() + 30
        while pids := [pid for pid in self.pids() if process_alive(pid)]:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                pytest.fail(f"processes left in namespace {self.name}: {pids}")
            time.sleep(0.05)


@dataclass
class Network:
    """The namespaces, their links and the subnet; the store's address is `gateway`."""

    tag: str  # the random part of every name
    subnet: ipaddress.IPv4Network
    hosts: list[Host]

    @property
    def gateway(self) -> str:
        return str(self.subnet.network_address + 1)

    @property
    def bridge(self) -> str:
        return f"pgcl{self.tag}br"

    def links(self) -> list[str]:
        return [self.bridge] + [host.link for host in self.hosts]

    def leftovers(self) -> list[str]:
        """Namespaces and links of this network that still exist."""
        namespaces = {entry["name"] for entry in _ip_json("netns", "list")}
        links = {entry["ifname"] for entry in _ip_json("link")}
        return sorted(({h.name for h in self.hosts} & namespaces) | (set(self.links()) & links))


def _make_network() -> Network:
    tag = secrets.token_hex(3)
    subnet = free_test_subnet()
    hosts = [
        Host(f"pgcl-{tag}-{suffix}", str(subnet.network_address + 2 + i), f"pgcl{tag}{suffix}")
        for i, suffix in enumerate(HOST_SUFFIXES)
    ]
    return Network(tag, subnet, hosts)


def _build(network: Network) -> None:
    _ip("link", "add", network.bridge, "type", "bridge")
    _ip("addr", "add", f"{network.gateway}/{network.subnet.prefixlen}", "dev", network.bridge)
    _ip("link", "set", network.bridge, "up")
    for host in network.hosts:
        _ip("netns", "add", host.name)
        _ip("link", "add", host.link, "type", "veth", "peer", "name", "eth0", "netns", host.name)
        _ip("link", "set", host.link, "master", network.bridge, "up")
        _ip("-n", host.name, "addr", "add", f"{host.address}/{network.subnet.prefixlen}",
            "dev", "eth0")  # fmt: skip
        _ip("-n", host.name, "link", "set", "lo", "up")
        _ip("-n", host.name, "link", "set", "eth0", "up")


def _tear_down(network: Network) -> None:
    """Kill what runs in the namespaces, then delete the links and namespaces; waits until the
    kernel has let them go (a namespace's veth end goes asynchronously)."""
    for host in network.hosts:
        if host.name in {entry["name"] for entry in _ip_json("netns", "list")}:
            host.kill_everything()
    for link in network.links():  # a veth pair goes with either end
        _ip("link", "del", link, check=False)
    for host in network.hosts:
        _ip("netns", "del", host.name, check=False)
    deadline = time.monotonic() + 10
    while network.leftovers() and time.monotonic() < deadline:
        time.sleep(0.05)


def skip_without_namespaces() -> None:
    if os.geteuid() != 0:
        pytest.skip("emulated hosts need root (network, UTS and mount namespaces, veth links)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"emulated hosts need {', '.join(missing)} (iproute2, util-linux)")


@pytest.fixture(scope="module")
def host_network() -> Iterator[Network]:
    """The hosts' namespaces on a fresh subnet; deleted when the module ends, checked gone."""
    skip_without_namespaces()
    network = _make_network()
    try:
        _build(network)
        yield network
    finally:
        _tear_down(network)
    assert network.leftovers() == [], "namespaces or links left behind"


def allow_only_subnet(cluster: ManagedCluster, subnet: ipaddress.IPv4Network) -> None:
    """pg_hba of a cluster not yet started: trust on its 0700 socket (the fixture's own
    connections), scram from the test subnet over TCP, nothing else (not even localhost)."""
    hba = cluster.data_dir / "pg_hba.conf"
    hba.write_text(
        "# written by tests/fix_netns.py: the emulated hosts' subnet only\n"
        "local all all trust\n"
        f"host all all {subnet} scram-sha-256\n"
    )
    os.chown(hba, cluster.user.uid, cluster.user.gid)


def check_scram_only(store: ManagedCluster, address: str) -> None:
    """Over TCP the store asks for the password and takes it through scram; localhost (not
    listened on) refuses."""
    tcp = {"host": address, "port": store.port, "user": "lab", "dbname": "postgres"}
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(**tcp, passfile=str(store.work_dir / "none"), connect_timeout=5).close()
    with psycopg.connect(**tcp, passfile=str(store.passfile), connect_timeout=5) as conn:
        assert conn.execute("select system_user").fetchone() == ("scram-sha-256:lab",)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(**{**tcp, "host": "127.0.0.1"}, passfile=str(store.passfile)).close()


@dataclass
class Fleet:
    """The store and the hosts of one test."""

    network: Network
    store: ManagedCluster
    database: str

    @property
    def hosts(self) -> list[Host]:
        return self.network.hosts

    @property
    def url(self) -> str:
        """The store as the agents reach it: TCP to the bridge's address, no password (libpq
        reads it from PGPASSFILE, the store cluster's own 0600 passfile)."""
        return f"postgresql://lab@{self.network.gateway}:{self.store.port}/{self.database}"

    @property
    def local_url(self) -> str:
        """The store as the test reads it: the cluster's unix socket."""
        return (
            f"postgresql://lab@/{self.database}?host={self.store.socket_dir}&port={self.store.port}"
        )

    def query(self, sql: str, params=()) -> list[tuple]:
        with psycopg.connect(self.local_url, autocommit=True) as conn:
            conn.execute("set search_path to pgcachelab")
            return conn.execute(sql, params).fetchall()

    def execute(self, sql: str, params=()) -> None:
        with psycopg.connect(self.local_url, autocommit=True) as conn:
            conn.execute(sql, params)


@pytest.fixture(scope="module")
def fleet_store(host_network, pg_install, server_os_user) -> Iterator[ManagedCluster]:
    """A managed cluster as the results store, listening on the bridge's address only."""
    with server_reachable_dir() as base:
        store = ManagedCluster.create(pg_install, server_os_user, parent_dir=base, listen_tcp=True)
        try:
            allow_only_subnet(store, host_network.subnet)
            store.apply_settings({"listen_addresses": host_network.gateway})
            check_scram_only(store, host_network.gateway)
            for host in host_network.hosts:
                host.env = {"PGPASSFILE": str(store.passfile)}
            yield store
        finally:
            store.destroy()


def leaked_entries(hosts: list[Host]) -> list[owned.Entry]:
    """Entries of this machine's registry for things under the hosts' TMPDIRs: none, the
    hosts' labs record in their own."""
    roots = tuple(f"{host.tmpdir}/" for host in hosts)
    return [entry for entry in owned.entries() if entry.path.startswith(roots)]


@pytest.fixture
def fleet_hosts(host_network, fleet_store, tmp_path) -> Iterator[Fleet]:
    """A fresh store database and, per host, a fresh TMPDIR (with its registry), lab directory
    and output directory; whatever runs on the hosts when the test ends is killed, and their
    TMPDIRs are reaped (their clusters stopped and removed) and removed."""
    database = f"fleet_{secrets.token_hex(3)}"
    with fleet_store.connect() as conn:
        conn.execute(f'create database "{database}"')
    owned.RUN_ROOT.mkdir(exist_ok=True)  # the hosts' registries are mounted there
    with contextlib.ExitStack() as stack:
        for host in host_network.hosts:
            host.tmpdir = stack.enter_context(server_reachable_dir())
            host.registry.mkdir(mode=0o700)
            host.lab_dir = tmp_path / host.name / "lab"
            host.out_dir = tmp_path / host.name
            host.out_dir.mkdir()
        try:
            yield Fleet(host_network, fleet_store, database)
        finally:
            for host in host_network.hosts:
                host.plug()  # a test that failed while it was cut off
                host.kill_everything()
            leaked = leaked_entries(host_network.hosts)
    assert leaked == [], "the hosts' labs recorded things in this machine's registry"
    for host in host_network.hosts:  # server_reachable_dir reaped them
        assert host.tmpdir is not None and not host.tmpdir.exists()
        host.tmpdir = host.lab_dir = host.out_dir = None
