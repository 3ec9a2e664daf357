# s3memory: `make demo` and `make test` are the front door; both create the venv if it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint format

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --constraint constraints.txt --editable '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/s3memory demo

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check s3memory tests
	$(VENV)/bin/ruff format --check s3memory tests
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix s3memory tests
	$(VENV)/bin/ruff format s3memory tests
