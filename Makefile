# mirrorspec — two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_PROJECT ?= projects/parquet_orders

.PHONY: demo demo-kafka demo-onelake lint test test-extras test-airflow test-fast test-spark test-deep test-deep-delivery test-cluster bench clean docs docs-reference dist

# Each step that can take minutes says so first and prints a line every 30 s while it runs
# (scripts/step.sh): pip stays quiet (-q) but never silent for minutes.
STEP := bash scripts/step.sh

$(STAMP): pyproject.toml
	$(STEP) "creating the virtualenv $(VENV) (seconds)" $(PYTHON) -m venv $(VENV)
	$(STEP) "upgrading pip (under a minute)" $(BIN)/pip install -q --upgrade pip
	$(STEP) "installing mirrorspec and its dependencies: PySpark, Delta, Azure SDKs, dev tools (1-4 minutes)" \
	  $(BIN)/pip install -q -e '.[dev]'
	$(STEP) "fetching the Delta and S3 jars from Maven Central once (seconds; cached after)" \
	  $(BIN)/python -m mirrorspec.spark.platform.jars s3
	$(STEP) "fetching hadoop-azure for abfs(s):// and serve once (seconds; cached after)" \
	  $(BIN)/python -m mirrorspec.spark.platform.jars azure
	$(STEP) "building the Spark driver's class-data archive once (1-3 minutes on a quiet machine, up to 10 under load)" \
	  $(BIN)/python -m mirrorspec.spark.ops.cds_training  # docs/performance.md
	touch $(STAMP)

demo: $(STAMP)
	bash scripts/demo.sh $(DEMO_PROJECT)

# A local Kafka broker, Qlik Replicate's messages on its topics, projects/qlik_kafka run twice.
demo-kafka: $(STAMP)
	bash scripts/ensure_kafka.sh $(BIN)/python
	$(BIN)/python scripts/demo_kafka.py

# `mirrorspec serve` with the engine beside it; a publisher written with the Azure SDK (docs/onelake.md).
demo-onelake: $(STAMP)
	$(BIN)/python scripts/demo_onelake.py

# The lines the code keeps (docs/architecture.md): ruff rules, strict types on the compile path,
# import contracts. A few seconds; `make test` runs it first, so CI fails when a line is crossed.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The services the tests use (a local Kafka broker, PostgreSQL, Chromium, the optional jar sets);
# CI must have them, a laptop skips the tests whose service can't be had.
define TEST_SERVICES
	@$(BIN)/python -m mirrorspec.spark.platform.jars s3 >/dev/null  # the s3 tests' hadoop-aws (cached: no-op)
	@$(BIN)/python -m mirrorspec.spark.platform.jars azure >/dev/null  # the abfs test's hadoop-azure
	@$(BIN)/python -m mirrorspec.spark.ops.cds_training 2>/dev/null  # the JVM class-data archive (made: no-op)
endef
SERVICES_ENV = if ! bash scripts/ensure_chromium.sh; then \
	  if [ -n "$${CI:-}" ]; then echo "CI needs chromium for the browser test" >&2; exit 1; fi; \
	  export MIRRORSPEC_SKIP_BROWSER=1; fi; \
	if ! bash scripts/ensure_kafka.sh $(BIN)/python; then \
	  if [ -n "$${CI:-}" ]; then echo "CI needs the Kafka broker jars for the kafka tests" >&2; exit 1; fi; \
	  export MIRRORSPEC_SKIP_KAFKA=1; fi; \
	if ! bash scripts/ensure_postgres.sh; then \
	  if [ -n "$${CI:-}" ]; then echo "CI needs PostgreSQL for the reconcile JDBC test" >&2; exit 1; fi; \
	  export MIRRORSPEC_SKIP_POSTGRES=1; fi

# Two pytest workers (pytest-xdist): a Spark test mostly waits on one thread, so two share
# two cores well. Each worker has its own SparkSession (and Kafka broker, when it runs a kafka
# test); a module's tests stay on one worker (--dist loadfile), so its module fixtures run
# once. Modules go out in the order tests/conftest.py gives them (not by test count): the
# slow ones first, so the quick ones even out the workers' ends.
# TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
PYTEST_WORKERS = $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# What each test needs is a marker (pyproject.toml): spark (a JVM; everything under tests/spark),
# cluster, clients, browser, kafka, postgres, s3, and extra (slow end-to-end, outside `make test`).
# Every test but the cluster, official-client and extra ones.
test: lint
	$(TEST_SERVICES)
	@$(SERVICES_ENV); \
	$(PYTEST_WORKERS) -m "not cluster and not extra and not clients" --durations=15

# docs/orchestration.md's Airflow recipes run by the real Airflow (`airflow dags test`, a throwaway
# AIRFLOW_HOME and SQLite DB per run). Airflow lives in its own venv, .venv-airflow/ (made once,
# under a minute from PyPI, then reused), so its ~140 pinned packages never move the project's;
# pip's resolution is pinned in tests/airflow-constraints.txt (Airflow's own is on GitHub).
AIRFLOW_VERSION ?= 3.3.2
AIRFLOW_CONSTRAINTS ?= tests/airflow-constraints.txt
AIRFLOW_VENV := .venv-airflow
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed

# The slow end-to-end extras (marked `extra`): whole CLI processes against real services
# (OneLake endpoint over ABFS, OpenLineage/metrics watchers, two publishers racing, a full
# disk, orchestrators). Minutes; run them before resolving a change in those areas.
test-extras: $(STAMP) $(AIRFLOW_STAMP)
	$(TEST_SERVICES)
	@$(SERVICES_ENV); \
	$(BIN)/python -m pytest -q -m "extra and not cluster"

$(AIRFLOW_STAMP): pyproject.toml $(AIRFLOW_CONSTRAINTS)
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/pip install -q --upgrade pip
	$(AIRFLOW_VENV)/bin/pip install -q $(if $(AIRFLOW_CONSTRAINTS),-c $(AIRFLOW_CONSTRAINTS)) \
	  'apache-airflow==$(AIRFLOW_VERSION)' .
	touch $(AIRFLOW_STAMP)

test-airflow: $(STAMP) $(AIRFLOW_STAMP)
	$(BIN)/python -m pytest -q -m extra tests/spark/test_orchestration_recipes.py -k real_airflow

# Official Azure clients (Java, Go and JS SDKs, azcopy, rclone) against `mirrorspec serve
# --self-signed`, installed from their registries into ~/.cache/mirrorspec/clients (minutes the
# first time). A missing toolchain is a skip. Not part of `make test` (network, toolchains).
.PHONY: test-clients
test-clients: $(STAMP)
	MIRRORSPEC_TEST_CLIENTS=1 $(BIN)/python -m pytest -q -rs -m clients tests/clients -s

# The tests that need no JVM and no service: tests/unit, tests/functional and the docs site's
# build without a browser (a minute or two). No Spark, no extras, no Chromium, no broker.
FAST = not spark and not cluster and not extra and not clients and not browser and not kafka \
  and not postgres and not s3
test-fast: lint
	$(PYTEST_WORKERS) -m "$(FAST)"

# The Spark tests of `make test` (tests/spark and the CLI tests that start a JVM), with their
# services (Kafka broker, PostgreSQL, the s3 jars).
test-spark: $(STAMP)
	$(TEST_SERVICES)
	@$(SERVICES_ENV); \
	$(PYTEST_WORKERS) -m "spark and not cluster and not extra" --durations=15

# The engine property test with many random examples (make test runs the same 6 every time).
# Run it before resolving an engine change. DEEP_EXAMPLES=N sets how many.
DEEP_EXAMPLES ?= 200
test-deep: $(STAMP)
	MIRRORSPEC_PROPERTY_RANDOM=1 MIRRORSPEC_PROPERTY_EXAMPLES=$(DEEP_EXAMPLES) \
	  $(BIN)/python -m pytest -q -m spark tests/spark/test_properties.py

# The readers' delivery property tests (tests/support/delivery_harness.py) with new random examples:
# the pure pipeline with DEEP_EXAMPLES (×6 per connector and table kind), the Spark pipeline
# DEEP_SPARK_EXAMPLES times (every connector a table of each run). Run it before resolving a
# change to a reader's delivery, the publisher's replays or completion.
DEEP_SPARK_EXAMPLES ?= 3
test-deep-delivery: $(STAMP)
	MIRRORSPEC_PROPERTY_RANDOM=1 MIRRORSPEC_PROPERTY_EXAMPLES=$(DEEP_EXAMPLES) \
	  $(BIN)/python -m pytest -q tests/unit/sources/test_debezium_delivery.py tests/unit/sources/test_row_image_delivery.py \
	    tests/unit/sources/test_replicator_delivery.py
	MIRRORSPEC_PROPERTY_RANDOM=1 MIRRORSPEC_PROPERTY_EXAMPLES=$(DEEP_SPARK_EXAMPLES) \
	  $(BIN)/python -m pytest -q tests/spark/test_debezium_delivery_e2e.py -k every_connector
	MIRRORSPEC_PROPERTY_RANDOM=1 MIRRORSPEC_PROPERTY_EXAMPLES=$(DEEP_SPARK_EXAMPLES) \
	  $(BIN)/python -m pytest -q tests/spark/test_row_image_delivery_e2e.py

# Starts a Spark standalone master + 2 workers and a Spark Connect server on 127.0.0.1 (minutes).
test-cluster: $(STAMP)
	$(BIN)/python -m pytest -q -m cluster

# The documentation site (mkdocs.yml → site/), strict: a broken link or anchor, or a page left
# out of the navigation, fails the build. CI runs it after `make test`.
docs: $(STAMP)
	$(BIN)/python scripts/docs_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	@echo "docs site: site/index.html"

# docs/cli.md and project-reference.md's key tables, generated from the commands and the schemas.
docs-reference: $(STAMP)
	$(BIN)/python scripts/docs_reference.py

# The release: an sdist and a wheel in dist/ (built offline from the venv's build backend).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .
	@ls dist

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) $(AIRFLOW_VENV) target site dist build .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
