"""The KVM probe's answer is remembered for the boot (doctor and VM studies stop paying 20 s each on kvm_pvm), and
only while its key holds and its file is root's alone."""

from __future__ import annotations

import os
import shutil

import pytest

from protolab.vm import accel
from protolab.vm.image import GuestImage


@pytest.fixture
def probes(monkeypatch, tmp_path):
    if shutil.which(accel.QEMU) is None:
        pytest.skip("QEMU is not installed")
    calls = []
    monkeypatch.setattr(accel, "probe_kvm", lambda runner, image, timeout: calls.append(timeout) or "no luck")
    monkeypatch.setattr(accel, "_cache_file", lambda: tmp_path / "kvm-probe.json")
    (tmp_path / "vmlinuz").write_bytes(b"k")
    (tmp_path / "initrd").write_bytes(b"i")
    return calls, GuestImage(tmp_path, tmp_path / "vmlinuz", tmp_path / "initrd", {}), tmp_path / "kvm-probe.json"


def test_the_answer_is_kept_for_the_same_key_and_probed_again_for_another(probes):
    calls, image, _ = probes
    assert accel.remembered_probe(None, image, 20.0) == ("no luck", False)
    assert accel.remembered_probe(None, image, 20.0) == ("no luck", True)
    assert accel.choose("auto", None, image, 20.0, remember=True).reason == \
        "KVM unusable: no luck (probed earlier this boot)"
    assert calls == [20.0]
    assert accel.remembered_probe(None, image, 5.0) == ("no luck", False)  # another time limit
    (image.initrd).write_bytes(b"a new image")
    assert accel.remembered_probe(None, image, 5.0) == ("no luck", False)
    assert calls == [20.0, 5.0, 5.0]
    assert accel.choose("auto", None, image, 5.0).reason == "KVM unusable: no luck"  # remember=False probes
    assert len(calls) == 4


def test_a_file_others_can_write_is_not_believed(probes):
    calls, image, kept = probes
    accel.remembered_probe(None, image, 20.0)
    os.chmod(kept, 0o666)
    assert accel.remembered_probe(None, image, 20.0) == ("no luck", False)
    kept.unlink()
    os.symlink("/etc/hostname", kept)
    assert accel.remembered_probe(None, image, 20.0) == ("no luck", False)  # a link is never read
    assert len(calls) == 3 and os.path.islink(kept) is False
