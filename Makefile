# The two commands of the README: `make demo` and `make test`.
# Each installs what is missing first (scripts/install-deps.sh, idempotent); the demo boots no guest, so it leaves
# the guest image to the first study that needs one (protolab builds it then), and `make test` builds and tests it.
SHELL := /bin/bash
PY := .venv/bin/python
PROTOLAB := .venv/bin/protolab

.PHONY: deps demo-deps test-deps demo lint test test-unit bench clean

deps:
	@bash scripts/install-deps.sh

demo-deps:
	@bash scripts/install-deps.sh demo

test-deps:
	@bash scripts/install-deps.sh test

# The built-in protocol study on the embedded lab (root); `protolab run --builtin demo` is the local one.
demo: demo-deps
	$(PROTOLAB) run --builtin lab-demo

lint: test-deps
	.venv/bin/ruff check src tests benchmarks

# The unit and end-to-end tests on four workers (pytest-xdist, one file per worker at a time: most of their time is
# fio's windows and subprocesses, not CPU — 333 s on four against 417 s on two, back to back, 2026-12-07); then the
# lab's tests one at a time (they measure, and share the machine's two cores with nothing else). Both run; either
# failing fails.
test: lint
	@$(PY) -m pytest -q -ra --durations=10 -n 4 --dist loadfile tests/unit tests/e2e; a=$$?; \
	$(PY) -m pytest -q -ra --durations=15 tests/lab; b=$$?; \
	test $$a = 0 && test $$b = 0

test-unit: test-deps
	$(PY) -m pytest -q tests/unit

bench: deps
	$(PY) benchmarks/report_render.py

clean:
	rm -rf .venv .deps results .pytest_cache
