# One Makefile drives everything: set-up, run, test, lint, benchmarks.
# Every target creates and reuses the project's own virtual environments.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The local CPU wheel of torch lives here on our machines; pip would otherwise fetch a CUDA build.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

.PHONY: venv run test test-fast lint format bench bench-index bench-retriever bench-redact bench-backend bench-lsp vllm-env clean help

help:
	@echo "make run    - index this repository on the embedded defaults and show a search"
	@echo "make test   - set up everything the tests need and run every test"
	@echo "make lint   - ruff and mypy"
	@echo "make bench  - benchmarks (downloads pinned sdists from PyPI)"

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(FIND_LINKS) torch==2.13.0
	$(PIP) install -q $(FIND_LINKS) -r requirements.lock
	$(PIP) install -q --no-deps -e .
	touch $@

# The real vLLM engine (CPU build) lives in its own environment: its pins differ from ours.
vllm-env: $(VLLM_STAMP)

$(VLLM_STAMP): requirements-vllm.txt
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q $(FIND_LINKS) torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install -q $(FIND_LINKS) -r requirements-vllm.txt
	# With these present, transformers' Qwen3-MoE import fails (torchvision::nms).
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec || true
	touch $@

run: venv
	$(VENV)/bin/codectx index .
	$(VENV)/bin/codectx search "where are settings layers resolved" . -k 5

test: venv vllm-env
	CODECTX_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) -m pytest -q tests

test-fast: venv
	$(PY) -m pytest -q -m "not slow" tests

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy codectx indexer retriever backend lsp

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: bench-index bench-retriever bench-redact bench-backend

bench-index: venv
	$(PY) bench/bench_index.py

bench-retriever: venv
	$(PY) bench/bench_retriever.py

bench-redact: venv
	$(PY) bench/bench_redact.py

bench-backend: venv vllm-env
	CODECTX_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) bench/bench_backend.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) .codectx build *.egg-info
