# Tessera: `make run` indexes the example corpus through Dagster; `make test` runs the suite.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONPATH := $(CURDIR)

.PHONY: setup run test test-slow lint typecheck bench bench-deps dev clean ocr browser ldap faketime reliability lock

$(STAMP): pyproject.toml requirements.lock
	@$(MAKE) --no-print-directory ocr
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# torch first, pinned to the CPU wheel on disk; a looser spec pulls a CUDA build.
	$(BIN)/pip install --disable-pip-version-check -q "torch==2.13.0"
	# pyproject.toml holds ranges (a library install); the app gets the locked versions.
	$(BIN)/pip install --disable-pip-version-check -q -c requirements.lock -e ".[dev]"
	@touch $(STAMP)

# Rewrite requirements.lock from .venv after changing a dependency (torch stays pinned in pyproject.toml).
lock: $(STAMP)
	@{ echo "# pip constraints: the exact versions make run, make test and CI install (make lock rewrites this)."; \
	  $(BIN)/pip freeze --exclude-editable --disable-pip-version-check | grep -v -i '^torch=='; } > requirements.lock

setup: $(STAMP)

# $(call apt_once,COMMAND,PACKAGES,WHAT IS LOST): install Debian packages once, only when
# COMMAND is missing and we are root with apt-get; otherwise warn and go on.
apt_once = @command -v $(1) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
	  else echo "warning: $(1) missing and cannot be installed here; $(3)" >&2; fi; }

# OCR for image-only PDF pages: Debian's tesseract.
ocr:
	$(call apt_once,tesseract,tesseract-ocr tesseract-ocr-eng,OCR is disabled)

# Headless Chromium for the lineage report's browser test: Debian's chromium.
browser:
	$(call apt_once,chromium,chromium,the browser test is skipped)

# A real OpenLDAP server for the directory tests (started on loopback by the tests): Debian's slapd.
ldap:
	$(call apt_once,slapd,slapd ldap-utils,the LDAP directory tests are skipped)

# libfaketime, to run maintenance a week ahead of the versions it prunes: Debian's faketime.
faketime:
	$(call apt_once,faketime,faketime,the maintenance-a-week-later tests are skipped)

run: $(STAMP)
	$(BIN)/python -m pipelines.main --config examples/tessera.yaml $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy tessera assets resources pipelines bench

# Two pytest-xdist workers, one test file each at a time (module fixtures stay per file):
# 15m48s serial -> about 11 min on 2 cores; TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 2
test: $(STAMP) browser ldap faketime lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider -p tests.scoreboard -m "not slow" --durations=15 \
	  $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# Tests over a minute each (e.g. the Dagster job with every step in its own process).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m slow

# The scenarios of ../shared/RELIABILITY.md and the safety classes, one board: `N/M scenarios hold`.
reliability: $(STAMP) browser ldap faketime
	$(BIN)/python -m pytest -q -p no:cacheprovider -p tests.scoreboard --require-all-scenarios -m scenario

# The benchmarks' and `tessera eval`'s peers (Chonkie, LangChain, the HTML extractors): the
# venv's own pip 23.2 stops with an internal error on lxml[html_clean] / lxml[html-clean].
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --disable-pip-version-check -q "pip>=24"
	$(BIN)/pip install --disable-pip-version-check -q -c requirements.lock -e ".[dev,bench]"
	@touch $(BENCH_STAMP)

bench-deps: $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run_all

dev: $(STAMP)
	@mkdir -p .tessera/dagster
	DAGSTER_HOME=$(CURDIR)/.tessera/dagster $(BIN)/python -c "import pipelines.main as m; m.instance_home()"
	VIRTUAL_ENV=$(CURDIR)/$(VENV) DAGSTER_HOME=$(CURDIR)/.tessera/dagster $(BIN)/dg dev

clean:
	rm -rf .tessera .pytest_cache .mypy_cache .ruff_cache
