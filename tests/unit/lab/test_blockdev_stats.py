"""protolab-blockdev's account of each request for user.protolab.stats, compiled from the daemon's own source with a
small driver: when the model counts a request as arrived (issued) and as started, so that its queue is the wait
for a free server and its service starts there — for the model, a write-back acknowledgement, a cache hit and a
calibrating request."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from blockdev_driver import build_driver

# The daemon's file with its main renamed; the driver sets the model from its arguments, then for each request
# "ARRIVAL_NS BYTES HIT IS_WRITE" prints "DUE ISSUED START".
DRIVER = r"""
#define main daemon_main
#include SOURCE
#undef main
int main(int argc, char **argv)
{
	dev.service_ns = atof(argv[1]);
	dev.parallelism = atoi(argv[2]);
	dev.overhead_ns = atof(argv[3]);
	dev.write_ns = atof(argv[4]);
	dev.write_overhead_ns = atof(argv[5]);
	dev.calibrate_ns = atof(argv[6]);
	dev.free_at = calloc(MAX_SERVERS, sizeof *dev.free_at);
	for (int i = 7; i + 3 < argc; i += 4) {
		uint64_t issued, start;
		uint64_t due = completion(strtoull(argv[i], 0, 10), strtoull(argv[i + 1], 0, 10),
			atoi(argv[i + 2]), atoi(argv[i + 3]), &issued, &start);
		printf("%llu %llu %llu\n", (unsigned long long)due, (unsigned long long)issued, (unsigned long long)start);
	}
	return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    return build_driver(tmp_path_factory, "stats", DRIVER)


def _requests(driver: Path, model: tuple, *requests: tuple[int, int, int, int]) -> list[tuple[int, int, int]]:
    args = [str(v) for v in model] + [str(v) for r in requests for v in r]
    run = subprocess.run([str(driver), *args], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    return [tuple(int(w) for w in line.split()) for line in run.stdout.splitlines()]  # type: ignore[misc]


# (service, parallelism, overhead, write-back time, its overhead, calibrate: -1 the model), all ns
MODEL = (500_000, 1, 50_000, 0, 0, -1)


def test_a_request_arrives_overhead_early_and_queues_only_for_a_busy_server(driver):
    first, second, third = _requests(driver, MODEL, (1_000_000, 4096, 0, 0), (1_000_100, 4096, 0, 0),
                                     (3_000_000, 4096, 0, 0))
    assert first == (1_450_000, 950_000, 950_000)  # issued 50 µs early, served at once: queue 0, service 500 µs
    assert second == (1_950_000, 950_100, 1_450_000)  # the one server is busy: 499.9 µs queued, then served
    assert third == (3_450_000, 2_950_000, 2_950_000)  # the server free again: no queue


def test_beyond_the_parallelism_requests_queue_as_the_arithmetic_says(driver):
    """8 requests at once on 2 servers of 500 µs: they start in pairs, each pair 500 µs after the last, so the mean
    queue is (0 + 500 + 1000 + 1500) / 4 = 750 µs = (N / P - 1) × S / 2 and the last answer comes at 4 × S."""
    got = _requests(driver, (500_000, 2, 0, 0, 0, -1), *[(1_000_000, 4096, 0, 0)] * 8)
    queues = [start - issued for _, issued, start in got]
    assert sorted(queues) == [0, 0, 500_000, 500_000, 1_000_000, 1_000_000, 1_500_000, 1_500_000]
    assert sum(queues) / 8 == (8 / 2 - 1) * 500_000 / 2 and max(due for due, _, _ in got) == 1_000_000 + 4 * 500_000


def test_write_back_acknowledgements_hits_and_calibration_hold_no_server_and_never_queue(driver):
    wb = (500_000, 1, 50_000, 200_000, 20_000, -1)  # a write-back cache acknowledging in 200 µs
    read, write = _requests(driver, wb, (1_000_000, 4096, 0, 0), (1_000_100, 4096, 0, 1))
    assert read == (1_450_000, 950_000, 950_000)
    assert write == (1_180_100, 980_100, 980_100)  # issued its own overhead early, answered 200 µs later: no queue
    hit, after = _requests(driver, MODEL, (1_000_000, 4096, 1, 0), (1_000_100, 4096, 0, 0))
    assert hit == (1_000_000, 1_000_000, 1_000_000)  # a cache hit: answered as it arrives
    assert after == (1_450_100, 950_100, 950_100)  # and held no server
    calibrating = _requests(driver, (500_000, 1, 50_000, 0, 0, 300_000), (1_000_000, 4096, 0, 0),
                            (1_000_100, 4096, 0, 0))
    assert calibrating == [(1_300_000, 1_000_000, 1_000_000), (1_300_100, 1_000_100, 1_000_100)]
