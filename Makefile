# aifabric.acceptance — the two entry points: `make acceptance` and `make test`.
# Both set up what they need by themselves (a .venv, the collection in .collections).

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
COLLECTIONS := $(CURDIR)/.collections
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
TARBALL := dist/aifabric-acceptance-$(VERSION).tar.gz
# ansible-test must run from a path ending in ansible_collections/aifabric/acceptance.
AT_BASE ?= /tmp/aifabric-ansible-test-$(shell id -u)
AT_DIR := $(AT_BASE)/ansible_collections/aifabric/acceptance
INVENTORY ?= inventories/localhost
PLAYBOOK ?= playbooks/acceptance.yml
REPORT_DIR ?= $(CURDIR)/reports
PYVER = $(shell $(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')

export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export AIFABRIC_REPORT_DIR := $(REPORT_DIR)
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: acceptance test venv collection stage unit sanity lint changelog build integration bench clean

acceptance: collection
	$(BIN)/ansible-playbook -i $(INVENTORY) $(PLAYBOOK) $(ARGS)
	@echo "Report: $$(readlink -f $(REPORT_DIR)/latest)/ (report.html, summary.md, results.json, junit.xml)"

test: venv unit sanity lint changelog build integration
	@echo "make test: all stages passed"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt requirements-test.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-test.txt
	touch $@

venv: $(VENV)/.installed

collection: venv
	rm -rf dist
	$(BIN)/ansible-galaxy collection build --force --output-path dist .
	$(BIN)/ansible-galaxy collection install --force -p $(COLLECTIONS) $(TARBALL)

build: collection
	@echo "collection build ok: $(TARBALL)"

# ansible-test only runs from a real (not symlinked: it uses getcwd) path ending in
# ansible_collections/aifabric/acceptance: stage a copy of the tree git would ship
# (tracked and untracked-not-ignored files) there, and run every test stage from it.
stage:
	rm -rf $(AT_DIR) && mkdir -p $(AT_DIR)
	git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C $(AT_DIR)

unit: venv stage
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python -m pytest -q -p no:cacheprovider tests/unit; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]

sanity: venv stage
	$(BIN)/python .ci/offline_pip_shim.py
	cd $(AT_DIR) && $(BIN)/ansible-test sanity --venv --python $(PYVER) --color no

lint: collection
	$(BIN)/ansible-lint --offline --profile production

changelog: venv
	$(BIN)/antsibull-changelog lint

integration: collection stage
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python -m pytest -q -p no:cacheprovider -rs tests/integration; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]

# Benchmarks (never part of `make test`): results go to bench/results/ and the console.
bench: collection stage
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/env_probe_parsers.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/fleet_report_scale.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/attribution_sim.py --sweep
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/nccl_overhead.py --stand-in
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/rdma_orchestration.py

clean:
	rm -rf $(VENV) $(COLLECTIONS) dist tests/output .pytest_cache
