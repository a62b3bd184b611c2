# memoria — one command to run the main job, one to run the tests.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
PIP   := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
LOCK  := requirements.lock

.PHONY: install lock lint up down status test test-fast test-debezium demo bench bench-ingest bench-memory bench-responder bench-llm-cost bench-scale eval train train-contradiction eval-memory eval-recall eval-answers schemas clean

install: $(STAMP)
$(STAMP): pyproject.toml $(LOCK)
	@test -x $(PY) || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# CPU torch first (pip here resolves torch==2.13.0 to the CPU wheel on disk), then the project;
	# every version comes from the lock file.
	$(PIP) install -q -c $(LOCK) torch==2.13.0
	$(PIP) install -q -c $(LOCK) -e '.[stack,dev,debezium]'
	@touch $(STAMP)

# Re-pin the lock file to the venv's exact versions (after changing a dependency in pyproject.toml and
# installing it): its comment header is kept; the project itself and torch's local build label are left out.
lock:
	{ grep '^#' $(LOCK); $(PIP) freeze --exclude-editable | sed -E 's/^([A-Za-z0-9_.-]+==[^+]+)\+.*$$/\1/'; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)

up: install
	$(PY) infra/localstack.py up

down:
	@if [ -x $(PY) ]; then $(PY) infra/localstack.py down; fi

status: install
	$(PY) infra/localstack.py status

test: install
	bash infra/install_java.sh
	$(PY) infra/localstack.py up --no-worker
	$(PY) -m pytest -q

# Static checks ([tool.ruff] in pyproject.toml); .ci/run runs them too.
lint: install
	$(VENV)/bin/ruff check .

# The unit tier: every test that needs no service (no stack started), in well under a minute.
test-fast: install
	$(PY) -m pytest -q -m "not services"

test-debezium: install
	bash infra/install_java.sh
	$(PY) infra/localstack.py up --no-worker
	$(PY) -m pytest -q -m debezium

schemas: install
	$(PY) -m schemas.export

PROVIDER ?= rules
# CORPUS: folders to score instead of examples/dev and examples/heldout (space-separated), e.g.
# `make eval CORPUS=examples/dev PROVIDER=openai` keeps a paid endpoint off the held-out half.
CORPUS ?=

# Every quality figure on examples/dev and examples/heldout, one table (PROVIDER=openai: the chat endpoint).
eval: install
	$(PY) -m streams.evaluation --provider $(PROVIDER) $(foreach c,$(CORPUS),--corpus $(c))

# Reproducible training from examples/dev only (artefacts in streams/learn/models/, versioned).
# The learnt fact extractor, the contradiction judge, the prompts' labelled examples, the intent classifier and recall's re-weighting.
train: install
	$(PY) -m streams.learn.train_extractor
	$(PY) -m streams.learn.train_contradiction
	$(PY) -m streams.learn.fewshot
	$(PY) -m streams.respond.train_intent
	$(PY) -m streams.respond.train_recall

train-contradiction: install
	$(PY) -m streams.learn.train_contradiction


eval-memory: install
	$(PY) -m streams.learn.evaluate

eval-recall: install
	$(PY) -m streams.respond.evaluate_recall

eval-answers: install
	$(PY) -m streams.respond.evaluate_answers

bench: bench-ingest bench-memory bench-responder

bench-ingest: install
	$(PY) infra/localstack.py up --no-worker
	$(PY) -m benchmarks.ingest

bench-llm-cost: install
	$(PY) -m benchmarks.llm_cost

bench-memory: install
	$(PY) infra/localstack.py up --no-worker
	$(PY) -m benchmarks.memory

bench-responder: install
	$(PY) infra/localstack.py up --no-worker
	$(PY) -m benchmarks.responder

bench-scale: install
	$(PY) infra/localstack.py up --no-worker
	$(PY) -m benchmarks.scale

demo: install
	$(PY) infra/localstack.py up
	$(VENV)/bin/memoria demo; rc=$$?; $(PY) infra/localstack.py down; exit $$rc

clean:
	@if [ -x $(PY) ]; then $(PY) infra/localstack.py clean; else rm -rf .stack; fi
