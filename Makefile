# mirrorspec — two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_PROJECT ?= projects/parquet_orders

.PHONY: demo test test-fast test-spark test-cluster bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -m mirrorspec.spark.jars s3
	touch $(STAMP)

demo: $(STAMP)
	bash scripts/demo.sh $(DEMO_PROJECT)

test: $(STAMP)
	@$(BIN)/python -m mirrorspec.spark.jars s3 >/dev/null  # the s3 tests' hadoop-aws (cached: no-op)
	@if ! bash scripts/ensure_chromium.sh; then \
	  if [ -n "$${CI:-}" ]; then echo "CI needs chromium for the browser test" >&2; exit 1; fi; \
	  export MIRRORSPEC_SKIP_BROWSER=1; fi; \
	if ! bash scripts/ensure_postgres.sh; then \
	  if [ -n "$${CI:-}" ]; then echo "CI needs PostgreSQL for the reconcile JDBC test" >&2; exit 1; fi; \
	  export MIRRORSPEC_SKIP_POSTGRES=1; fi; \
	$(BIN)/python -m pytest -q -m "not cluster"

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not spark and not cluster"

test-spark: $(STAMP)
	$(BIN)/python -m pytest -q -m spark

# Starts a Spark standalone master + 2 workers and a Spark Connect server on 127.0.0.1 (minutes).
test-cluster: $(STAMP)
	$(BIN)/python -m pytest -q -m cluster

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) target .pytest_cache
