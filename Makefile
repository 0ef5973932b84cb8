# powercontext developer entry points. `make quickstart` and `make test` each work on a
# fresh machine by themselves: they create .venv, install the Debian packages that
# mysqlclient needs to build (as root; otherwise print the apt command and stop), install
# the project with its dev extra under constraints.txt, then run.
#
#   make quickstart   the coding-agent scenario on real files of this repository
#   make test         the whole test suite (Hypothesis profile `ci` when CI=true)
#   make lint         ruff          make types   mypy          make check   all three
#   make bench        perf (quick, SQLite) then LoCoMo retrieval quality; BENCH_PERF_ARGS, BENCH_LOCOMO_ARGS
#
# Variables: PYTHON (interpreter that creates .venv, default python3.11), EXTRAS (the
# extras installed, default dev,local: local is the real embedding model that a test uses),
# PYTEST_ARGS, HYPOTHESIS_PROFILE (default: ci when CI=true, else dev).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DEB_PACKAGES := libmariadb-dev pkg-config
APT_GET ?= apt-get
# The install is redone only when the content of what it depends on changes (the stamp
# name carries a hash of it; mtimes are ignored, so a fresh clone of an installed tree
# does not reinstall).
EXTRAS ?= dev,local
INSTALL_HASH := $(shell { cat pyproject.toml constraints.txt; echo '$(EXTRAS)'; } | sha256sum | cut -c1-16)
STAMP := $(VENV)/.installed-$(INSTALL_HASH)
ifeq ($(CI),true)
HYPOTHESIS_PROFILE ?= ci
else
HYPOTHESIS_PROFILE ?= dev
endif
PYTEST_ARGS ?=
SOURCES := core ports adapters plugins sql app
# mypy sees the code under its installed names through a tree of links (the package-dir
# mapping puts powercontext/ in app/ and powercontext.core in core/).
TYPETREE ?= $(VENV)/typetree

.PHONY: help install deb-packages quickstart test lint types typetree check bench clean

help:
	@sed -n '1,14p' Makefile | sed 's/^# \{0,1\}//'

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): | $(BIN)/python
	@$(MAKE) --no-print-directory deb-packages
	@# flock: two `make` runs in one tree never install into .venv at the same time.
	flock $(VENV)/.install-lock $(BIN)/python -m pip install --quiet -c constraints.txt \
	  -e '.[$(EXTRAS)]'
	@rm -f $(VENV)/.installed-*
	@touch $@

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

quickstart: install
	$(BIN)/python -m powercontext.quickstart

test: install
	@rc=0; HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(BIN)/pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ -n "$${PYTEST_EXIT_FILE:-}" ]; then echo "$$rc" > "$$PYTEST_EXIT_FILE"; fi; \
	exit $$rc

lint: install
	$(BIN)/ruff check $(SOURCES) tests bench

typetree:
	@rm -rf $(TYPETREE) && mkdir -p $(TYPETREE)/powercontext
	@for f in app/*; do \
	  case "$${f##*/}" in __pycache__) ;; *) ln -s "$(CURDIR)/$$f" $(TYPETREE)/powercontext/;; esac; \
	done
	@for d in core ports adapters plugins sql; do ln -s "$(CURDIR)/$$d" $(TYPETREE)/powercontext/$$d; done

types: install typetree
	MYPYPATH=$(TYPETREE) $(BIN)/mypy --cache-dir $(TYPETREE).mypy_cache -p powercontext

check: lint types test

BENCH_PERF_ARGS ?= --profile quick --backend sqlite
BENCH_LOCOMO_ARGS ?=
bench: install
	$(BIN)/python -m bench perf $(BENCH_PERF_ARGS)
	$(BIN)/python -m bench locomo $(BENCH_LOCOMO_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build *.egg-info
