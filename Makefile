# The README's two commands: `make demo` and `make test`. Both create .venv and install every distribution.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Which torch `make install` puts in the venv. The default asks pip for this exact version from the indexes
# pip is configured with: on a stock Linux machine PyPI serves the CUDA build (several GB). For a CPU-only
# build, point pip at PyTorch's CPU index:
#   make install TORCH_INDEX=https://download.pytorch.org/whl/cpu
# or choose another version/build with TORCH='torch==2.6.0' (pyproject.toml itself only asks for a range).
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
# Every distribution in the repository, installed editable; a missing one is skipped.
DISTRIBUTIONS := $(dir $(wildcard domains/*/pyproject.toml knowledge/pyproject.toml baselines/pyproject.toml))
PYTEST_ARGS ?=

.PHONY: install services demo test test-slow bench lint clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(wildcard domains/*/pyproject.toml knowledge/pyproject.toml baselines/pyproject.toml)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -e ".[dev,ray,hf,serve,bench]" $(foreach d,$(DISTRIBUTIONS),-e $(d))
	touch $@

# What the full test suite uses beyond Python: a Docker daemon with the sandbox image, and PostgreSQL's
# binaries. Needs root (apt-get, dockerd); without it, says what to run instead. Tests that need a missing
# service skip, and the end of `make test` says which and how to enable them.
services: install
	bash .ci/services.sh

demo: install
	$(VENV)/bin/agentgym demo

test: install
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

test-slow: install
	$(PY) -m pytest -m "slow" $(PYTEST_ARGS)

bench: install
	$(PY) bench/run_all.py

lint: install
	$(VENV)/bin/ruff check agentgym
	$(VENV)/bin/mypy --strict agentgym --ignore-missing-imports

clean:
	rm -rf $(VENV) .pytest_cache
