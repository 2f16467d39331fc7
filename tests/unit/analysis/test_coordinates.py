"""Coordinates: records are grouped by role, never by name; a new dimension is a point coordinate by default."""

from __future__ import annotations

from types import SimpleNamespace as NS

from protolab.plan.coordinates import Point, outer_steps, point_of, points, role


def rec(**coords):
    return NS(coords={"workload": "w", "configuration": "c", "repeat": 1, **coords}, hosts=1, streams_per_host=2,
              oio_per_stream=4, total_oio=8)


def test_roles_of_known_and_new_coordinates():
    assert [role(k) for k in ("workload", "configuration", "load", "repeat", "stage", "age_s")] == [
        "workload", "configuration", "point", "replicate", "series", "series"]
    assert role("device") == "point" and role("fill") == "point"


def test_a_point_holds_its_outer_coordinates_then_the_load():
    p = point_of(rec(load=1, fill=25, stage="age", age_s=3600, device="hdd-array"))
    assert p.coords == (("device", "hdd-array"), ("fill", 25), ("load", 1))
    assert p.label == "device hdd-array · fill 25 % · 1×2×4=8"
    assert p.slug == "devicehdd-array-fill25-1" and p.get("fill") == 25 and p.get("nothing", 7) == 7
    assert p.outer_label == "device hdd-array · fill 25 %"


def test_points_order_by_stage_step_numerically_then_load():
    recs = [rec(load=li, fill=f) for f in (100, 10, 25) for li in (1, 0)]
    assert [(p.get("fill"), p.get("load")) for p in points(recs)] == [
        (10, 0), (10, 1), (25, 0), (25, 1), (100, 0), (100, 1)]
    assert outer_steps(recs) == [(("fill", 10),), (("fill", 25),), (("fill", 100),)]
    assert outer_steps([rec(load=0)]) == [()]


def test_equal_coordinates_are_one_point_whatever_the_label():
    assert Point((("load", 0),), "a") == Point((("load", 0),), "b")
    assert len({point_of(rec(load=0, repeat=r)) for r in (1, 2, 3)}) == 1  # repeats pool at one point
    assert len({point_of(rec(load=0, stage="age", age_s=t)) for t in (0, 60)}) == 1  # aging steps too


def test_a_points_hash_is_its_coordinates_and_survives_pickling():
    """Points are hashed once (a study's tables hash them ~10⁶ times); pickling carries no hash (a string's hash
    differs between processes), and records at one point share one Point."""
    import pickle

    p = point_of(rec(load=3, fill=25))
    assert hash(p) == hash(p.coords) == hash(Point(p.coords, "another label"))
    state = p.__getstate__()
    assert set(state) == {"coords", "label"}
    q = pickle.loads(pickle.dumps(p))
    assert q == p and hash(q) == hash(p) and q.label == p.label
    assert point_of(rec(load=3, fill=25, repeat=2)) is p
