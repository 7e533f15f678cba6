# tunemem: `make run` starts the service with sample data; `make test` runs the test suite.
# Both build the virtual environment from scratch on a fresh machine.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HOST   ?= 127.0.0.1
PORT   ?= 8000

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install run test lint bench-ingest bench-learning clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU build of torch lies on disk; pin it first so nothing pulls a CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev,server]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/tunemem serve --seed --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest -q

PACKAGES := platforms retrieval ingest kernels memory_service agent_client bench

# ruff (with complexity and import order), formatting, mypy on every package (strict on
# retrieval and platforms), and the import-linter contracts that keep DESIGN section 2's arrows.
lint: $(STAMP)
	$(BIN)/ruff check $(PACKAGES) tests
	$(BIN)/ruff format --check $(PACKAGES) tests
	$(BIN)/mypy
	$(BIN)/lint-imports

bench-ingest: $(STAMP)
	$(BIN)/tunemem bench ingest

bench-learning: $(STAMP)
	$(BIN)/tunemem bench learning

clean:
	rm -rf $(VENV) .tunemem .pytest_cache
