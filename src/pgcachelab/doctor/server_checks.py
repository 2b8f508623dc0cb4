"""Server checks: pure functions of ServerFacts and the memory the server may use."""

from pgcachelab.doctor.findings import DOCS, SEED_000, SEED_002, Finding, Outcome, Skipped, ok
from pgcachelab.doctor.lab_evidence import CacheSplitEvidence
from pgcachelab.doctor.server_facts import ServerFacts
from pgcachelab.units import format_bytes

RESOURCE_DOCS = DOCS + "runtime-config-resource.html"
QUERY_DOCS = DOCS + "runtime-config-query.html"
WAL_DOCS = DOCS + "runtime-config-wal.html"
WAL_CONFIGURATION = DOCS + "wal-configuration.html"
VACUUM_DOCS = DOCS + "routine-vacuuming.html"
# runtime-config-resource: "a reasonable starting value for shared_buffers is 25% of the memory
# ... unlikely that an allocation of more than 40% of RAM ... will work better".
SHARED_BUFFERS_HIGH_FRACTION = 0.40
SHARED_BUFFERS_LOW_FRACTION = 0.05
REQUESTED_CHECKPOINTS_MAX_FRACTION = 0.10  # wal-configuration: checkpoints should be timed
CHECKPOINTS_NEEDED = 4  # fewer observed checkpoints tell nothing about their frequency


def _alter_system(name: str, value: str, restart: bool = False) -> str:
    then = "restart the server" if restart else "select pg_reload_conf()"
    return f"ALTER SYSTEM SET {name} = '{value}'; then {then}"


def _gb_string(value_bytes: float) -> str:
    """A setting value PostgreSQL accepts, rounded to whole MB."""
    return f"{max(1, int(value_bytes // 1024**2))}MB"


def check_durability(facts: ServerFacts) -> list[Outcome]:
    """fsync, full_page_writes, synchronous_commit and autovacuum turned off: loud."""
    outcomes: list[Outcome] = []
    rules = (
        (
            "fsync",
            "critical",
            "a crash or power loss can corrupt the whole cluster",
            WAL_DOCS + "#GUC-FSYNC",
        ),
        (
            "full_page_writes",
            "critical",
            "a crash during a partial page write leaves torn pages WAL replay cannot repair",
            WAL_DOCS + "#GUC-FULL-PAGE-WRITES",
        ),
        (
            "synchronous_commit",
            "warning",
            "commits reported to clients can be lost in a crash (no corruption); set it per "
            "transaction where that loss is acceptable, as seed 002 did for a benchmark",
            f"{WAL_DOCS}#GUC-SYNCHRONOUS-COMMIT; {SEED_002}",
        ),
        (
            "autovacuum",
            "warning",
            "dead rows pile up, tables and indexes bloat and transaction id wraparound approaches "
            "(seed 002 turned it off only for a benchmark)",
            f"{VACUUM_DOCS}; {SEED_002}",
        ),
    )
    for name, severity, why, source in rules:
        check = f"server.{name}"
        value = facts.text(name)
        if value is None:
            outcomes.append(Skipped(check, f"{name} not visible in pg_settings"))
        elif value == "off":
            outcomes.append(
                Finding(
                    check,
                    severity,
                    f"{name} = off",
                    f"turn it on: {why}",
                    source,
                    _alter_system(name, "on"),
                )
            )
        else:
            outcomes.append(ok(check, f"{name} = {value}"))
    return outcomes


def check_shared_buffers(
    facts: ServerFacts,
    memory_bytes: int | None,
    memory_source: str,
    evidence: CacheSplitEvidence | None = None,
) -> Outcome:
    check = "server.shared_buffers"
    shared_buffers = facts.number("shared_buffers")
    if shared_buffers is None or not memory_bytes:
        return Skipped(check, "shared_buffers or the server's memory unknown")
    fraction = shared_buffers / memory_bytes
    found = (
        f"shared_buffers = {facts.shown('shared_buffers')}, {fraction:.0%} of "
        f"{format_bytes(memory_bytes)} {memory_source}"
    )
    same_memory = evidence is not None and evidence.memory_bytes == memory_bytes
    if evidence is not None and same_memory and evidence.singles_out:
        return _shared_buffers_as_measured(check, found, shared_buffers, evidence)
    cited = evidence.text() if evidence else ""
    if same_memory:
        cited += "; the run does not tell the settings apart, so the rule below stands"
    elif evidence is not None:
        cited += (
            f"; that server had {format_bytes(evidence.memory_bytes)}, this one "
            f"{format_bytes(memory_bytes)}: the figure does not carry over as it is"
        )
    measure = "measure with experiments/cache-split-quick.toml (seed 000) rather than trust a rule"
    if fraction > SHARED_BUFFERS_HIGH_FRACTION:
        return Finding(
            check,
            "warning",
            found,
            f"more than {SHARED_BUFFERS_HIGH_FRACTION:.0%} rarely helps: the OS cache and "
            f"work_mem need the rest; {measure}",
            f"{RESOURCE_DOCS}#GUC-SHARED-BUFFERS; {SEED_000}",
            _alter_system("shared_buffers", _gb_string(memory_bytes * 0.25), restart=True),
            cited,
        )
    if fraction < SHARED_BUFFERS_LOW_FRACTION and memory_bytes >= 2 * 1024**3:
        return Finding(
            check,
            "info",
            found,
            f"the docs start from 25% of memory; seed 000 found the index survives a large scan "
            f"only once shared_buffers holds it; {measure}",
            f"{RESOURCE_DOCS}#GUC-SHARED-BUFFERS; {SEED_000}",
            _alter_system("shared_buffers", _gb_string(memory_bytes * 0.25), restart=True),
            cited,
        )
    return Finding(check, "ok", found, evidence=cited)


def _shared_buffers_as_measured(
    check: str, found: str, shared_buffers: float, evidence: CacheSplitEvidence
) -> Finding:
    """The lab measured this host with this memory: its figures outrank the docs' 25% rule."""
    if evidence.as_good_as_best(shared_buffers):
        found += "; as good as the best the lab measured"
        return Finding(check, "ok", found, evidence=evidence.text())
    best = format_bytes(evidence.best_shared_buffers_bytes)
    measured = evidence.measured(shared_buffers)
    return Finding(
        check,
        "info",
        found,
        f"the lab measured shared_buffers = {best} fastest for index lookups after a large "
        f"scan with this memory on this host (seed 000's question), "
        f"{'faster than' if measured else 'and did not measure'} {format_bytes(shared_buffers)}"
        f"; your workload may differ",
        f"{SEED_000}; {RESOURCE_DOCS}#GUC-SHARED-BUFFERS",
        _alter_system("shared_buffers", best, restart=True),
        evidence.text(),
    )


def check_effective_cache_size(facts: ServerFacts, memory_bytes: int | None) -> Outcome:
    check = "server.effective_cache_size"
    cache = facts.number("effective_cache_size")
    if cache is None or not memory_bytes:
        return Skipped(check, "effective_cache_size or the server's memory unknown")
    found = (
        f"effective_cache_size = {facts.shown('effective_cache_size')} "
        f"({cache / memory_bytes:.0%} of {format_bytes(memory_bytes)})"
    )
    wanted = _gb_string(memory_bytes * 0.6)
    if cache > memory_bytes:
        return Finding(
            check,
            "warning",
            found,
            "no more than the memory: the planner then assumes index pages are cached that "
            "cannot be",
            QUERY_DOCS + "#GUC-EFFECTIVE-CACHE-SIZE",
            _alter_system("effective_cache_size", wanted),
        )
    if cache < memory_bytes * 0.25:
        return Finding(
            check,
            "info",
            found,
            "about shared_buffers plus the OS cache (half to three quarters of memory): too "
            "low makes the planner avoid index scans",
            f"{QUERY_DOCS}#GUC-EFFECTIVE-CACHE-SIZE",
            _alter_system("effective_cache_size", wanted),
        )
    return ok(check, found)


def check_work_mem(facts: ServerFacts, memory_bytes: int | None) -> Outcome:
    check = "server.work_mem"
    work_mem = facts.number("work_mem")
    connections = facts.number("max_connections")
    if work_mem is None or connections is None or not memory_bytes:
        return Skipped(check, "work_mem, max_connections or the server's memory unknown")
    total = work_mem * connections
    found = (
        f"work_mem {facts.shown('work_mem')} x max_connections {int(connections)} = "
        f"{format_bytes(total)} of {format_bytes(memory_bytes)}"
    )
    if total > memory_bytes:
        return Finding(
            check,
            "warning",
            found,
            "every sort or hash of every connection may take work_mem (several per query): "
            "lower it, or max_connections with a pooler in front",
            RESOURCE_DOCS + "#GUC-WORK-MEM",
            _alter_system("work_mem", _gb_string(memory_bytes / 4 / connections)),
        )
    return ok(check, found)


def check_maintenance_work_mem(facts: ServerFacts, memory_bytes: int | None) -> Outcome:
    check = "server.maintenance_work_mem"
    maintenance = facts.number("maintenance_work_mem")
    if maintenance is None or not memory_bytes:
        return Skipped(check, "maintenance_work_mem or the server's memory unknown")
    workers = facts.number("autovacuum_max_workers") or 3
    autovacuum_mem = facts.number("autovacuum_work_mem")
    per_worker = maintenance if autovacuum_mem is None or autovacuum_mem < 0 else autovacuum_mem
    found = (
        f"maintenance_work_mem = {facts.shown('maintenance_work_mem')}, "
        f"{int(workers)} autovacuum workers may take {format_bytes(per_worker * workers)}"
    )
    if per_worker * workers > memory_bytes * 0.25:
        return Finding(
            check,
            "warning",
            found,
            "the autovacuum workers together may take more than a quarter of memory: set "
            "autovacuum_work_mem lower",
            RESOURCE_DOCS + "#GUC-AUTOVACUUM-WORK-MEM",
            _alter_system("autovacuum_work_mem", _gb_string(memory_bytes * 0.05 / workers)),
        )
    if maintenance < 64 * 1024**2 and memory_bytes >= 4 * 1024**3:
        return Finding(
            check,
            "info",
            found,
            "raise it (seed 002 did): VACUUM and CREATE INDEX run faster with more memory, "
            "and few run at once",
            f"{RESOURCE_DOCS}#GUC-MAINTENANCE-WORK-MEM; {SEED_002}",
            _alter_system("maintenance_work_mem", _gb_string(min(memory_bytes / 16, 2 * 1024**3))),
        )
    return ok(check, found)


def check_checkpoints(facts: ServerFacts) -> Outcome:
    """checkpoint_timeout / max_wal_size against the checkpoints the server actually did."""
    check = "server.checkpoints"
    timed = facts.checkpoints.get("checkpoints_timed")
    requested = facts.checkpoints.get("checkpoints_requested")
    timeout = facts.number("checkpoint_timeout")
    if timed is None or requested is None or timeout is None:
        return Skipped(check, "checkpoint counters not readable")
    total = timed + requested
    settings = (
        f"checkpoint_timeout = {facts.shown('checkpoint_timeout')}, "
        f"max_wal_size = {facts.shown('max_wal_size')}"
    )
    if total < CHECKPOINTS_NEEDED:
        return Skipped(
            check, f"{total} checkpoints since the counters started: too few to judge ({settings})"
        )
    found = f"{requested} of {total} checkpoints requested (not timed); {settings}"
    if facts.observed_seconds:
        found += f"; one every {facts.observed_seconds / total / 60:.1f} min"
    if requested / total > REQUESTED_CHECKPOINTS_MAX_FRACTION:
        max_wal = facts.number("max_wal_size")
        wanted = _gb_string(max_wal * 4) if max_wal else "4GB"
        return Finding(
            check,
            "warning",
            found,
            "raise max_wal_size so checkpoints come from checkpoint_timeout: WAL volume forces "
            "them early, and each one rewrites full pages into the WAL",
            f"{WAL_CONFIGURATION}; {SEED_002}",
            _alter_system("max_wal_size", wanted),
        )
    return ok(check, found)


def check_checkpoint_completion(facts: ServerFacts) -> Outcome:
    check = "server.checkpoint_completion_target"
    target = facts.number("checkpoint_completion_target")
    if target is None:
        return Skipped(check, "checkpoint_completion_target not visible")
    found = f"checkpoint_completion_target = {target:g}"
    if target < 0.9:
        return Finding(
            check,
            "info",
            found,
            "0.9 (the default since 14) spreads checkpoint writes over the interval",
            f"{WAL_CONFIGURATION}; {SEED_002}",
            _alter_system("checkpoint_completion_target", "0.9"),
        )
    return ok(check, found)


def check_bgwriter(facts: ServerFacts) -> Outcome:
    """The background writer stopping at bgwriter_lru_maxpages, leaving writes to backends."""
    check = "server.bgwriter"
    cleaned = facts.checkpoints.get("buffers_clean")
    stops = facts.checkpoints.get("maxwritten_clean")
    if cleaned is None or stops is None:
        return Skipped(check, "background writer counters not readable")
    settings = (
        f"bgwriter_delay = {facts.shown('bgwriter_delay')}, "
        f"bgwriter_lru_maxpages = {facts.shown('bgwriter_lru_maxpages')}"
    )
    found = f"{cleaned} buffers cleaned, stopped {stops} times at the page limit; {settings}"
    backend_writes = facts.checkpoints.get("buffers_backend")  # before 17 only
    if backend_writes is not None:
        found += f"; {backend_writes} buffers written by backends"
    if stops > 0 and cleaned > 0 and stops * 100 > cleaned:
        return Finding(
            check,
            "info",
            found,
            "the writer often stops at its page limit: raise bgwriter_lru_maxpages (seed 002 "
            "used 1000, with bgwriter_delay = 10ms)",
            f"{RESOURCE_DOCS}#RUNTIME-CONFIG-RESOURCE-BACKGROUND-WRITER; {SEED_002}",
            _alter_system("bgwriter_lru_maxpages", "1000"),
        )
    return ok(check, found)


def server_checks(
    facts: ServerFacts,
    memory_bytes: int | None,
    memory_source: str = "RAM",
    evidence: CacheSplitEvidence | None = None,
) -> list[Outcome]:
    return [
        *check_durability(facts),
        check_shared_buffers(facts, memory_bytes, memory_source, evidence),
        check_effective_cache_size(facts, memory_bytes),
        check_work_mem(facts, memory_bytes),
        check_maintenance_work_mem(facts, memory_bytes),
        check_checkpoints(facts),
        check_checkpoint_completion(facts),
        check_bgwriter(facts),
    ]


def server_summary(facts: ServerFacts) -> dict:
    """What the host checks need to know about the server."""
    in_use = facts.text("huge_pages_status")  # 17+: on or off, as it came out at start
    needed = facts.number("shared_memory_size_in_huge_pages")  # 15+; -1 when unsupported
    return {
        "huge_pages": facts.text("huge_pages"),
        "huge_pages_in_use": None if in_use is None else in_use == "on",
        "huge_pages_needed": int(needed) if needed is not None and needed >= 0 else None,
        "shared_buffers_bytes": facts.number("shared_buffers"),
        "shared_memory_type": facts.text("shared_memory_type"),
        "max_connections": facts.number("max_connections"),
    }
