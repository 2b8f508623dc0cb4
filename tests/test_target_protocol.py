"""What the runner asks of a target is the Target protocol's (issue 50, item 3): every target
class offers each of its members with the protocol's parameters, and the experiments layer asks
the protocol, never a target's class or its kind's text. (mypy checks the same statically, at
the foot of clusters/targets.py; this says which member is missing, without mypy.)"""

import inspect
import re
from pathlib import Path

import pytest

from pgcachelab.clusters.target import ManagedServer, Target
from pgcachelab.clusters.targets import ExistingTarget, ManagedTarget, VersionedTarget

SRC = Path(__file__).resolve().parent.parent / "src" / "pgcachelab"

# What the runner and its instruments call (a member added to a protocol is added here, so
# that a class lacking it fails this test and not a run).
TARGET_MEMBERS = {
    "kind", "machine", "data_dir", "server_version", "server_major", "catalogue",
    "applicable_contexts", "describe", "preflight", "pgbench", "label_kept", "switch", "open",
    "apply", "connect", "pgbench_target", "close",
}  # fmt: skip
MANAGED_MEMBERS = {
    "emulated_disk", "data_parent", "use_disk", "loading_data", "server_failure",
    "disk_failure", "disk_record", "postmaster_pid",
}  # fmt: skip
CLASSES = {ManagedTarget: ManagedServer, VersionedTarget: ManagedServer, ExistingTarget: Target}


def _own_members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def _declared(cls: type, name: str) -> bool:
    """On the class, or declared by it for __init__ to set (machine, emulated_disk)."""
    return hasattr(cls, name) or any(name in vars(k).get("__annotations__", {}) for k in cls.mro())


def shortfalls(cls: type, protocol: type) -> list[str]:
    """Where `cls` falls short of `protocol`: a member missing, a method that is not one or
    takes other parameters, a __getattr__ that would answer anything."""
    members = TARGET_MEMBERS | (MANAGED_MEMBERS if protocol is ManagedServer else set())
    found = [f"lacks {name}" for name in sorted(members) if not _declared(cls, name)]
    for name in sorted(members):
        wanted = inspect.getattr_static(Target if name in TARGET_MEMBERS else ManagedServer, name)
        given = inspect.getattr_static(cls, name, None)
        if not inspect.isfunction(wanted) or f"lacks {name}" in found:
            continue
        if not inspect.isfunction(given):
            found.append(f"{name} is not a method")
        elif list(inspect.signature(given).parameters) != list(
            inspect.signature(wanted).parameters
        ):
            found.append(f"{name} takes other parameters than the protocol's")
    if any("__getattr__" in vars(k) for k in cls.mro()):
        found.append("passes unknown names through __getattr__")
    return found


def test_the_protocols_list_what_the_runner_asks():
    assert _own_members(Target) == TARGET_MEMBERS
    assert _own_members(ManagedServer) == MANAGED_MEMBERS


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_target_class_offers_its_protocol(cls):
    assert shortfalls(cls, CLASSES[cls]) == []


def test_the_check_would_find_a_class_that_falls_short():
    class Lacking(ExistingTarget):
        pgbench = None  # not a method any more

        def switch(self, version):  # a parameter short
            return None

        def __getattr__(self, name):
            return None

    without_label_kept = {k: v for k, v in vars(ExistingTarget).items() if k != "label_kept"}
    Bare = type("Bare", (), without_label_kept)
    assert shortfalls(Lacking, Target) == [
        "pgbench is not a method",
        "switch takes other parameters than the protocol's",
        "passes unknown names through __getattr__",
    ]
    assert shortfalls(Bare, Target) == ["lacks label_kept"]
    assert shortfalls(ExistingTarget, ManagedServer)[0] == "lacks data_parent"


# Asking a target's class, its kind's text or an attribute by name, instead of the protocol.
ASKED_BESIDE_THE_PROTOCOL = re.compile(
    r"isinstance\([^)]*(ManagedTarget|VersionedTarget|ExistingTarget)"
    r"|\.kind\s*[!=]=\s*[\"'](managed|existing)"
    r"|getattr\(\s*(ctx\.)?target\b"
)


def test_the_experiments_layer_asks_the_protocol_not_the_class():
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted((SRC / "experiments").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ASKED_BESIDE_THE_PROTOCOL.search(line)
    ]
    assert found == []


def test_the_scan_would_find_each_way_around_the_protocol():
    for line in (
        "if isinstance(target, ManagedTarget):",
        "elif isinstance(ctx.target, VersionedTarget | ExistingTarget):",
        'if ctx.target.kind == "managed":',
        "if target.kind != 'existing':",
        'cluster = getattr(target, "cluster", None)',
    ):
        assert ASKED_BESIDE_THE_PROTOCOL.search(line), line
    assert not ASKED_BESIDE_THE_PROTOCOL.search('if location.kind == "sqlite":')
