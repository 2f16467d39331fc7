"""The catalogue database: built from the run directories, rebuilt when missing or damaged, an entry read again when
its run changed, links never followed."""

from __future__ import annotations

import os

from fakeruns import make_run
from protolab.catalogue.index import DB_NAME, HEADLINE, open_catalogue


def _two_runs(tmp_path):
    root = tmp_path / "results"
    return root, make_run(root, seed=1), make_run(root, seed=2)


def test_built_from_the_run_directories_with_their_environment_and_values(tmp_path):
    root, a, b = _two_runs(tmp_path)
    cat = open_catalogue(root)
    assert cat.note == "catalogue missing: built from 2 run directories"
    assert not (root / DB_NAME).exists()  # written only when the command saves it
    assert cat.save() == cat.note and (root / DB_NAME).is_file()
    runs = cat.runs("nightly")
    assert [r.run_id for r in runs] == [a.run_id, b.run_id]
    env = runs[0].env
    assert (env.plan, env.kernel, env.fio, env.link, env.hosts) == ("nightly", "6.1", "fio-3.33", "1GbE MTU 9000",
                                                                     "1 lab host(s)")
    assert env.device.startswith("hdd-array: 5.5ms±1.5ms ×70")
    assert runs[0].cells == 16 and runs[0].status == "complete"
    values = cat.samples(a.run_id)
    assert sorted(values) == sorted(m for m in HEADLINE if not m.startswith("cpu"))  # no telemetry: no CPU
    assert {len(v) for v in values["iops"].values()} == {4}
    assert sorted(values["iops"]) == [("tr3808-4k", "1×1×4=4", "direct"), ("tr3808-4k", "1×1×4=4", "iscsi"),
                                      ("tr3808-4k", "1×2×4=8", "direct"), ("tr3808-4k", "1×2×4=8", "iscsi")]
    assert 990 < min(values["iops"][("tr3808-4k", "1×1×4=4", "direct")]) < 1010
    assert cat.plans() == [("nightly", 2, b.run_id)]


def test_a_fresh_catalogue_is_neither_read_again_nor_rewritten(tmp_path):
    root, _, _ = _two_runs(tmp_path)
    open_catalogue(root).save()
    before = os.stat(root / DB_NAME)
    again = open_catalogue(root)
    assert again.note == "" and again.save() == ""
    after = os.stat(root / DB_NAME)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert len(again.runs()) == 2


def test_a_deleted_catalogue_is_rebuilt(tmp_path):
    root, _, _ = _two_runs(tmp_path)
    open_catalogue(root).save()
    (root / DB_NAME).unlink()
    cat = open_catalogue(root)
    assert cat.note == "catalogue missing: built from 2 run directories"
    cat.save()
    assert len(open_catalogue(root).runs()) == 2 and (root / DB_NAME).is_file()


def test_a_damaged_or_foreign_catalogue_is_rebuilt_not_trusted(tmp_path):
    root, a, _ = _two_runs(tmp_path)
    (root / DB_NAME).write_bytes(b"SQLite format 3\x00" + b"\xff" * 300)
    cat = open_catalogue(root)
    assert cat.note.startswith("catalogue damaged") and len(cat.runs()) == 2
    cat.save()
    # a valid SQLite file that lies: another schema
    import sqlite3

    (root / DB_NAME).unlink()
    db = sqlite3.connect(root / DB_NAME)
    db.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema', '99')")
    db.commit()
    db.close()
    cat = open_catalogue(root)
    assert cat.note == "catalogue damaged (another schema): built from 2 run directories"
    assert [r.run_id for r in cat.runs()][0] == a.run_id


def test_a_symlink_at_the_catalogue_is_replaced_and_its_target_left_alone(tmp_path):
    root, _, _ = _two_runs(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    os.symlink(victim, root / DB_NAME)
    cat = open_catalogue(root)
    assert cat.note.startswith("catalogue unreadable (a symlink)")
    cat.save()
    assert victim.read_text() == "keep me"
    assert not (root / DB_NAME).is_symlink() and (root / DB_NAME).is_file()


def test_a_changed_run_is_read_again_a_new_one_added_a_vanished_one_dropped(tmp_path):
    root, a, b = _two_runs(tmp_path)
    open_catalogue(root).save()
    more = make_run(tmp_path / "elsewhere", seed=5)  # records of another run, appended to b: b changed
    b.add_records([r.model_copy(update={"seq": r.seq + 100, "cell_id": r.cell_id + "x"}) for r in more.records()])
    cat = open_catalogue(root)
    assert cat.note == "catalogue refreshed: 0 new, 1 changed, 0 gone"
    assert {r.run_id: r.cells for r in cat.runs()} == {a.run_id: 16, b.run_id: 32}
    cat.save()
    c = make_run(root, seed=3)
    import shutil

    shutil.rmtree(a.path)
    cat = open_catalogue(root)
    assert cat.note == "catalogue refreshed: 1 new, 0 changed, 1 gone"
    assert [r.run_id for r in cat.runs()] == [b.run_id, c.run_id]
    assert cat.samples(a.run_id) == {}


def test_a_linked_run_directory_is_not_indexed_and_one_holding_a_link_is_not_read(tmp_path):
    root, a, b = _two_runs(tmp_path)
    outside = make_run(tmp_path / "outside", seed=9)
    os.symlink(outside.path, root / "linked-run")
    os.symlink("/etc/passwd", b.path / "raw-link")
    cat = open_catalogue(root)
    assert [r.run_id for r in cat.runs()] == [a.run_id]
    assert cat.ignored == ["linked-run: a symlink, not indexed (protolab follows no link in a results directory)"]
    [bad] = cat.unreadable()
    assert bad.run_id == b.run_id and "raw-link is a symlink" in bad.error


def test_a_results_directory_that_does_not_exist_is_refused_and_not_made(tmp_path):
    import pytest

    from protolab.errors import ProtolabError

    with pytest.raises(ProtolabError, match=r"no such results directory; give --results DIR"):
        open_catalogue(tmp_path / "nope")
    assert not (tmp_path / "nope").exists()


def test_a_catalogue_another_user_could_write_or_whose_rows_lie_is_rebuilt(tmp_path):
    import sqlite3

    root, a, _ = _two_runs(tmp_path)
    open_catalogue(root).save()
    os.chmod(root / DB_NAME, 0o666)
    cat = open_catalogue(root)
    assert cat.note == "catalogue not trusted (owner uid %d, mode 666): built from 2 run directories" % os.geteuid()
    cat.save()
    assert os.stat(root / DB_NAME).st_mode & 0o022 == 0  # written anew, as the umask gives
    db = sqlite3.connect(root / DB_NAME)
    db.execute("UPDATE runs SET env = 'not json' WHERE run_id = ?", (a.run_id,))
    db.commit()
    db.close()
    cat = open_catalogue(root)
    assert cat.note.startswith("catalogue damaged (Expecting value") and len(cat.runs()) == 2
