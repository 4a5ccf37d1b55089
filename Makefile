# Set-up is part of every target: a fresh machine needs only Python 3.11+, a C++ compiler and cmake.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: install engine system-deps demo test lint unit integration clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

engine: install
	./scripts/install-llama-server.sh $(VENV)

system-deps:
	./scripts/install-system-deps.sh

demo: engine
	$(VENV)/bin/bringup demo

test: engine system-deps
	$(VENV)/bin/pytest -q

unit: install
	$(VENV)/bin/pytest -q tests/unit

lint: install
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) runs bringup.db bringup.db-wal bringup.db-shm
