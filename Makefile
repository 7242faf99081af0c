# Two commands for a newcomer: `make demo` and `make test`. Each creates .venv itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint conformance tpch tpch-flink bench bench-tpch clean realdbz-deps test-realdbz nexmark

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,embedded]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/deltaflow demo

# mypy reads processor/ and state/ as deltaflow.processor and deltaflow.state through
# links in $(VENV)/typed (it cannot follow the editable install); see [tool.mypy].
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	@mkdir -p $(VENV)/typed/deltaflow
	@for p in formats state connectors processor; do ln -sfn ../../../$$p $(VENV)/typed/deltaflow/$$p; done
	$(BIN)/mypy

test: lint realdbz-deps
	$(BIN)/pytest -q -p no:cacheprovider

# tests/realdbz runs a private PostgreSQL 15 server and real Debezium (a JVM, Java 17+):
# both come from Debian's packages, installed here when missing (as root, as on CI).
PG_BIN := $(shell pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
realdbz-deps:
	@test -x $(PG_BIN)/initdb -a -n "$$(command -v java)" || { \
	  test "$$(id -u)" = 0 || { echo "tests/realdbz needs PostgreSQL 15 server and Java 17:" \
	    "apt-get install postgresql-15 openjdk-17-jre-headless" >&2; exit 1; }; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	    postgresql-15 openjdk-17-jre-headless; }

# Only the real PostgreSQL + Debezium suite (part of `make test`; about a minute and a half).
test-realdbz: $(STAMP) realdbz-deps
	$(BIN)/pytest -q -p no:cacheprovider tests/realdbz

# Every TPC-H query deltaflow plans, judged by DuckDB, with the default strategies and with
# delta-join FORCE where eligible (make test runs a quick subset of each).
# DELTAFLOW_TPCH_SF sets the scale factor (default 0.01).
tpch: $(STAMP)
	DELTAFLOW_TPCH=full $(BIN)/pytest -q -s -p no:cacheprovider tests/tpch

# Flink 2.3 runs the 22 TPC-H queries on the same events (debezium-json files), judged by
# DuckDB: an independent check of the change stream (one JVM, a few minutes).
FLINK_PY = $(or $(FLINK_PYTHON),/work/flinkvenv/bin/python)
tpch-flink: $(STAMP)
	DELTAFLOW_FLINK_PYTHON=$(FLINK_PY) $(BIN)/pytest -q -s -p no:cacheprovider tests/tpch/test_tpch_flink.py

# Flink runs in its own venv (.venv/flink, made once) in one subprocess: PyFlink's JVM and
# Beam's pins stay out of deltaflow's venv. Flink results are cached by content, so an
# unchanged suite does not start the JVM. The last line is "N cases, N agree, N differ".
conformance: $(STAMP)
	@test -f $(VENV)/flink/.installed-flink || ( $(PY) -m venv $(VENV)/flink \
	  && $(VENV)/flink/bin/pip install -q --upgrade pip \
	  && $(VENV)/flink/bin/pip install -q 'apache-flink==2.3.0' \
	  && touch $(VENV)/flink/.installed-flink )
	@rm -f $(VENV)/flink/summary.txt
	-DELTAFLOW_CONFORMANCE=1 DELTAFLOW_CONFORMANCE_SUMMARY=$(VENV)/flink/summary.txt \
	  $(BIN)/pytest -q -p no:cacheprovider --timeout 1800 -m conformance tests/conformance; \
	  echo $$? > $(VENV)/flink/status
	@tail -n 2 $(VENV)/flink/summary.txt 2>/dev/null || echo "conformance run did not finish"
	@exit $$(cat $(VENV)/flink/status)

# Nexmark q0..q22 (tests/nexmark) on deltaflow against Flink 2.3 on the same 10,000 events; Flink
# from the conformance venv (made as there) unless DELTAFLOW_FLINK_PYTHON names one. Flink's
# results are cached in DELTAFLOW_FLINK_CACHE when it is set. About 5 minutes uncached.
nexmark: $(STAMP)
	@test -n "$(DELTAFLOW_FLINK_PYTHON)" -o -f $(VENV)/flink/.installed-flink || ( $(PY) -m venv $(VENV)/flink \
	  && $(VENV)/flink/bin/pip install -q --upgrade pip \
	  && $(VENV)/flink/bin/pip install -q 'apache-flink==2.3.0' \
	  && touch $(VENV)/flink/.installed-flink )
	DELTAFLOW_NEXMARK=1 DELTAFLOW_FLINK_PYTHON=$(or $(DELTAFLOW_FLINK_PYTHON),$(VENV)/flink/bin/python) \
	  $(BIN)/pytest -q -p no:cacheprovider --timeout 3600 tests/nexmark

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[dev,embedded,bench]'
	test -x "$(or $(FLINK_PYTHON),/work/flinkvenv/bin/python)" || { \
	  $(PY) -m venv /work/flinkvenv && /work/flinkvenv/bin/pip install -q apache-flink==2.3.0; }
	$(BIN)/python -m bench --flink-python "$(or $(FLINK_PYTHON),/work/flinkvenv/bin/python)" $(BENCH_ARGS)

# TPC-H per query: deltaflow (Kafka in and out) against Flink 2.3 (files in, blackhole out).
bench-tpch: $(STAMP)
	$(BIN)/python -m bench.tpch --flink-python "$(FLINK_PY)" $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
