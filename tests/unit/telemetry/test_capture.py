"""The capture adapter's parsers (telemetry.capture) on real output kept in tests/data/capture: tshark's reply times
of the lab's iSCSI (tgtd), NFS (NFS-Ganesha) and NBD (nbdkit) at 1 OIO, 4 KiB random reads, captured at 256 bytes a
frame; tcpdump's counters as it printed them when stopped with SIGINT; and the commands the adapter runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from protolab.plan.protocols import PROTOCOLS
from protolab.telemetry import capture
from protolab.telemetry.capture import Counts, Times, common_span, mean_within, parse_counts, parse_replies

DATA = Path(__file__).resolve().parents[2] / "data" / "capture"


@pytest.mark.parametrize("name, pairs, mean_us", [
    ("tshark-iscsi-time.txt", 400, 51.49),  # iscsi.time on SCSI responses and on Data-In PDUs with status
    ("tshark-nfs-rpc-time.txt", 400, 230.302),  # rpc.time on the NFS program's replies
    ("tshark-nbd-simple-time.txt", 400, 150.785),  # nbd.time: nbdkit --no-sr (simple replies)
])
def test_tshark_reply_times_give_the_pairs_and_their_mean_in_microseconds(name, pairs, mean_us):
    replies = parse_replies((DATA / name).read_text())
    lo, hi = replies[0][0], replies[-1][0]
    assert mean_within(replies, lo, hi) == Times(pairs, pytest.approx(mean_us, abs=0.001))
    assert mean_within(replies, lo + 1e-6, hi).pairs == pairs - 1  # the span keeps what was seen within it


def test_no_matched_reply_is_no_mean():
    # tshark 4.0's NBD dissector does not know structured replies (libnbd asks nbdkit for them): nothing matched
    assert (DATA / "tshark-nbd-structured-time.txt").read_text() == ""
    assert parse_replies("") == [] and mean_within([], 0, 1) == Times(0, None)
    two = parse_replies("5.0\t0.000100000,0.000300000\n6.0\t0.000200000\n")  # two replies in one frame
    assert two == [(5.0, 1e-4), (5.0, 3e-4), (6.0, 2e-4)] and mean_within(two, 0, 9) == Times(3, 200.0)


def test_the_points_are_read_over_the_span_every_capture_ran():
    host, server = [(10.0, 1), (11.0, 1), (12.5, 1)], [(10.2, 1), (12.0, 1), (13.0, 1)]
    assert common_span([host, server]) == (10.2, 12.5)
    assert common_span([host, []]) == (10.0, 12.5) and common_span([[], []]) == (0.0, 0.0)


def test_tcpdump_counters_when_stopped():
    assert parse_counts((DATA / "tcpdump-stop.txt").read_text()) == Counts(captured=37937, dropped=0)
    said = ("tcpdump: listening on x\n10 packets captured\n12 packets received by filter\n"
            "2 packets dropped by kernel\n1 packet dropped by interface\n")
    assert parse_counts(said) == Counts(captured=10, dropped=3)
    assert parse_counts("tcpdump: pxs0: No such device exists\n") is None  # it never captured


def test_the_commands_keep_headers_of_the_servers_port_and_read_the_registrys_fields():
    argv = capture.tcpdump_argv("pxss0", 3260)
    assert argv[:2] == ["tcpdump", "-i"] and argv[argv.index("-s") + 1] == str(capture.SNAPLEN)
    assert argv[argv.index("-w") + 1] == "-" and argv[-3:] == ["tcp", "port", "3260"]  # stdout, never a path
    for p in PROTOCOLS.values():
        if p.srt is not None:
            t = capture.tshark_argv(Path("/r/captures/c-host.pcap"), p.srt)
            assert t[-3:] == ["frame.time_epoch", "-e", p.srt.time_field] and t[t.index("-Y") + 1] == p.srt.replies
    assert {p.name for p in PROTOCOLS.values() if p.srt} >= {"iscsi", "nfs", "nbd"}


def test_a_capture_file_is_new_and_never_a_link(tmp_path):
    fd = capture.new_file(tmp_path, "a.pcap")
    import os

    os.close(fd)
    with pytest.raises(FileExistsError):
        capture.new_file(tmp_path, "a.pcap")
    (tmp_path / "b.pcap").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        capture.new_file(tmp_path, "b.pcap")
    assert not (tmp_path / "elsewhere").exists()


def test_missing_tools_are_named_in_one_line():
    assert capture.missing_tools(lambda t: f"/usr/bin/{t}") is None
    said = capture.missing_tools(lambda t: None if t == "tshark" else f"/usr/bin/{t}")
    assert said == ("method.breakdown needs tshark, not found: apt-get install tshark (or 'make deps'), or remove "
                    "breakdown")
