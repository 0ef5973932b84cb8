# powercontext developer entry points. `make quickstart` and `make test` each work on a
# fresh machine by themselves: they create .venv, install what is missing, then run.
# quickstart installs only the base package (no extras, no Debian packages); test also
# installs the Debian packages that mysqlclient needs to build (as root; otherwise it
# prints the apt command and stops) and the dev and local extras, all under constraints.txt,
# and Debian's chromium for the dashboard's browser tests (as root; otherwise it prints the
# apt command and the run goes on: those tests then skip and say why).
#
#   make quickstart   the coding-agent scenario on real files of this repository
#   make dashboard    the quickstart's database (DASHBOARD_DB) served at http://127.0.0.1:8765/ui/
#   make test         the whole test suite (Hypothesis profile `ci` when CI=true)
#   make test-fast    the tests that need no server, no subprocess and no browser (~2 min)
#   make lint         ruff          make types   mypy          make check   all three
#   make bench        perf (quick, SQLite), LoCoMo retrieval quality, then the peer (quick, when
#                     .venv-peer exists); BENCH_PERF_ARGS, BENCH_LOCOMO_ARGS, BENCH_PEER_QUICK_ARGS
#   make bench-peer   the upstream powercontext 1.4.1 in .venv-peer beside ours; BENCH_PEER_ARGS
#
# Variables: PYTHON (interpreter that creates .venv, default python3.11), EXTRAS (the
# extras `make install`/test/lint/types/bench install, default dev,local: local is the
# real embedding model that a test uses), PYTEST_ARGS, HYPOTHESIS_PROFILE (default: ci
# when CI=true, else dev), FAST_MARKERS, FAST_WORKERS, DASHBOARD_DB, DASHBOARD_PORT.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DEB_PACKAGES := libmariadb-dev pkg-config
# the browser the dashboard's tests drive through Playwright (tests/browser; /usr/bin/chromium)
BROWSER_PACKAGES := chromium
APT_GET ?= apt-get
# Two installs share one .venv: the base package (what the quickstart imports) and the
# base plus EXTRAS (everything else). Each is redone only when the content of what it
# depends on changes: the stamp name carries a hash of pyproject.toml and constraints.txt
# (mtimes are ignored, so a fresh clone of an installed tree does not reinstall). The full
# install also writes the base stamp, so a quickstart after a test installs nothing, and a
# test after a quickstart installs only the extras.
EXTRAS ?= dev,local
SPEC_HASH := $(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
EXTRAS_HASH := $(shell echo '$(EXTRAS)' | sha256sum | cut -c1-8)
BASE_STAMP := $(VENV)/.installed-$(SPEC_HASH)-base
STAMP := $(VENV)/.installed-$(SPEC_HASH)-extras-$(EXTRAS_HASH)
ifeq ($(CI),true)
HYPOTHESIS_PROFILE ?= ci
else
HYPOTHESIS_PROFILE ?= dev
endif
PYTEST_ARGS ?=
SOURCES := core ports adapters plugins sql app entrypoints testing
# mypy sees the code under its installed names through a tree of links (the package-dir
# mapping puts powercontext/ in app/ and powercontext.core in core/).
TYPETREE ?= $(VENV)/typetree

.PHONY: help install install-base deb-packages browser-packages quickstart dashboard test test-fast lint types typetree check bench bench-peer clean

help:
	@sed -n '1,21p' Makefile | sed 's/^# \{0,1\}//'

install: $(STAMP)

install-base: $(BASE_STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# flock: two `make` runs in one tree never install into .venv at the same time. A stamp
# for another content hash is stale and removed; the other install's stamp for this hash
# stays.
$(BASE_STAMP): | $(BIN)/python
	@echo "Installing powercontext (base package, no extras) into $(VENV); the first run takes a minute ..."
	flock $(VENV)/.install-lock $(BIN)/python -m pip install --progress-bar on \
	  -c constraints.txt -e .
	@find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '.installed-$(SPEC_HASH)-*' -delete
	@touch $@

$(STAMP): | $(BIN)/python
	@$(MAKE) --no-print-directory deb-packages
	@echo "Installing powercontext with the extras $(EXTRAS) into $(VENV); the first run takes several minutes ..."
	flock $(VENV)/.install-lock $(BIN)/python -m pip install --progress-bar on \
	  -c constraints.txt -e '.[$(EXTRAS)]'
	@find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '.installed-$(SPEC_HASH)-*' -delete
	@touch $@ $(BASE_STAMP)

deb-packages:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -ne 0 ]; then \
	  echo "Missing Debian packages:$$missing (needed to build mysqlclient). Run:" >&2; \
	  echo "  sudo apt-get update && sudo apt-get install -y$$missing" >&2; \
	  exit 1; \
	fi; \
	echo "Installing Debian packages:$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	$(APT_GET) update -qq; \
	$(APT_GET) install -y -qq --no-install-recommends $$missing

# Like deb-packages, but a browser that cannot be installed never stops `make test`: the
# browser tests skip with the reason (under CI=true they fail instead).
browser-packages:
	@missing=""; \
	for p in $(BROWSER_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -ne 0 ]; then \
	  echo "Missing Debian packages:$$missing (the dashboard's browser tests skip without it). Run:" >&2; \
	  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends$$missing" >&2; \
	  exit 0; \
	fi; \
	echo "Installing Debian packages:$$missing (the dashboard's browser tests)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	{ $(APT_GET) update -qq && $(APT_GET) install -y -qq --no-install-recommends $$missing; } \
	  || echo "Could not install$$missing: the dashboard's browser tests will skip" >&2

quickstart: install-base
	$(BIN)/python -m powercontext.entrypoints.quickstart

# The dashboard on the quickstart's database: the quickstart writes DASHBOARD_DB once
# (delete the file to write it anew), then `powercontext serve` (no token: loopback only;
# the quickstart's `deterministic` Topic provider, so the flush button works) serves the
# API and the pages until Ctrl-C.
DASHBOARD_DB ?= $(VENV)/dashboard/quickstart.db
DASHBOARD_PORT ?= 8765
SERVER_STAMP := $(VENV)/.installed-$(SPEC_HASH)-server

$(SERVER_STAMP): | $(BIN)/python
	@echo "Installing powercontext with the server extra into $(VENV) ..."
	flock $(VENV)/.install-lock $(BIN)/python -m pip install --progress-bar on \
	  -c constraints.txt -e '.[server]'
	@find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '.installed-$(SPEC_HASH)-*' -delete
	@touch $@ $(BASE_STAMP)

dashboard: $(SERVER_STAMP)
	@if [ ! -f "$(DASHBOARD_DB)" ]; then \
	  mkdir -p "$$(dirname "$(DASHBOARD_DB)")"; \
	  $(BIN)/python -m powercontext.entrypoints.quickstart --db "$(DASHBOARD_DB)" \
	    || { rm -f "$(DASHBOARD_DB)" "$(DASHBOARD_DB)-wal" "$(DASHBOARD_DB)-shm"; exit 1; }; \
	fi
	@printf '[inference]\ngeneration_provider = "deterministic"\n' > "$(DASHBOARD_DB).toml"
	@echo "dashboard: http://127.0.0.1:$(DASHBOARD_PORT)/ui/ (database $(DASHBOARD_DB); Ctrl-C stops)"
	$(BIN)/powercontext --db "$(DASHBOARD_DB)" serve --config "$(DASHBOARD_DB).toml" \
	  --host 127.0.0.1 --port $(DASHBOARD_PORT)

test: install browser-packages
	@rc=0; HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(BIN)/pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ -n "$${PYTEST_EXIT_FILE:-}" ]; then echo "$$rc" > "$$PYTEST_EXIT_FILE"; fi; \
	exit $$rc

# The fast lane: every test that starts no process, listens on no socket and is not slow
# (the markers are enforced: tests/support/process_markers.py; docs/testing.md). It
# installs like `make test` but needs no Debian browser and starts no seekdb. Its tests
# share no process, socket or fixed path, so pytest-xdist runs them on FAST_WORKERS
# processes (default 2, one per core; FAST_WORKERS=0 runs them in this process).
FAST_MARKERS ?= not (oceanbase or browser or subprocess or server or slow)
FAST_WORKERS ?= 2
test-fast: install
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(BIN)/pytest -m "$(FAST_MARKERS)" -n $(FAST_WORKERS) -q $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check $(SOURCES) tests bench

typetree:
	@rm -rf $(TYPETREE) && mkdir -p $(TYPETREE)/powercontext
	@for f in app/*; do \
	  case "$${f##*/}" in __pycache__) ;; *) ln -s "$(CURDIR)/$$f" $(TYPETREE)/powercontext/;; esac; \
	done
	@for d in core ports adapters plugins sql entrypoints testing; do ln -s "$(CURDIR)/$$d" $(TYPETREE)/powercontext/$$d; done

types: install typetree
	MYPYPATH=$(TYPETREE) $(BIN)/mypy --cache-dir $(TYPETREE).mypy_cache -p powercontext

check: lint types test

BENCH_PERF_ARGS ?= --profile quick --backend sqlite
BENCH_LOCOMO_ARGS ?=
BENCH_PEER_QUICK_ARGS ?= --quick
# The peer step of `make bench` needs .venv-peer (`make bench-peer` creates it); without
# it `bench peer` measures ours alone and says why the peer did not run.
bench: install
	$(BIN)/python -m bench perf $(BENCH_PERF_ARGS)
	$(BIN)/python -m bench locomo $(BENCH_LOCOMO_ARGS)
	$(BIN)/python -m bench peer $(BENCH_PEER_QUICK_ARGS)

# The specs' reference implementation from the package index, in its own virtual
# environment: it has our import name (`powercontext`), so it runs only in its own
# interpreter (bench/peer/driver.py), never in .venv and never imported by our code.
PEER_VENV := .venv-peer
PEER_SPEC ?= powercontext[builtin]==1.4.1
PEER_STAMP := $(PEER_VENV)/.installed-$(shell echo '$(PEER_SPEC)' | sha256sum | cut -c1-16)
BENCH_PEER_ARGS ?=

$(PEER_STAMP):
	@echo "Installing $(PEER_SPEC) into $(PEER_VENV) (the peer; a minute or two) ..."
	@test -x $(PEER_VENV)/bin/python || $(PYTHON) -m venv $(PEER_VENV)
	flock $(PEER_VENV)/.install-lock $(PEER_VENV)/bin/python -m pip install --progress-bar off \
	  '$(PEER_SPEC)'
	@find $(PEER_VENV) -maxdepth 1 -name '.installed-*' -delete
	@touch $@

bench-peer: install $(PEER_STAMP)
	$(BIN)/python -m bench peer --peer-python $(PEER_VENV)/bin/python $(BENCH_PEER_ARGS)

clean:
	rm -rf $(VENV) $(PEER_VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build *.egg-info
