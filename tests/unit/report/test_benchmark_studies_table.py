"""benchmarks/studies.py's table per study (claim, verdict, figure, MDD), made from a stored run with today's
exchange claims, without running the study."""

from __future__ import annotations

import json
import shutil
import sys

from conftest import ROOT
from protolab.plan.load import load_builtin


def test_the_studies_benchmark_tabulates_claim_verdict_figure_and_mdd_from_a_stored_run(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import studies

    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "golden" / "exchange-quick" / "run", run)
    m = json.loads((run / "manifest.json").read_text())
    plan, _ = load_builtin("exchange", "quick")
    m["plan"]["seed_findings"] = [json.loads(f.model_dump_json()) for f in plan.seed_findings]
    (run / "manifest.json").write_text(json.dumps(m))
    before = sorted(p.name for p in run.iterdir())
    claims = studies.claims_of(run)
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written into the run
    table = studies.claims_table(claims).splitlines()
    assert table[:2] == ["| claim | verdict | figure | MDD |", "|---|---|---|---|"]
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in table[2:]]
    assert len(rows) == len(claims) == 3
    for row, c in zip(rows, claims):
        assert row[0].startswith(f"{c['finding']}. {c['section']}: ") and row[1] == c["verdict"]
        assert row[2].startswith(c["figures"].replace("|", "\\|"))
        lo, hi = c["mdd_pct"]
        assert 2.0 <= lo <= hi and row[3] in (f"{lo:.1f}–{hi:.1f} %", f"{lo:.1f} %")
    first = rows[0]
    assert first[0].startswith("1. Results: IOPS or p95 service time: iscsi-4x1g against iscsi-1x1g")
    assert first[1] == "inconclusive" and "repeats a side would decide it" in first[2]
    assert first[3] == "51.4–89.7 %"  # 3 repeats of 10 s a side: tens of %
