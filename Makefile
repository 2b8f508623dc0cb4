# Every target sets up what it needs: a virtualenv with the lab and its tools.
PYTHON ?= python3
VENV := .venv
INSTALLED := $(VENV)/.installed-stamp

.PHONY: quick test lint format bench clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(INSTALLED)

quick: $(INSTALLED)
	$(VENV)/bin/pgcachelab run experiments/big-cache-quick.toml

test: $(INSTALLED)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/pytest

lint: $(INSTALLED)
	$(VENV)/bin/ruff check src tests bench

format: $(INSTALLED)
	$(VENV)/bin/ruff format src tests bench

bench: $(INSTALLED)
	$(VENV)/bin/python bench/overhead.py

clean:
	rm -rf $(VENV) build src/*.egg-info
