# Two commands for a newcomer: `make demo` and `make test`. Each creates .venv itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint conformance bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,embedded]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/deltaflow demo

lint: $(STAMP)
	$(BIN)/ruff check connectors formats state processor tests bench
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest -q -p no:cacheprovider

conformance: $(STAMP)
	$(BIN)/pip install -q -e '.[dev,embedded,conformance]'
	$(BIN)/pytest -q -m conformance tests/conformance

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
