# tunemem: `make run` starts the service with sample data; `make test` runs the test suite.
# Both build the virtual environment from scratch on a fresh machine (with uv, from PyPI).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve
HOST   ?= 127.0.0.1
PORT   ?= 8000
UV_VERSION := 0.13.9
# The CPU build of torch lies on disk on the project's machines (pip's find-links); uv does not
# read pip's configuration, so it is told where. Without the folder, torch comes from PyPI.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels)
# uv installs in parallel (about 4x faster than pip here); progress.py reports while it is quiet.
# --compile-bytecode writes every package's .pyc at install: without them (PYTHONDONTWRITEBYTECODE
# set, as on some CI and container images) each command recompiles its imports from source,
# which doubled a `tunemem ... --url` command (0.9 s against 0.45 s here).
PROGRESS := $(PYTHON) tools/progress.py
UV_INSTALL := $(PROGRESS) --label installing -- $(BIN)/uv pip install --python $(BIN)/python \
	--compile-bytecode $(FIND_LINKS) torch==2.13.0
# The project's own packages are installed editable, which uv does not compile.
COMPILE_OWN := $(BIN)/python -m compileall -q memory_service retrieval ingest agent_client platforms kernels bench >/dev/null

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONUNBUFFERED := 1

.PHONY: install install-tuners install-triton run test lint bench-ingest bench-learning clean

$(BIN)/uv:
	@echo "make: creating $(VENV) with uv $(UV_VERSION), the installer"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# What `make run` needs: the service and its embedding model (no Triton, no test tools).
$(SERVE_STAMP): pyproject.toml | $(BIN)/uv
	@echo "make: installing the service's packages (the first time about a minute)"
	$(UV_INSTALL) -e '.[server]'
	$(COMPILE_OWN)
	touch $(SERVE_STAMP)

# Everything: the service, Triton for the kernels, the test and lint tools.
$(STAMP): pyproject.toml | $(BIN)/uv
	@echo "make: installing every package (service, Triton, test and lint tools)"
	$(UV_INSTALL) -e '.[dev,server,kernels]'
	$(COMPILE_OWN)
	touch $(STAMP) $(SERVE_STAMP)

install: $(STAMP)

# What the Kernel Tuner page needs beside `make run`'s packages: Kernel Tuner itself.
install-tuners: $(SERVE_STAMP)
	@echo "make: installing Kernel Tuner for agent_client.tuners.kernel_tuner"
	$(UV_INSTALL) -e '.[server,tuners]'

# What the Triton page needs beside `make run`'s packages: Triton (about 1 GB; torch is there).
install-triton: $(SERVE_STAMP)
	@echo "make: installing Triton for agent_client.tuners.triton_autotune"
	$(UV_INSTALL) -e '.[server,kernels]'

run: $(SERVE_STAMP)
	@echo "make: starting tunemem on http://$(HOST):$(PORT) (Ctrl-C stops it)"
	@$(PROGRESS) --label starting --until 'Uvicorn running|Application startup complete' -- \
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
