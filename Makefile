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

# Two parts. (1) The unit and end-to-end tests on four workers (pytest-xdist, one file per worker at a time: most
# of their time is fio's windows and subprocesses, not CPU), and beside them, on two more workers, the lab tests that
# assert on no timing (tests/lab/conftest.py's BESIDE: what was made, run, recorded and torn down), each worker one
# test at a time: windows last as long as they are asked whatever else runs. The unit and end-to-end tests' output
# follows the lab tests'. (2) Then the lab tests that measure, one at a time, with nothing else on the machine's two
# cores. Every part runs; any failing fails.
test: lint
	@log=$$(mktemp -d); $(PY) -m pytest -q -ra --durations=20 -n 4 --dist loadfile tests/unit tests/e2e \
	  > $$log/unit.txt 2>&1 & u=$$!; \
	$(PY) -m pytest -q -ra --durations=30 -n 2 --dist load -m lab_beside tests/lab; a=$$?; \
	wait $$u; b=$$?; cat $$log/unit.txt; rm -rf $$log; \
	$(PY) -m pytest -q -ra --durations=30 -m "not lab_beside" tests/lab; c=$$?; \
	test $$a = 0 && test $$b = 0 && test $$c = 0

test-unit: test-deps
	$(PY) -m pytest -q tests/unit

bench: deps
	$(PY) benchmarks/report_render.py

clean:
	rm -rf .venv .deps results .pytest_cache
