"""Traces a plan replays: parsed, summarised and fitted into a stream's region, byte for byte."""

from __future__ import annotations

import os
import struct

import pytest

from conftest import DATA
from protolab.traces import MAX_TRACE_BYTES, TraceError, fold, read_trace, write_iolog


def test_the_captured_iolog_summary():
    s = read_trace(DATA / "replay-small.iolog").summary()
    assert (s["format"], s["ios"], s["reads"], s["writes"]) == ("iolog3", 150, 98, 52)
    assert (s["bytes"], s["read_bytes"]) == (1_097_728, 733_184)
    assert s["sizes"] == {4096: 70, 8192: 61, 16384: 19} and s["duration_s"] == pytest.approx(0.59331)


def test_version_2_and_what_is_left_out(tmp_path):
    p = tmp_path / "t.iolog"
    p.write_text("fio version 2 iolog\n/x add\n/x open\n/x read 0 4096\n/x write 4096 8192\n/x sync 0 0\n"
                 "/x trim 0 4096\n/x close\n")
    t = read_trace(p)
    assert t.format == "iolog2" and [(e.write, e.offset, e.length, e.t_us) for e in t.events] == [
        (False, 0, 4096, 0), (True, 4096, 8192, 0)]
    assert t.left_out == {"sync": 1, "trim": 1} and t.summary()["random_pct"] == 0.0


@pytest.mark.parametrize("text, expect", [
    ("fio version 3 iolog\nx /a read 0 4096\n", ":2: a version 3 iolog line starts with a time in µs"),
    ("fio version 3 iolog\n5 /a read 0\n", ":2: a read needs an offset and a length in bytes"),
    ("fio version 2 iolog\n/a explode 0 1\n", ":2: not an iolog line (FILE ACTION [OFFSET LENGTH])"),
    ("fio version 2 iolog\n/a add\n/a open\n/a close\n", ": holds no reads or writes to replay"),
    ("hello\n", ": is neither a fio iolog ('fio version 2 iolog' or 3) nor a blktrace"),
])
def test_malformed_traces_say_where(tmp_path, text, expect):
    p = tmp_path / "t.iolog"
    p.write_text(text)
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert expect in str(e.value)


def test_only_regular_bounded_files(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(TraceError, match="is not a regular file"):
        read_trace(tmp_path / "fifo")  # refused before any open: never hangs
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)
    with pytest.raises(TraceError, match="more than a trace's 64 MiB"):
        read_trace(big)
    cut = tmp_path / "cut.blktrace"
    cut.write_bytes(struct.pack("<IIQQIIIIIHH", 0x65617407, 0, 0, 8, 4096, 1 | 1 << 16, 1, 1, 0, 0, 4) + b"ab")
    with pytest.raises(TraceError, match="ends inside an event"):
        read_trace(cut)


def test_fold_keeps_every_io_whole_inside_the_region():
    region = 1 << 20
    assert fold(4096, 4096, region) == 4096  # fits: unchanged
    assert fold(region + 8192, 4096, region) == 8192  # wrapped
    assert fold(3 * region - 2048, 8192, region) == region - 8192  # at the end: back to where it fits, aligned
    for off in range(0, 5 * region, 12_288):
        o = fold(off, 16_384, region)
        assert 0 <= o and o + 16_384 <= region


def test_write_iolog_moves_names_and_scales(tmp_path):
    p = tmp_path / "t.iolog"
    p.write_text("fio version 3 iolog\n7 /orig add\n7 /orig open\n100 /orig read 0 4096\n"
                 "350 /orig write 2097152 8192\n400 /orig close\n")
    out = tmp_path / "s.iolog"
    write_iolog(read_trace(p), out, "/data/t.dat", offset=1 << 20, size=1 << 20, time_scale=2.0)
    assert out.read_text().splitlines() == [
        "fio version 3 iolog", "0 /data/t.dat add", "0 /data/t.dat open", "0 /data/t.dat read 1048576 4096",
        "500 /data/t.dat write 1048576 8192", "500 /data/t.dat close"]
    with pytest.raises(TraceError, match="larger than the stream's region of 4096 bytes"):
        write_iolog(read_trace(p), out, "/x", offset=0, size=4096, time_scale=1.0)


def test_validate_warns_when_the_window_cuts_the_replay(tmp_path):
    from protolab.plan.load import load_plan_text
    from protolab.plan.warnings import plan_warnings

    text = (f'name = "r"\nbaseline = "a"\nworkloads = [{{ name = "t", replay = {{ file = "{DATA / "replay-small.iolog"}", '
            'time_scale = 10.0 } }]\nload_points = [{ streams = 1 }]\n[method]\nduration = "3s"\nrepeats = 3\n'
            f'[[configurations]]\nname = "a"\ntarget = "{tmp_path}/t.dat"\n')
    assert plan_warnings(load_plan_text(text)) == [
        "workload 't': its trace lasts 5.9 s at time_scale 10, longer than the 3 s window: the replay is cut there "
        "(raise method.duration or lower time_scale)"]
    assert plan_warnings(load_plan_text(text.replace("10.0", "1.0"))) == []


def test_replay_is_refused_where_fio_cannot_read_the_iologs(tmp_path):
    from protolab.errors import PlanError
    from protolab.plan.load import load_plan_text
    from protolab.plan.preflight import preflight

    text = (f'name = "r"\nbaseline = "a"\nworkloads = [{{ name = "t", replay = "{DATA / "replay-small.iolog"}" }}]\n'
            'load_points = [{ streams = 1 }]\n[[configurations]]\nname = "a"\n'
            f'target = "{tmp_path}/t.dat"\n[[hosts]]\nname = "esx1"\nagent = "ssh://root@esx1"\n')
    with pytest.raises(PlanError) as e:
        preflight(load_plan_text(text, source="p.toml"), "p.toml")
    assert str(e.value) == ("p.toml: workload 't': replay runs only on load hosts that see this machine's files, "
                            "not on host 'esx1' (ssh://root@esx1); use this machine or the embedded lab's hosts")
    preflight(load_plan_text(text.replace("ssh://root@esx1", "local"), source="p.toml"), "p.toml")


def test_replay_over_libiscsi_is_refused(tmp_path):
    from protolab.errors import PlanError
    from protolab.plan.load import load_plan_text
    from protolab.plan.preflight import preflight

    text = (f'name = "r"\nbaseline = "a"\nworkloads = [{{ name = "t", replay = "{DATA / "replay-small.iolog"}" }}]\n'
            'load_points = [{ streams = 1 }]\n[[configurations]]\nname = "a"\n'
            'target = { url = "iscsi://198.18.0.1/iqn.2024-01.org.x:y/1", allow_overwrite = true }\n')
    with pytest.raises(PlanError) as e:
        preflight(load_plan_text(text, source="p.toml"), "p.toml")
    assert "configuration 'a': workload 't' replays a trace, which fio 3.33's libiscsi engine cannot" in str(e.value)


def test_an_error_never_quotes_the_trace(tmp_path):
    """A trace may be a file the plan should not show: errors give the line, never its bytes."""
    secret = "root:$6$SECRETHASH:19000:0:99999:7:::"
    for text in (f"fio version 2 iolog\n{secret}\n", f"fio version 3 iolog\n{secret}\n",
                 f"fio version 2 iolog\n/a read {secret} 1\n"):
        f = tmp_path / "t.log"
        f.write_text(text)
        with pytest.raises(TraceError) as e:
            read_trace(f)
        assert "SECRETHASH" not in str(e.value) and ":2: " in str(e.value)


def test_a_sudo_user_without_a_name_is_still_checked_as_that_user_never_as_root(tmp_path, monkeypatch):
    """sudo's uid with no name in the password database: `test -r` runs under setpriv with no groups, never as
    root (an empty argv prefix would let root's own permissions decide)."""
    import pwd
    import subprocess
    from types import SimpleNamespace

    import protolab.trust
    from protolab import traces

    trace = tmp_path / "t.iolog"
    trace.write_text("fio version 2 iolog\n")
    seen: list[list[str]] = []
    monkeypatch.setattr(traces.os, "geteuid", lambda: 0)
    monkeypatch.setattr(protolab.trust, "invoking_user", lambda: (4242, 4242))
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: SimpleNamespace(pw_name=""))
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: seen.append(argv) or SimpleNamespace(returncode=1))
    fd = os.open(trace, os.O_RDONLY)
    try:
        with pytest.raises(traces.TraceError, match="uid 4242"):
            traces.may_read(trace, None, fd)
    finally:
        os.close(fd)
    assert seen and seen[0][:4] == ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"], seen
