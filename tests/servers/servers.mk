# The extra S3 servers of the tests' server matrix (tests/support/s3rver.py, tests/support/localstack.py),
# each installed from a committed, pinned list. Included by the Makefile; `make test-all` depends on both stamps.
S3RVER_DIR := tests/servers/s3rver
S3RVER_STAMP := $(S3RVER_DIR)/node_modules/.installed
LOCALSTACK_DIR := tests/servers/localstack
LOCALSTACK_STAMP := $(LOCALSTACK_DIR)/.venv/.installed

$(S3RVER_STAMP): $(S3RVER_DIR)/package.json $(S3RVER_DIR)/package-lock.json
	npm ci --prefix $(S3RVER_DIR) --no-audit --no-fund --ignore-scripts --loglevel=error
	touch $(S3RVER_STAMP)

# LocalStack's own version ranges admit releases it breaks on: the frozen list is installed as is.
$(LOCALSTACK_STAMP): $(LOCALSTACK_DIR)/requirements.txt
	rm -rf $(LOCALSTACK_DIR)/.venv
	$(PYTHON) -m venv $(LOCALSTACK_DIR)/.venv
	$(LOCALSTACK_DIR)/.venv/bin/python -m pip install --quiet --no-deps --requirement $(LOCALSTACK_DIR)/requirements.txt
	touch $(LOCALSTACK_STAMP)

servers: $(S3RVER_STAMP) $(LOCALSTACK_STAMP)
.PHONY: servers
