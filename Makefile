# tunemem: `make run` starts the service with sample data; `make test` runs the test suite.
# Both build the virtual environment from scratch on a fresh machine (with uv, from PyPI), with
# exactly the versions pinned in requirements*.lock: what CI tested is what a new machine gets.

# The locks are compiled for Python 3.11: take python3.11 where it is on the PATH.
PYTHON ?= $(if $(shell command -v python3.11 2>/dev/null),python3.11,python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve
HOST   ?= 127.0.0.1
PORT   ?= 8000
UV_VERSION := 0.13.9
# The locks: every package the project installs, pinned with its hashes, for Python 3.11 on
# x86-64 Linux. requirements-dev.lock is everything (`make install`, `make test`, CI);
# requirements.lock is what `make run` needs, the same versions. `make lock` refreshes both on purpose.
DEV_LOCK   := requirements-dev.lock
SERVE_LOCK := requirements.lock
# The CPU build of torch lies on disk on the project's machines (pip's find-links); uv does not
# read pip's configuration, so it is told where. Without the folder, torch comes from PyTorch's
# CPU index (PyPI's torch is a CUDA build of several GB). torch stays out of the locks for that.
TORCH_FROM := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,\
	--index-url https://download.pytorch.org/whl/cpu)
# uv installs in parallel (about 4x faster than pip here); progress.py reports while it is quiet.
# --compile-bytecode writes every package's .pyc at install: without them (PYTHONDONTWRITEBYTECODE
# set, as on some CI and container images) each command recompiles its imports from source,
# which doubled a `tunemem ... --url` command (0.9 s against 0.45 s here).
PROGRESS := $(PYTHON) tools/progress.py
UV_PIP := $(BIN)/uv pip install --python $(BIN)/python --compile-bytecode
INSTALL_TORCH := $(PROGRESS) --label "installing torch" -- $(UV_PIP) $(TORCH_FROM) torch==2.13.0
# A lock installs as it is: every pin checked against its hash, nothing resolved anew.
INSTALL_LOCK = $(PROGRESS) --label installing -- $(UV_PIP) --require-hashes --no-deps -r
# The project itself, editable, on top of the lock (uv does not compile editable packages).
INSTALL_OWN := $(UV_PIP) --no-deps -e . && $(BIN)/python -m compileall -q tunemem >/dev/null
# Extras beyond the locks' own sets are held to the locked versions.
UV_EXTRA := $(PROGRESS) --label installing -- $(UV_PIP) $(TORCH_FROM) -c $(DEV_LOCK)
LOCK_FLAGS := --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	--no-emit-package torch $(if $(wildcard /opt/wheels),--find-links /opt/wheels,\
	--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match)

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONUNBUFFERED := 1

.PHONY: install install-tuners install-triton run test lint lock bench-ingest bench-learning clean

$(BIN)/uv:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else \
		"make: the locks are for Python 3.11; $(PYTHON) is " + sys.version.split()[0] + \
		" (set PYTHON=/path/to/python3.11)")'
	@echo "make: creating $(VENV) with uv $(UV_VERSION), the installer"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# What `make run` needs: the service and its embedding model (no Triton, no test tools).
$(SERVE_STAMP): pyproject.toml $(SERVE_LOCK) | $(BIN)/uv
	@echo "make: installing the service's packages from $(SERVE_LOCK) (the first time about a minute)"
	$(INSTALL_TORCH)
	$(INSTALL_LOCK) $(SERVE_LOCK)
	$(INSTALL_OWN)
	touch $(SERVE_STAMP)

# Everything: the service, Triton for the kernels, Kernel Tuner, the test and lint tools.
$(STAMP): pyproject.toml $(DEV_LOCK) | $(BIN)/uv
	@echo "make: installing every package from $(DEV_LOCK) (service, Triton, test and lint tools)"
	$(INSTALL_TORCH)
	$(INSTALL_LOCK) $(DEV_LOCK)
	$(INSTALL_OWN)
	touch $(STAMP) $(SERVE_STAMP)

install: $(STAMP)

# What the Kernel Tuner page needs beside `make run`'s packages: Kernel Tuner itself.
install-tuners: $(SERVE_STAMP)
	@echo "make: installing Kernel Tuner for tunemem.tuners.MemoryStrategy"
	$(UV_EXTRA) -e '.[server,tuners]'

# What the Triton page needs beside `make run`'s packages: Triton (about 1 GB; torch is there).
install-triton: $(SERVE_STAMP)
	@echo "make: installing Triton for tunemem.tuners.autotune"
	$(UV_EXTRA) -e '.[server,kernels]'

# Refresh the locks on purpose (newest versions pyproject.toml allows); review and test the diff.
lock: | $(BIN)/uv
	$(BIN)/uv pip compile pyproject.toml $(LOCK_FLAGS) --upgrade -o $(DEV_LOCK) \
		--extra dev --extra server --extra kernels --extra tuners --extra bench
	$(BIN)/uv pip compile pyproject.toml $(LOCK_FLAGS) -c $(DEV_LOCK) -o $(SERVE_LOCK) --extra server

run: $(SERVE_STAMP)
	@echo "make: starting tunemem on http://$(HOST):$(PORT) (Ctrl-C stops it)"
	@$(PROGRESS) --label starting --until 'Uvicorn running|Application startup complete' -- \
		$(BIN)/tunemem serve --seed --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest -q

PACKAGES := tunemem

# ruff (with complexity and import order), formatting, mypy on every package (strict on
# retrieval and platforms), and the import-linter contracts that keep DESIGN section 2's arrows.
lint: $(STAMP)
	$(BIN)/ruff check $(PACKAGES) tests tools
	$(BIN)/ruff format --check $(PACKAGES) tests tools
	$(BIN)/mypy
	$(BIN)/lint-imports

bench-ingest: $(STAMP)
	$(BIN)/tunemem bench ingest

bench-learning: $(STAMP)
	$(BIN)/tunemem bench learning

clean:
	rm -rf $(VENV) .tunemem .pytest_cache
