# The two commands of the README: `make demo` and `make test`.
# Each installs what is missing first (scripts/install-deps.sh, idempotent).
SHELL := /bin/bash
PY := .venv/bin/python
PROTOLAB := .venv/bin/protolab

.PHONY: deps test-deps demo lint test test-unit bench clean

deps:
	@bash scripts/install-deps.sh

test-deps:
	@bash scripts/install-deps.sh test

# The built-in protocol study on the embedded lab (root); `protolab run --builtin demo` is the local one.
demo: deps
	$(PROTOLAB) run --builtin lab-demo

lint: test-deps
	.venv/bin/ruff check src tests benchmarks

test: lint
	$(PY) -m pytest -q -ra --durations=15

test-unit: test-deps
	$(PY) -m pytest -q tests/unit

bench: deps
	$(PY) benchmarks/report_render.py

clean:
	rm -rf .venv .deps results .pytest_cache
