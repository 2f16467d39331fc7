"""Built-in workloads and studies, named after the studies in shared/STUDIES.md."""

from __future__ import annotations

from importlib import resources

from .model import Workload

_W = Workload

#: Access specs from the studies. Each can be used by name in a plan and overridden field by field.
BUILTIN_WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        _W(name="tr3808-4k", block_size=4096, read_pct=75, random_pct=100, oio=4,
           description="TR-3808: 4 KiB, 75 % read, 100 % random, 4 OIO per VM"),
        _W(name="tr3808-8k", block_size=8192, read_pct=75, random_pct=100, oio=4,
           description="TR-3808: 8 KiB, 75 % read, 100 % random, 4 OIO per VM"),
        _W(name="tr3808-init", block_size=8192, read_pct=100, random_pct=100, oio=4,
           description="TR-3808 initialisation: 8 KiB 100 % random reads, results discarded"),
        _W(name="tr3916-4k", block_size=4096, read_pct=75, random_pct=100, oio=2,
           description="TR-3916 use case A: 4 KiB, 75 % read, 100 % random, 2 OIO per VM"),
        _W(name="tr3916-8k", block_size=8192, read_pct=75, random_pct=100, oio=2,
           description="TR-3916 use case A: 8 KiB, 75 % read, 100 % random, 2 OIO per VM"),
        _W(name="tr3916-oltp", block_size=8192, read_pct=60, random_pct=100, oio=16,
           description="TR-3916 use case B: 8 KiB, 60 % read, 100 % random, 16 OIO per worker"),
        _W(name="exchange-2to1", block_size=4096, read_pct=200 / 3, random_pct=100, oio=1,
           description="EMC simulated Exchange: 4 KiB random, 2 reads : 1 write, one I/O per stream"),
        # S3 (VMware, Exchange 2007 on FC/iSCSI/NFS): 8 VMs × 2,000 users, one load stream per VM.
        # - The seed's average: heavy 3,700 IOPS / 8 VMs ≈ 462 per VM, double heavy 5,300 / 8 ≈ 662.
        # - Bursts: the seed says its bursts "briefly exceeded" one 1 GbE link. Each stream issues 4 s of its
        #   average (4 × 462 = 1,848 I/Os; 4 × 662 = 2,648) as fast as its 8 OIO and the storage allow,
        #   then pauses 3 s. When a burst takes 1 s — storage serving 4 × the mean, 8 × 1,848 = 14,784 IOPS,
        #   81 % of one 1GbE link's ceiling for this mix (`protolab limits --protocol iscsi --link 1GbE
        #   --workload exchange-heavy`: 18,346 IOPS at MTU 1500) — the mean is the seed's 462; double heavy's
        #   8 × 2,648 = 21,184 per second of burst is 115 % of it: beyond one link, as in the seed. Faster storage
        #   gives a higher mean, slower a lower one (fio 3.33 cannot cap a burst, see plan.shape.Bursts);
        #   the measured IOPS say which. The first hours' 6,500 falling to 3,300 were the storage settling,
        #   not the load, so the load itself does not change over the run.
        # - 2 reads : 1 write (read_pct 66.7): the Exchange simulation of S4 (EMC), which states the mix.
        # - Block sizes: 8 KiB is Exchange 2007's database page (S3), 4 KiB the older page S4 simulates;
        #   10 % of 32 KiB stands for log writes and read-ahead — an assumption: the seeds give no larger size.
        #   All random: LoadGen's users touch mailboxes all over the database.
        _W(name="exchange-heavy", block_size={8192: 60, 4096: 30, 32768: 10}, read_pct=200 / 3, random_pct=100,
           oio=8, bursts={"ios": 1848, "pause": 3.0},
           description="S3 Exchange 2007 LoadGen heavy (47 tasks/user/day): bursts of 4 s of 462 IOPS/VM, 3 s apart"),
        _W(name="exchange-double-heavy", block_size={8192: 60, 4096: 30, 32768: 10}, read_pct=200 / 3,
           random_pct=100, oio=8, bursts={"ios": 2648, "pause": 3.0},
           description="S3 Exchange 2007 LoadGen double heavy (94 tasks/user/day): bursts of 4 s of 662 IOPS/VM, "
                       "3 s apart"),
        _W(name="vmtn-max-read", block_size=32768, read_pct=100, random_pct=0, oio=64,
           description="VMTN Max Throughput-100%Read: 32 KiB sequential reads"),
        _W(name="vmtn-real-life", block_size=8192, read_pct=65, random_pct=60, oio=64,
           description="VMTN RealLife-60%Rand-65%Read: 8 KiB, 65 % read, 60 % random"),
        _W(name="vmtn-max-50read", block_size=32768, read_pct=50, random_pct=0, oio=64,
           description="VMTN Max Throughput-50%Read: 32 KiB sequential, 50 % read"),
        _W(name="vmtn-random-8k", block_size=8192, read_pct=70, random_pct=100, oio=64,
           description="VMTN Random-8k-70%Read: 8 KiB, 70 % read, 100 % random"),
        _W(name="seq-read-64k", block_size=65536, read_pct=100, random_pct=0, oio=8,
           description="64 KiB sequential reads: how close a link gets to its ceiling"),
    ]
}


def builtin_studies() -> dict[str, str]:
    """Built-in study names → their TOML text (files in protolab/plan/studies/)."""
    folder = resources.files("protolab.plan") / "studies"
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out[entry.name[: -len(".toml")]] = entry.read_text()
    return out


def study_description(text: str) -> str:
    """The `description = "…"` line of a study's TOML, for one-line listings."""
    import tomllib

    try:
        return str(tomllib.loads(text).get("description", ""))
    except tomllib.TOMLDecodeError:
        return ""
