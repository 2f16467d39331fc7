"""protolab-blockdev's corrupted range, compiled from the daemon's own source with a small driver: which values of
user.protolab.corrupt it takes and refuses, and that a read flips exactly the bytes it shares with the range."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from blockdev_driver import build_driver

# The daemon's file with its main renamed; the driver sets a range on a 1,000-byte disk (or refuses it), then reads
# [OFF, OFF+LEN) of a buffer of zeros and prints which offsets came back flipped (0xff).
DRIVER = r"""
#define main daemon_main
#include SOURCE
#undef main
int main(int argc, char **argv)
{
	dev.size = 1000;
	if (set_corrupt(argv[1], strlen(argv[1])) != 0) { printf("refused\n"); return 0; }
	uint64_t off = strtoull(argv[2], 0, 10), len = strtoull(argv[3], 0, 10);
	char *buf = calloc(len, 1);
	corrupt(buf, len, off);
	for (uint64_t i = 0; i < len; i++)
		if ((unsigned char)buf[i] == 0xff) printf("%llu ", (unsigned long long)(off + i));
		else if (buf[i]) printf("bad%llu ", (unsigned long long)(off + i));
	printf("\n");
	return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    return build_driver(tmp_path_factory, "corrupt", DRIVER)


def _flipped(driver: Path, value: str, off: int, length: int) -> list[int] | None:
    run = subprocess.run([str(driver), value, str(off), str(length)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    return None if run.stdout.strip() == "refused" else [int(w) for w in run.stdout.split()]


@pytest.mark.parametrize("value, off, length, flipped", [
    ("10 5", 0, 100, [10, 11, 12, 13, 14]),  # the range inside the read
    ("10 5", 12, 100, [12, 13, 14]),  # the read starts inside the range
    ("10 5", 0, 12, [10, 11]),  # the read ends inside it
    ("10 5", 15, 100, []),  # just past it
    ("10 5", 0, 10, []),  # just before it
    ("990 10", 900, 100, list(range(990, 1000))),  # the disk's last bytes
    ("", 0, 100, []),  # cleared
])
def test_a_read_flips_exactly_the_bytes_it_shares_with_the_range(driver, value, off, length, flipped):
    assert _flipped(driver, value, off, length) == flipped


@pytest.mark.parametrize("value", ["10", "10 0", "991 10", "1000 1", "-1 5", "a 5", "10 5 ", "10  5", " 10 5",
                                   "10 99999999999999999999"])
def test_a_range_not_of_the_form_or_outside_the_disk_is_refused(driver, value):
    assert _flipped(driver, value, 0, 10) is None
