# Every target sets up what it needs: a virtualenv with the lab and its tools.
PYTHON ?= python3
VENV := .venv
INSTALLED := $(VENV)/.installed-stamp
# The layers contract in pyproject.toml; no cache directory, so it leaves nothing behind.
LINT_IMPORTS := $(VENV)/bin/lint-imports --no-cache --no-logo
# The type check ([tool.mypy] in pyproject.toml says which checks are on): src/pgcachelab.
MYPY := $(VENV)/bin/mypy

.PHONY: quick readme-picture test test-fast test-source-build lint format bench clean chromium pg15-headers fusedisk faults \
	debian-python-venv docs docs-strict

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test,docs]'
	$(BYTECODE) $(VENV)/bin/python -m compileall -q -j 0 $(VENV)/lib src tests >/dev/null
	touch $(INSTALLED)

# As root the quick run emulates seed 004's small machine (a memory cgroup and a slow FUSE
# disk, both needing root), so its steps appear whatever the host; without root the lab refuses
# those, so the variant without them runs, and its report says which steps it could not show.
QUICK_SPEC := experiments/$(if $(filter 0,$(shell id -u)),big-cache-quick,big-cache-quick-noroot).toml

# quick needs the lab alone: without the test tools (scipy, ruff, pytest) the virtualenv takes
# ~30 s less of its three-minute budget (issue 17); `make test` adds them later.
RUNTIME := $(VENV)/.runtime-stamp
$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e .
	touch $(RUNTIME)

quick: $(RUNTIME) fusedisk
	$(VENV)/bin/pgcachelab run $(QUICK_SPEC)

# The README's picture: tps against database size in a real quick run, with the steps found
# (printed on stderr: what the picture shows, for the README's words).
README_PICTURE := docs/quick-steps.png
readme-picture: $(RUNTIME) fusedisk
	lab=$$(mktemp -d /tmp/pgcachelab-picture-XXXXXX); \
	$(VENV)/bin/pgcachelab run $(QUICK_SPEC) --lab-dir "$$lab" >/dev/null && \
	$(VENV)/bin/pgcachelab advise last --lab-dir "$$lab" >&2 && \
	mkdir -p docs && cp "$$lab"/reports/*/tps-by-size.png $(README_PICTURE); status=$$?; \
	rm -rf "$$lab"; exit $$status

# The report test opens every report in headless Chromium: Debian's package, installed once
# when missing and we are root (otherwise that test is skipped, and says why).
chromium:
	@command -v chromium >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# pg_cachelab's PostgreSQL 15 test builds against Debian's server headers (PGXS): installed
# once when Debian's PostgreSQL 15 is here, its headers are not, and we are root. Otherwise, or
# when apt cannot fetch them, that test is skipped and says why.
PG15_BIN := /usr/lib/postgresql/15/bin
pg15-headers:
	@[ ! -x $(PG15_BIN)/postgres ] || [ -f /usr/include/postgresql/15/server/storage/buf_internals.h ] || [ "$$(id -u)" != 0 ] || \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-server-dev-15 \
		  >/dev/null; } || echo "note: could not install postgresql-server-dev-15"

# The emulated disk's daemon (native/fusedisk) needs libfuse3: Debian's fuse3 and libfuse3-dev,
# installed once when missing and we are root. Without them the build fails quietly here, and
# the disk is unavailable (its tests are skipped and say why).
fusedisk:
	@{ pkg-config --exists fuse3 2>/dev/null && command -v fusermount3 >/dev/null 2>&1; } || \
		[ "$$(id -u)" != 0 ] || \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3 libfuse3-dev >/dev/null; } || \
		echo "note: could not install fuse3 and libfuse3-dev"
	@$(MAKE) -s -C native/fusedisk || echo "note: could not build native/fusedisk"

# CI's second leg (.ci/run) runs the suite with Debian 12's own python3 (3.11.2: older than
# root's, issue 23), whose virtualenvs need Debian's python3-venv (ensurepip): installed once
# when missing and we are root.
DEBIAN_PYTHON := /usr/bin/python3
debian-python-venv:
	@[ ! -x $(DEBIAN_PYTHON) ] || $(DEBIAN_PYTHON) -c 'import ensurepip' 2>/dev/null || \
		[ "$$(id -u)" != 0 ] || \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }

# pytest-xdist's workers (PARALLEL= runs a suite in one process): `make test` has three on two
# cores, as much of it waits (servers starting, the fleet's leases and outages, pgbench's timed
# runs): 489 s against 574 s on two; `make test-fast`, all CPU, was slower on three than on two.
TEST_WORKERS ?= 3
FAST_WORKERS ?= 2
xdist = --tx $(1)*popen//python=tests/xdist-worker --dist loadscope
PARALLEL ?= $(call xdist,$(TEST_WORKERS))
FAST_PARALLEL ?= $(if $(PARALLEL),$(call xdist,$(FAST_WORKERS)))
# The suite's bytecode, kept in the virtualenv (not beside the sources) and compiled when it is
# installed (15 s): with PYTHONDONTWRITEBYTECODE set, every worker and each of the CLI's few
# hundred processes compiled the lab's and the tests' modules again (collecting the suite:
# 12 s a process, 6 s from this cache).
BYTECODE = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/bytecode

# The machine's registry of what labs made, if the suite's in-process labs left it empty (a
# lab command removes it when it ends; a test's fixtures are not one).
RMDIR_REGISTRY = rmdir /run/pgcachelab/owned /run/pgcachelab 2>/dev/null || true

test: $(INSTALLED) chromium pg15-headers fusedisk
	$(VENV)/bin/ruff check src tests bench docs/hooks
	$(VENV)/bin/ruff format --check src tests bench docs/hooks
	$(LINT_IMPORTS)
	$(MYPY)
	$(MAKE) --no-print-directory docs-strict
	@# pytest's temporary directories live in one of our own, removed whatever the outcome
	@# (Ctrl-C and SIGTERM included: make's Interrupt used to leave it)
	@# Three workers (pytest-xdist), each with its own lab registry (tests/xdist-worker); the
	@# tests that share the machine's state run on one of them (conftest.py MACHINE_MODULES),
	@# the three-host fleet's on one (NETWORK_MODULES).
	@# Then, alone, the tests marked `quiet`: the emulated disk's latencies and the cache
	@# wash's client timing, which the other workers' load inflated (a 2 ms fdatasync measured
	@# 3.7 ms beside it; a 13% timing loop overhead, over the cross-check's tolerance).
	base=$$(mktemp -d /tmp/pgcachelab-pytest-XXXXXX); \
	trap 'flock -w 300 "$$base/workers.lock" true 2>/dev/null; rm -rf "$$base"; \
	      $(RMDIR_REGISTRY)' EXIT; \
	trap 'exit 130' INT; trap 'exit 143' TERM; \
	status=0; \
	$(BYTECODE) PGCACHELAB_TEST_BASE="$$base" $(VENV)/bin/pytest --basetemp="$$base/t" \
		--durations=25 -m "not source_build and not quiet" $(PARALLEL) || status=$$?; \
	$(BYTECODE) $(VENV)/bin/pytest --basetemp="$$base/q" -m "quiet and not source_build" \
		|| status=$$?; \
	exit $$status

# PostgreSQL built from Debian's source package end to end (tests/test_source_build.py; about
# 2.5 minutes of gcc on 2 cores): left out of `make test` to keep its pytest short, run by
# .ci/run as root after the root leg.
test-source-build: $(INSTALLED)
	base=$$(mktemp -d /tmp/pgcachelab-pytest-XXXXXX); \
	trap 'rm -rf "$$base"; $(RMDIR_REGISTRY)' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; \
	$(BYTECODE) $(VENV)/bin/pytest --basetemp="$$base/t" -m source_build

# The tests that start no server (pure functions, parsers on captured outputs, bad input through
# the CLI, reports from the fixture store): those not marked `server` (tests/fix_clusters.py marks
# every user of a server fixture) or `browser` (headless Chromium), on two workers; under a
# minute on 2 cores. pytest exits 5 when the selection is empty, so a broken
# marker expression fails here instead of passing with nothing run.
test-fast: $(INSTALLED)
	base=$$(mktemp -d /tmp/pgcachelab-pytest-XXXXXX); \
	$(BYTECODE) PGCACHELAB_TEST_BASE="$$base" $(VENV)/bin/pytest --basetemp="$$base/t" \
		-m "not server and not browser and not quiet" \
		$(FAST_PARALLEL); status=$$?; \
	flock -w 300 "$$base/workers.lock" true 2>/dev/null; rm -rf "$$base"; $(RMDIR_REGISTRY); \
	exit $$status

# The whole fault suite (tests/test_faults.py): 20 random kill -9s of a lab then --resume, where
# `make test` runs 3 (PGCACHELAB_FAULT_KILLS); PGCACHELAB_FAULT_SEED picks other moments.
faults: $(INSTALLED)
	base=$$(mktemp -d /tmp/pgcachelab-pytest-XXXXXX); \
	PGCACHELAB_FAULT_KILLS=20 $(VENV)/bin/pytest --basetemp="$$base/t" -s tests/test_faults.py \
	  tests/test_resume.py; status=$$?; rm -rf "$$base"; exit $$status

# The docs site (mkdocs.yml): its reference pages are generated from the code at build time
# (docs/hooks/reference.py), into site/, which is not committed. --strict turns a broken link,
# a page missing from the nav or a warning into a failure: `make test` builds it that way.
# NO_MKDOCS_2_WARNING: Material's banner about its successor, on every build, is not ours.
DOCS_SITE := site
docs: $(INSTALLED)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(DOCS_SITE)
	@echo "the site: $(DOCS_SITE)/index.html"

# In `make test`: the same build into a scratch directory, removed whatever the outcome.
docs-strict: $(INSTALLED)
	@site=$$(mktemp -d /tmp/pgcachelab-docs-XXXXXX); \
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir "$$site"; status=$$?; \
	rm -rf "$$site"; exit $$status

lint: $(INSTALLED)
	$(VENV)/bin/ruff check src tests bench docs/hooks
	$(LINT_IMPORTS)
	$(MYPY)

format: $(INSTALLED)
	$(VENV)/bin/ruff format src tests bench docs/hooks

bench: $(INSTALLED)
	$(VENV)/bin/python bench/overhead.py

clean:
	rm -rf $(VENV) build src/*.egg-info $(DOCS_SITE)
