"""`protolab limits`: the table, workload resolution, errors and the typer command."""

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from protolab.errors import ProtolabError
from protolab.limits_cli import limits_command, limits_table, run_limits


def _render(renderable) -> str:
    console = Console(record=True, width=220)
    console.print(renderable)
    return console.export_text()


def test_table_shows_the_hand_calculated_iscsi_row():
    # iSCSI 8 KiB reads, 1GbE, MTU 1500, one I/O in flight: 2.02 frames / 229.64 B to storage, 6 frames / 8780 B
    # to host, 125e6 / 8780 = 14 237 IOPS, 116.6 MB/s (see test_wire.py for the derivation); NBD 14 289.
    table = limits_table(["iscsi", "nbd"], "1GbE", 1500, 8192, 100.0)
    assert table.row_count == 2
    text = _render(table)
    for cell in ("iscsi", "229.64", "8,780", "14,237", "116.6", "to host", "nbd", "14,289", "OIO 1"):
        assert cell in text
    assert "modelled only" not in text


def test_fc_rows_are_labelled_modelled_only():
    text = _render(limits_table(["fc"], "4GFC", 1500, 2048, 100.0))
    assert "modelled only" in text and "193,887" in text and "397.1" in text


def test_run_limits_resolves_a_builtin_workload():
    # tr3808-8k: 8 KiB, 75 % read, 4 I/Os in flight (the workload's OIO: analysis.wire_tcp's queued ACKs).
    # iSCSI at MTU 9000:
    #   read  -> to host 8330 + 0.06 pure ACK of the command (5.4) = 8335.4 B, to storage 138 + 5.4 = 143.4 B;
    #   write -> the command's header (48 B) and its 8192 B of immediate data, one segment each: 8240 + 180 =
    #            8420 B, + 0.06 pure ACK of the 48 B response = 8425.4 B to storage; response 138 + 0.55 pure
    #            ACK of the 2-segment burst (49.5) = 187.5 B to host.
    #   to host = 0.75 * 8335.4 + 0.25 * 187.5 = 6298.4 B -> 125e6 / 6298.4 = 19 846 IOPS.
    console = Console(record=True, width=220)
    [row] = run_limits("iscsi", "1GbE", 9000, "tr3808-8k", None, None, console)
    assert row.wire_cost.read_pct == 75 and row.wire_cost.payload_bytes == 8192
    assert row.wire_cost.bytes_to_host == pytest.approx(0.75 * 8335.4 + 0.25 * 187.5)
    assert row.wire_cost.bytes_to_storage == pytest.approx(0.75 * 143.4 + 0.25 * 8425.4)
    assert round(row.iops) == 19846 and "4 I/Os in flight" in console.export_text()
    [one] = run_limits("iscsi", "1GbE", 9000, "tr3808-8k", None, None, console, oio=1)  # --oio 1: no queued ACKs
    assert one.wire_cost.bytes_to_host == pytest.approx(0.75 * 8330 + 0.25 * (138 + 90))
    assert "workload tr3808-8k" in console.export_text()


def test_options_override_the_workload_and_default_protocols_fit_the_link():
    console = Console(record=True, width=220)
    rows = run_limits(None, "10GbE", 9000, "tr3808-8k", "4k:3,64k:1", 70.0, console)
    assert [r.protocol for r in rows] == ["iscsi", "nfs", "nbd", "nvme-tcp", "smb", "fcoe"]
    assert rows[0].wire_cost.payload_bytes == 0.75 * 4096 + 0.25 * 65536
    assert rows[0].wire_cost.read_pct == 70.0
    rows = run_limits(None, "1GbE", 1500, None, None, None, console)
    assert [r.protocol for r in rows] == ["iscsi", "nfs", "nbd", "nvme-tcp", "smb"]
    assert "FCoE is not shown" in console.export_text()
    assert [r.protocol for r in run_limits(None, "16GFC", 1500, None, "1M", None, console)] == ["fc"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("x", "1GbE", 1500, None, None, None), "limits: unknown protocol 'x'; choose one of iscsi, nfs, nbd, nvme-tcp, smb, fc, fcoe"),
        (("nbd", "1GbE", 1500, "nope", None, None), "limits: unknown workload 'nope'; choose one of"),
        (("nbd", "1GbE", 1500, None, "eight", None), "limits: --block-size 'eight' is not a size"),
        (("nbd", "1GbE", 1500, None, None, 150.0), "limits: --read-pct must be between 0 and 100"),
        (("fc", "1GbE", 1500, None, None, None), "limits: protocol fc needs an FC link"),
        (("fcoe", "10GbE", 1500, None, None, None), "FCoE needs an Ethernet MTU of at least 2158"),
        (("nbd", "warp9", 1500, None, None, None), "link: cannot read rate 'warp9'"),
    ],
)
def test_user_errors_are_one_line_protolab_errors(args, message):
    with pytest.raises(ProtolabError) as info:
        run_limits(*args, Console(record=True))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_oio_below_one_is_refused_in_one_line():
    with pytest.raises(ProtolabError, match="^limits: --oio must be at least 1, got 0$"):
        run_limits("nbd", "1GbE", 1500, None, None, None, Console(record=True), oio=0)


def test_limits_command_registers_with_typer():
    app = typer.Typer()
    app.command("limits")(limits_command)
    app.command("other")(lambda: None)  # two commands, so "limits" is a sub-command as in cli.py
    result = CliRunner().invoke(
        app, ["limits", "--protocol", "nfs", "--link", "1GbE", "--mtu", "1500", "--block-size", "4k"],
        terminal_width=220, env={"COLUMNS": "220"},
    )
    assert result.exit_code == 0, result.output
    # NFSv3 4 KiB reads: 4498 B to host -> 27 790 IOPS, 113.8 MB/s
    assert "4,498" in result.output and "27,790" in result.output and "113.8" in result.output
    bad = CliRunner().invoke(app, ["limits", "--protocol", "afp"])
    assert isinstance(bad.exception, ProtolabError)


def test_table_gives_the_frames_range_and_says_offloaded_packets_are_not_frames():
    text = _render(limits_table(["iscsi"], "1GbE", 1500, 8192, 100.0))
    assert "7–10" in text  # 1 command + 6 data frames, .. + ceil(6/2) ACKs
    assert "segments handed to the NIC, not frames" in " ".join(text.split())
