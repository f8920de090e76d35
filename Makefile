# aifabric.acceptance — the two entry points: `make acceptance` and `make test`.
# Both set up what they need by themselves (a .venv, the collection in .collections), and two of them
# may run at once from one checkout: installs happen under a lock, the collection is installed once per
# content (.collections/<hash>, renamed into place whole), and every `make` stages its own test copy.

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
# Every `make` that tests gets one private directory of its own (RUN_TMP: mktemp -d, 0700, a random name nobody can
# take first - never a fixed name in the shared temporary directory), removed at the end of `make test`: the staged
# copy of the collection (ansible-test must run from a path ending in ansible_collections/aifabric/acceptance; pass
# AT_BASE=DIR to choose it) and the SSH test hosts' Ansible temporary and async job directories live in it.
UID := $(shell id -u)
TESTING_GOALS := test unit sanity integration molecule bench stage
ifeq ($(origin AT_BASE), undefined)
NEEDS_RUN_TMP := $(filter $(TESTING_GOALS),$(MAKECMDGOALS))
else
NEEDS_RUN_TMP := $(filter test,$(MAKECMDGOALS))
endif
ifneq ($(NEEDS_RUN_TMP),)
RUN_TMP := $(shell mktemp -d -t aifabric-make-$(UID)-$$PPID-XXXXXXXXXX)
ifeq ($(RUN_TMP),)
$(error cannot make a private temporary directory (mktemp -d))
endif
endif
ifeq ($(origin AT_BASE), undefined)
AT_BASE := $(RUN_TMP)/at
endif
# `make test` gives both to its stages' makes on their command line (.ci/stages.py), which would export them to every
# recipe: a test that runs make itself (test_make.py: `make stage`) then staged into, and removed, this run's copy.
unexport RUN_TMP AT_BASE
AT_DIR := $(AT_BASE)/ansible_collections/aifabric/acceptance
INVENTORY ?= inventories/localhost
PLAYBOOK ?= playbooks/acceptance.yml
REPORT_DIR ?= $(CURDIR)/reports
PYVER = $(shell $(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# the collection of this checkout, installed once per content (prints its ANSIBLE_COLLECTIONS_PATH)
COLLECTION = $$($(BIN)/python .ci/collection.py $(BIN))

export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export AIFABRIC_REPORTS_ROOT := $(REPORT_DIR)
export PYTHONDONTWRITEBYTECODE := 1
export INVENTORY

.PHONY: acceptance test home-begin reference venv run-venv collection stage unit sanity lint changelog build integration molecule bench clean

# INVENTORY: any path (absolute, or relative to this checkout; spaces allowed) or a comma list of hosts. The line
# "Report:" names the run directory this run wrote (reports/latest when it moved), and nothing when it wrote none (a
# check-mode run, playbooks/report.yml, which says where it wrote, or a run that failed before its report).
acceptance: run-venv
	@case "$$INVENTORY" in *,*) ;; *) [ -e "$$INVENTORY" ] || { \
	  echo "make acceptance: no inventory at '$$INVENTORY'. Give the path of yours (make acceptance INVENTORY=path/to/hosts.yml;" \
	    "a relative path is from this checkout), or hosts as a list: make acceptance INVENTORY=node1,node2, ARGS='-e acceptance_hosts=all'." \
	    "This machine alone: make acceptance INVENTORY=inventories/localhost. Inventories here: $$(ls -d inventories/*/ 2>/dev/null | tr '\n' ' ')" \
	    "(inventories/example-fleet is a template: copy it, outside this checkout, and put your hosts' addresses in)." >&2; \
	  exit 2; } ;; esac
	@before="$$(readlink -f "$$AIFABRIC_REPORTS_ROOT/latest" 2>/dev/null)"; \
	  cols=$(COLLECTION) && ANSIBLE_COLLECTIONS_PATH=$$cols $(BIN)/ansible-playbook -i "$$INVENTORY" $(PLAYBOOK) $(ARGS); \
	  rc=$$?; after="$$(readlink -f "$$AIFABRIC_REPORTS_ROOT/latest" 2>/dev/null)"; \
	  if [ -n "$$after" ] && [ "$$after" != "$$before" ]; then \
	    echo "Report: $$after/ (report.html, summary.md, results.json, junit.xml)"; \
	  else case " $(ARGS) " in *" -C "*|*" --check "*) echo "Check mode: no report written" ;; esac; fi; exit $$rc

# `make test` runs with a HOME of its own in the checkout (.home/): ansible's ~/.ansible (its local temp, the
# collection molecule installs there), pip's, ansible-lint's and Chromium's caches stay out of the user's home; git
# still reads the user's ~/.gitconfig (safe.directory), and the SSH test hosts' Ansible temp and async job files
# (the RDMA runners) are in this make's private RUN_TMP. At the
# end it fails when anything was written to the real home all the same (.ci/home_check.py).
REAL_HOME := $(HOME)
TEST_HOME := $(CURDIR)/.home
test: export HOME := $(TEST_HOME)
test: export GIT_CONFIG_GLOBAL := $(if $(GIT_CONFIG_GLOBAL),$(GIT_CONFIG_GLOBAL),$(REAL_HOME)/.gitconfig)
test: export ANSIBLE_REMOTE_TEMP := $(RUN_TMP)/remote
test: export ANSIBLE_ASYNC_DIR := $(RUN_TMP)/async
# The stages run through .ci/stages.py, which prints each one's wall and CPU time at the end. TEST_STEPS: one word a
# step, run in order; "," runs lanes of a step side by side, "+" stages of a lane one after the other (the first
# lane's output streams, the others' is printed whole as each stage ends and kept in tests/output/stages/). The
# integration stage mostly waits, the others mostly compute: they run beside it (docs/dev/test-times.md; the unit test
# that once failed there waits for an event, its limit far above a loaded machine's). Three lanes: sanity, lint and
# molecule (one process at a time each) start beside integration and unit instead of after unit, where they ran on
# one CPU for minutes while the other was idle; and a sanity finding no longer keeps the unit tests from running.
# One after the other:
# TEST_STEPS="venv stage unit sanity lint changelog build integration molecule".
TEST_STEPS ?= venv stage integration,unit,sanity+lint+changelog+build+molecule
TEST_STAGE_TIMEOUT ?= 3600
test: home-begin
	@$(PYTHON) .ci/stages.py --timeout $(TEST_STAGE_TIMEOUT) $(TEST_STEPS) -- \
	  $(MAKE) --no-print-directory RUN_TMP=$(RUN_TMP) AT_BASE=$(AT_BASE); \
	  rc=$$?; rm -rf $(RUN_TMP); [ $$rc -eq 0 ]
	@$(BIN)/python .ci/home_check.py $(REAL_HOME) $(TEST_HOME)/.begin $(CURDIR)
	@echo "make test: all stages passed"

home-begin:
	@mkdir -p $(TEST_HOME) && touch $(TEST_HOME)/.begin

$(BIN)/python:
	mkdir -p $(VENV) && flock $(VENV)/.lock sh -c '[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)'

# what `make acceptance` needs (requirements.txt), and what `make test` needs on top of it
$(VENV)/.installed-run: requirements.txt | $(BIN)/python
	flock $(VENV)/.lock $(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

# one pip call for both files (a fresh clone resolved requirements.txt twice); it marks requirements.txt installed too.
# Not --no-compile: make exports PYTHONDONTWRITEBYTECODE, so every ansible process would compile ansible-core's
# sources again (1.37 s against 0.44 s of CPU to import ansible-playbook's modules: docs/dev/test-times.md).
$(VENV)/.installed-test: requirements.txt requirements-test.txt | $(BIN)/python
	flock $(VENV)/.lock $(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-test.txt
	touch $(VENV)/.installed-run $@

run-venv: $(VENV)/.installed-run

venv: $(VENV)/.installed-test

collection: run-venv
	@echo "collection installed in $(COLLECTION)"

build: collection
	@echo "collection build ok: $$(ls $(COLLECTION)/*.tar.gz)"

# ansible-test only runs from a real (not symlinked: it uses getcwd) path ending in
# ansible_collections/aifabric/acceptance: stage a copy of the tree git would ship
# (tracked and untracked-not-ignored files) there, and run every test stage from it.
# The private directories of `make` runs that have ended (ours, by the make's pid in their name) are removed first.
# The private copy's base is made 0700 by this make, or reused only when it is a real directory of ours that nobody
# else can write:
# Python runs with it on PYTHONPATH, so a directory another user made first (a planted sitecustomize.py) is refused.
stage:
	@for d in "$${TMPDIR:-/tmp}"/aifabric-make-$(UID)-*; do p=$${d##*/aifabric-make-$(UID)-}; p=$${p%%-*}; \
	  [ -d "$$d" ] && [ ! -L "$$d" ] && [ "$$(stat -c %u "$$d")" = "$(UID)" ] && [ "$$d" != "$(RUN_TMP)" ] && \
	  ! kill -0 "$$p" 2>/dev/null && rm -rf "$$d"; done; true
	@mkdir -m 0700 $(AT_BASE) 2>/dev/null || { [ -d $(AT_BASE) ] && [ ! -L $(AT_BASE) ] && \
	  [ "$$(stat -c %u $(AT_BASE))" = "$(UID)" ] && [ -z "$$(find $(AT_BASE) -maxdepth 0 -perm /022)" ]; } || { \
	  echo "make: refusing $(AT_BASE): not a directory of uid $(UID) that only it can write (another user may" \
	       "have made it, and code runs from it). Remove it or pass AT_BASE=<a new directory>." >&2; exit 1; }
	rm -rf $(AT_DIR) && mkdir -p $(AT_DIR)
	git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C $(AT_DIR)

# The unit tests run in TEST_WORKERS processes (pytest-xdist): 5:53 -> 3:40 on 2 CPUs. The integration tests run in
# INTEGRATION_WORKERS: most wait on timeouts, hosts and playbooks (10 of the longest: 546 s of wall, 107 s of CPU), and
# each runs on throwaway hosts, directories and subnets of its own (tests/integration/netns.py, up to 8 workers), so
# four at a time overlap their waits (docs/dev/test-times.md). TEST_WORKERS=0: one process for both.
TEST_WORKERS ?= 2
INTEGRATION_WORKERS ?= $(if $(filter 0,$(TEST_WORKERS)),0,4)
unit: venv stage
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python -m pytest -q -p no:cacheprovider --durations=30 -n $(TEST_WORKERS) --dist load \
	  --junitxml=tests/output/unit.xml tests/unit
	$(BIN)/python .ci/suite_ran.py unit $(AT_DIR)/tests/output/unit.xml

# ansible-test's own "changelog" test is the `changelog` stage's antsibull-changelog lint (rstcheck included) in a
# virtual environment of its own: skipped here, one environment fewer to build on a fresh clone.
sanity: venv stage
	$(BIN)/python .ci/offline_pip_shim.py
	cd $(AT_DIR) && $(BIN)/ansible-test sanity --venv --python $(PYVER) --color no --skip-test changelog

# ansible-lint's production profile, and the function bound of plugins/ (complexity 25, 100 lines: .ci/complexity.py)
lint: venv
	ANSIBLE_COLLECTIONS_PATH=$(COLLECTION) $(BIN)/ansible-lint --offline --profile production
	$(BIN)/python .ci/complexity.py plugins
	cols=$(COLLECTION) && ANSIBLE_COLLECTIONS_PATH=$$cols $(BIN)/python .ci/reference.py $(BIN)/ansible-doc docs/reference --check

# the reference (docs/reference/: every module, filter, callback and role) from the docs strings; `make test` fails
# when it is out of date
reference: run-venv
	cols=$(COLLECTION) && ANSIBLE_COLLECTIONS_PATH=$$cols $(BIN)/python .ci/reference.py $(BIN)/ansible-doc docs/reference

changelog: venv
	$(BIN)/antsibull-changelog lint

integration: venv stage
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python -m pytest -q -p no:cacheprovider -rs --durations=20 \
	  -n $(INTEGRATION_WORKERS) --dist load \
	  --junitxml=tests/output/integration.xml tests/integration; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]
	$(BIN)/python .ci/suite_ran.py integration $(AT_DIR)/tests/output/integration.xml

# molecule scenarios of every role that has a molecule/ directory (default driver, no Docker: rdma_device_plugin runs
# against the fake Kubernetes API server it starts itself, perftest and nccl_tests on localhost), from the staged copy
molecule: venv stage
	set -e; for role in $(AT_DIR)/roles/*/molecule; do role=$${role%/molecule}; echo "molecule: $${role##*/}"; \
	  (cd $$role && ANSIBLE_COLLECTIONS_PATH=$(AT_BASE) PYTHONPATH=$(AT_BASE) PATH=$(BIN):$$PATH $(BIN)/molecule test); done

# Benchmarks (never part of `make test`): results go to bench/results/ and the console.
bench: venv stage
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/env_probe_parsers.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/parse_scale.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/perftest_long_line.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/fleet_report_scale.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/run_stream_scale.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/attribution_sim.py --sweep
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/nccl_overhead.py --stand-in
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/child_exit_latency.py
	cd $(AT_DIR) && PYTHONPATH=$(AT_BASE) $(BIN)/python bench/rdma_orchestration.py

clean:
	rm -rf $(VENV) .collections dist tests/output .pytest_cache .home
