# s3memory: `make demo` and `make test` are the front door; both create the venv if it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PEER_STAMP := bench/.venv-peer/.installed
CHECKOV_STAMP := .venv-checkov/.installed

.PHONY: venv demo test test-format2 lint format bench bench-quick lambda-zip soak

# The extra S3 servers of the tests' matrix (s3rver from npm, LocalStack's S3 from PyPI): docs/servers.md.
include tests/servers/servers.mk

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --constraint constraints.txt --editable '.[dev,bench]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/s3memory demo

# checkov lives in a venv of its own: its pins would fight the project's.
$(CHECKOV_STAMP):
	$(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/python -m pip install --quiet checkov==3.3.30
	touch $(CHECKOV_STAMP)

test: $(STAMP) $(CHECKOV_STAMP) $(S3RVER_STAMP) $(LOCALSTACK_STAMP)
	$(PY) -m pytest -q

# The memory suites again on storage format 2 (private names): those that build their memories in
# S3MEMORY_TEST_STORAGE_FORMAT and pass there. The input fuzzer test_hostile_input is left out (a
# minute, mostly input checks the format does not reach), to keep this near 5 minutes.
FORMAT2_SUITES := contract browse tool jobs crash_safety concurrency directory_hints request_bounds \
	bounded_work guard_quota guard faults crypto budgets lambda_memory lambda_agent lambda_ric

test-format2: $(STAMP)
	S3MEMORY_TEST_STORAGE_FORMAT=2 $(PY) -m pytest -q $(FORMAT2_SUITES:%=tests/test_%.py)

$(PEER_STAMP): bench/peer-requirements.txt | $(STAMP)
	$(PY) -m bench.peer_env --force
	touch $(PEER_STAMP)

bench: $(STAMP) $(PEER_STAMP)
	$(PY) -m bench

bench-quick: $(STAMP) $(PEER_STAMP)
	$(PY) -m bench --quick --out $${TMPDIR:-/tmp}/s3memory-bench-quick

# Agents under faults on SeaweedFS, checked against a model (tests/soak.py); e.g. SOAK_ARGS="--duration 600 --seed 7".
soak: $(STAMP)
	$(PY) -m tests.soak $(SOAK_ARGS)

lambda-zip: $(STAMP)
	$(PY) tools/build_lambda_zip.py --output dist/lambda.zip

lint: $(STAMP)
	$(VENV)/bin/ruff check s3memory tests bench tools
	$(VENV)/bin/ruff format --check s3memory tests bench tools
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix s3memory tests bench tools
	$(VENV)/bin/ruff format s3memory tests bench tools
