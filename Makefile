# The two commands of the README: `make demo` and `make test`.
# Each installs what is missing first (scripts/install-deps.sh, idempotent).
SHELL := /bin/bash
PY := .venv/bin/python
PROTOLAB := .venv/bin/protolab

.PHONY: deps demo test test-unit test-lab bench clean

deps:
	@bash scripts/install-deps.sh

demo: deps
	$(PROTOLAB) run --builtin demo

test: deps
	$(PY) -m pytest -q -ra

test-unit: deps
	$(PY) -m pytest -q tests/unit

bench: deps
	$(PY) benchmarks/report_render.py

clean:
	rm -rf .venv .deps results .pytest_cache
