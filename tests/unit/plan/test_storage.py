"""`[lab.storage]`: presets with their figures, field-by-field overrides, one-line messages for bad values, the
plan's dump unchanged without the table, and what each model says (latency at 1 OIO, IOPS at saturation)."""

from __future__ import annotations

import pytest

from protolab.errors import ProtolabError
from protolab.lab.device import daemon_argv
from protolab.lab.servers import path_caches
from protolab.plan.load import load_plan_data
from protolab.plan.storage import PRESETS, StorageSpec
from protolab.plan.topology import LabSpec

PLAN = {"name": "p", "baseline": "local", "workloads": ["tr3808-4k"], "load_points": [{"streams": 1}],
        "configurations": [{"name": "local", "target": "lab:local"}]}


def load(storage: dict | None):
    lab = {"prefix": "pdm"} if storage is None else {"prefix": "pdm", "storage": storage}
    return load_plan_data({**PLAN, "lab": lab}, source="plan.toml")


def test_every_preset_names_its_source_and_ram_is_no_model():
    assert all(p.source for p in PRESETS.values())
    assert StorageSpec(model="ram").is_ram and StorageSpec().is_ram and LabSpec().device.is_ram
    flash, hdd = StorageSpec(model="flash"), StorageSpec(model="hdd-array")
    assert (flash.service_us, flash.spread_us, flash.servers, flash.throughput_bps) == (150, 50, 2, 250e6)
    assert (hdd.service_us, hdd.spread_us, hdd.servers, hdd.throughput_bps, hdd.cache_bytes) == (5500, 1500, 70,
                                                                                                 None, 0)


def test_the_model_says_parallelism_over_service_time_capped_by_throughput():
    hdd = StorageSpec(model="hdd-array", parallelism=8)
    assert hdd.latency_us(4096) == 5500
    assert hdd.saturation_iops(4096) == pytest.approx(8 / 0.0055)
    capped = StorageSpec(service_time="1ms", parallelism=100, throughput="100MB/s")
    assert capped.latency_us(65536) == pytest.approx(1000 + 655.36)
    assert capped.saturation_iops(65536) == pytest.approx(1e8 / 65536)  # 1,526, not 100,000
    assert StorageSpec(service_time="1ms", cache="256MiB").cache_bytes == 256 * 2**20


def test_presets_are_overridden_field_by_field_and_named_so_in_cells_csv():
    spec = load({"model": "hdd-array", "parallelism": 8}).lab.device
    assert (spec.servers, spec.service_us) == (8, 5500)
    assert spec.name == "hdd-array parallelism=8"
    assert StorageSpec(model="flash").name == "flash"
    explicit = StorageSpec(service_time="5ms", spread="1ms", parallelism=16, throughput="400MB/s", cache="256MiB")
    assert explicit.name == "5ms±1ms ×16, 400MB/s, cache 256M"
    assert StorageSpec().name == "ram"


def test_a_plan_without_the_table_dumps_as_before():
    assert "storage" not in load(None).lab.model_dump(mode="json")
    dumped = load({"model": "flash"}).lab.model_dump(mode="json")
    assert dumped["storage"]["model"] == "flash"
    assert LabSpec.model_validate(dumped).device.name == "flash"


@pytest.mark.parametrize("storage, message", [
    ({"model": "ssd"}, "lab.storage.model: model 'ssd' is not a preset; choose one of ram, flash, hdd-array"),
    ({"model": "ram", "parallelism": 4}, "model 'ram' has no device model, so parallelism cannot be set"),
    ({"parallelism": 4}, "service_time: missing; an explicit model needs a service time like '5ms'"),
    ({"service_time": "5"}, "lab.storage.service_time: service_time must be a time like '150us' or '5.5ms'"),
    ({"service_time": "1ms", "spread": "2ms"}, "spread 2ms is larger than service_time 1ms"),
    ({"model": "flash", "parallelism": 0}, "parallelism must be between 1 and 1024 (spindles or queues), got 0"),
    ({"model": "flash", "throughput": "fast"}, "throughput must be a rate like '400MB/s' or '1GiB/s'"),
    ({"model": "flash", "cache": "lots"}, "cache must be 'none' or a size like '256MiB', got 'lots'"),
    ({"model": "flash", "speed": 1}, "lab.storage.speed: unknown field"),
])
def test_bad_values_are_one_line_naming_the_field(storage, message):
    with pytest.raises(ProtolabError) as e:
        load(storage)
    text = str(e.value)
    assert message in text and "\n" not in text and text.startswith("plan.toml")


def test_the_daemon_gets_the_figures_in_ns_bytes_and_bytes_per_second(tmp_path):
    spec = StorageSpec(model="flash", cache="1MiB")
    argv = daemon_argv("/bin/bd", tmp_path / "pdm-dev", tmp_path / "pdm-pool.img", "pdm-disk", spec, 42.5)
    assert argv[3:] == ["pdm-disk", "150000", "50000", "2", "250000000", "1048576", "42500", "0"]


def test_each_path_says_what_cache_it_had_above_the_model():
    caches = path_caches({"local": None, "iscsi": "tgt", "nfs": "ganesha", "nbd": "nbdkit"})
    assert caches["iscsi"].startswith("none") and caches["local"].startswith("none")
    assert caches["nfs"].startswith("none for whole 4 KiB blocks") and "protolab-direct.so" in caches["nfs"]
    assert "cache=none" in caches["nbd"]
    assert "libeatmydata" not in caches["nfs"]
    back = path_caches({"nfs": "ganesha", "iscsi": "tgt", "nvme-tcp": "nvmet"}, write_back=True)
    assert "libeatmydata" in back["nfs"] and back["iscsi"] == caches["iscsi"]
    assert back["nvme-tcp"].startswith("unknown")  # a server whose cache nobody described says so


def test_nfs_ganesha_gets_the_direct_library_over_a_model_and_eatmydata_over_a_write_back_one(monkeypatch, tmp_path):
    from protolab.errors import ToolError
    from protolab.lab import device

    lib = tmp_path / "protolab-direct.so"
    monkeypatch.setattr(device, "find_direct_lib", lambda: lib)
    assert device.ganesha_preload(StorageSpec(model="ram")) is None  # the RAM pool: no model to meet
    assert device.ganesha_preload(StorageSpec(model="flash")) == str(lib)
    if device.EATMYDATA.exists():
        libs = device.ganesha_preload(StorageSpec(model="hdd-array")).split(":")
        assert libs[0] == str(lib) and "libeatmydata" in libs[1] and len(libs) == 2
    monkeypatch.setattr(device, "find_direct_lib", lambda: None)
    with pytest.raises(ToolError, match="protolab-direct.so .*run 'make deps'"):
        device.ganesha_preload(StorageSpec(model="flash"))


def test_cells_csv_names_the_device_model_of_every_lab_cell():
    from protolab.report.cellscsv import configuration_columns
    from protolab.results.rundir import csv_columns

    assert "device_model" in csv_columns()
    plan = load({"model": "hdd-array", "parallelism": 8})
    stored = plan.model_copy(update={"lab": plan.lab.model_dump(mode="json")})  # as read back from a manifest
    assert configuration_columns(stored)["local"]["device_model"] == "hdd-array parallelism=8"
    assert configuration_columns(load(None))["local"]["device_model"] == "ram"


def test_the_environment_section_names_the_model_its_caches_and_the_overhead():
    from protolab.report.sections.environment_section import EnvironmentModel

    device = {"model": "flash", "figures": "150us±50us ×2", "source": "X25-E", "overhead_us": 48.0,
              "caches": {"nfs": "the host's page cache"}}
    rows = dict(EnvironmentModel({}, "complete", None, device).device_rows())
    assert rows["device model"] == "flash: 150us±50us ×2" and rows["device model source"] == "X25-E"
    assert rows["cache above the model (nfs)"] == "the host's page cache" and rows["stack overhead"].startswith("48 µs")
    assert "per write" not in rows["stack overhead"]
    rows = dict(EnvironmentModel({}, "complete", None, {**device, "write_overhead_us": 61.5}).device_rows())
    assert rows["stack overhead"].endswith("; 61.5 µs per write acknowledged from its write-back cache, inside that time")
    assert EnvironmentModel({}, "complete", None, None).device_rows() == []


def test_run_device_model_puts_a_preset_under_the_pool_and_resume_keeps_it(tmp_path, cli):
    """`run --device-model ram` runs a study over another array than its [lab.storage] says; the stored plan names
    it and resume loads the same; a plan without the lab, or a name that is not a preset, is refused in one line."""
    from protolab.plan.load import load_builtin
    from protolab.plan.migrate import PLAN_FORMAT
    from protolab.results.manifest import Provenance, RunStart
    from protolab.results.rundir import RunDir
    from protolab.run.resume import differences, resumable

    plan, text = load_builtin("tr3808", "quick")
    assert plan.lab.device.name == "hdd-array"
    over, _ = load_builtin("tr3808", "quick", "ram")
    assert over.lab.device.is_ram and over.configurations == plan.configurations
    rd = RunDir.create(tmp_path, "tr3808", RunStart(plan=over.model_dump(mode="json"), plan_text=text,
                                                     plan_format=PLAN_FORMAT, provenance=Provenance()))
    rd.events.session_ended(130, "interrupted")
    again, _, _ = resumable(RunDir.open(rd.path))
    assert again.lab.device.is_ram and [d for d in differences(rd, again, "", {}) if d.startswith("plan")] == []
    for argv, said in ((["--builtin", "demo", "--device-model", "flash"], "this plan has no embedded lab"),
                       (["--builtin", "tr3808", "--device-model", "floppy"], "not a preset; choose one of ram, "
                                                                              "flash, hdd-array")):
        p = cli("run", *argv, "--results", tmp_path / "r", cwd=tmp_path, timeout=60)
        assert p.returncode == 2 and said in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "r").exists()
