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

.PHONY: setup run test lint typecheck bench dev clean ocr browser

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory ocr
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# torch first, pinned to the CPU wheel on disk; a looser spec pulls a CUDA build.
	$(BIN)/pip install --disable-pip-version-check -q "torch==2.13.0"
	$(BIN)/pip install --disable-pip-version-check -q -e ".[dev]"
	@touch $(STAMP)

setup: $(STAMP)

# OCR for image-only PDF pages: Debian's tesseract, installed once, only when missing.
ocr:
	@command -v tesseract >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null; \
	  else echo "warning: tesseract missing and cannot be installed here; OCR is disabled" >&2; fi; }

# Headless Chromium for the lineage report's browser test: Debian's chromium, once, only when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "warning: chromium missing and cannot be installed here; the browser test is skipped" >&2; fi; }

run: $(STAMP)
	$(BIN)/python -m pipelines.main --config examples/tessera.yaml

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy tessera assets resources pipelines bench

test: $(STAMP) browser lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

dev: $(STAMP)
	@mkdir -p .tessera/dagster
	DAGSTER_HOME=$(CURDIR)/.tessera/dagster $(BIN)/python -c "import pipelines.main as m; m.instance_home()"
	DAGSTER_HOME=$(CURDIR)/.tessera/dagster $(BIN)/dagster dev -w workspace.yaml

clean:
	rm -rf .tessera .pytest_cache .mypy_cache .ruff_cache
