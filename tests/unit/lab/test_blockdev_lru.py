"""protolab-blockdev's LRU read cache, compiled from the daemon's own source with a small driver: every access
agrees with a plain reference LRU, a uniform random stream over R > C blocks hits C/R, and eviction churn ends
(deleted hash slots once filled every empty one, and a lookup of an uncached block then spun forever under the
daemon's lock: a 64 MiB write through an 8 MiB cache hung the lab, 2026-11-28)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from blockdev_driver import build_driver

# The daemon's file with its main renamed, and a reference LRU (an array, most recent first) beside its cache.
DRIVER = r"""
#define main daemon_main
#include SOURCE
#undef main
static uint64_t ref[8192], nref;
static int ref_access(uint64_t b, uint64_t cap)
{
	for (uint64_t i = 0; i < nref; i++)
		if (ref[i] == b) { memmove(ref + 1, ref, i * 8); ref[0] = b; return 1; }
	if (nref < cap) nref++;
	memmove(ref + 1, ref, (nref - 1) * 8);
	ref[0] = b;
	return 0;
}
int main(int argc, char **argv)
{
	uint64_t cap = strtoull(argv[1], 0, 10), region = strtoull(argv[2], 0, 10), n = strtoull(argv[3], 0, 10);
	uint64_t x = 88172645463325252ULL, hits = 0, single = 0;
	if (cache_init(cap * CACHE_BLOCK) != 0) return 2;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		uint64_t b = x % region, len = i % 7 == 0 ? 3 * CACHE_BLOCK : CACHE_BLOCK;  /* some span 3 blocks */
		int got = cache_access(b * CACHE_BLOCK, len, 1), want = 1;
		for (uint64_t k = 0; k < len / CACHE_BLOCK; k++) want &= ref_access(b + k, cap);
		if (got != want) { printf("differs at access %llu\n", (unsigned long long)i); return 1; }
		if (len == CACHE_BLOCK) { hits += got; single++; }
	}
	printf("hits %llu of %llu\n", (unsigned long long)hits, (unsigned long long)single);
	return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    return build_driver(tmp_path_factory, "lru", DRIVER)


@pytest.mark.parametrize("capacity, region", [(512, 2048), (512, 1024), (512, 300)])
def test_the_cache_is_an_lru_that_hits_c_over_r_and_survives_churn(driver, capacity, region):
    n = 200_000  # ~400 times the capacity evicted: the old table hung within 2 capacities of churn
    run = subprocess.run([str(driver), str(capacity), str(region), str(n)], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stdout + run.stderr
    got = re.match(r"hits (\d+) of (\d+)", run.stdout)
    hits = int(got.group(1)) / int(got.group(2))
    said = min(1.0, capacity / region)  # a uniform random single-block access, whatever the cache holds of R
    assert abs(hits - said) < 0.01, (hits, said)
