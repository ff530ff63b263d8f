# The README's two commands: `make demo` and `make test`. Both create .venv and install every distribution.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Every distribution in the repository, installed editable; a missing one is skipped.
DISTRIBUTIONS := $(dir $(wildcard domains/*/pyproject.toml knowledge/pyproject.toml baselines/pyproject.toml))
PYTEST_ARGS ?=

.PHONY: install demo test test-slow bench lint clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(wildcard domains/*/pyproject.toml knowledge/pyproject.toml baselines/pyproject.toml)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch's CPU build (a range in pyproject.toml; pinned here so pip never pulls a multi-GB CUDA build)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev,ray,hf]" $(foreach d,$(DISTRIBUTIONS),-e $(d))
	touch $@

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
