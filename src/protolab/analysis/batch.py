"""`compare` for thousands of pairs at once: a study's whole matrix in a few numpy calls, with compare's results.

Pairs with the same sample sizes share one draw of bootstrap positions (exactly the draw
`stats.compare` makes with the same seed); each resample is then one of a few combinations
of middle positions, counted once, so a pair's interval is a weighted order statistic of a
handful of ratios. Welch and TOST on log values are vectorised too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .detectable import welch_se_df
from .stats import _BOOTSTRAP_RESAMPLES, MIN_REPEATS, Comparison, _as_array, _t_sf, test_p, tost_log_p


def compare_many(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    labels: Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = _BOOTSTRAP_RESAMPLES,
    level: float = 0.95,
    test: str = "welch",
    noise: float = 0.02,
) -> list[Comparison]:
    """`compare` for many (baseline, other) pairs at once, with the same results, vectorised.

    Pairs with the same sample sizes share one draw of bootstrap indices (exactly the draw
    `compare` makes with the same seed), so a study of thousands of cells costs a few numpy
    calls per size instead of thousands of resamplings. Welch and TOST on log values are
    vectorised as well; anything unusual (a value not positive, no spread, Mann–Whitney)
    falls back to the one-pair functions.
    """
    n_pairs = len(pairs)
    labels = list(labels) if labels is not None else [""] * n_pairs
    out: list[Comparison | None] = [None] * n_pairs
    groups = _by_sizes(pairs)
    tail = (1.0 - level) / 2.0 * 100.0
    for (nb, no), (idx, base, other) in groups.items():
        med_b, med_o = np.median(base, axis=1), np.median(other, axis=1)
        p, p_eq, se, df = _tests(base, other, test, noise)
        rng = np.random.default_rng(seed)
        # the draws of `compare` (positions in each sorted sample); a resample's median is the value at the
        # middle drawn position(s), so one sort of the draws serves every pair of these sizes
        mid_b = np.sort(rng.integers(0, nb, size=(resamples, nb)), axis=1)[:, [(nb - 1) // 2, nb // 2]]
        mid_o = np.sort(rng.integers(0, no, size=(resamples, no)), axis=1)[:, [(no - 1) // 2, no // 2]]
        base.sort(axis=1)
        other.sort(axis=1)
        # Every resample is one of a few (baseline middle positions, other middle positions) combinations, the
        # same for all pairs of these sizes: count them once, then each pair's percentiles are order statistics
        # of a weighted handful of ratios — exactly np.percentile's over the `resamples` ratios of `compare`.
        key = (mid_b[:, 0] * nb + mid_b[:, 1]) * (no * no) + mid_o[:, 0] * no + mid_o[:, 1]
        combos, counts = np.unique(key, return_counts=True)
        ub, uo = combos // (no * no), combos % (no * no)
        vals_b = (base[:, ub // nb] + base[:, ub % nb]) / 2.0
        vals_o = (other[:, uo // no] + other[:, uo % no]) / 2.0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = vals_o / vals_b
        finite = np.isfinite(ratios).all(axis=1)
        order = np.argsort(ratios, axis=1, kind="stable")
        ranked = np.take_along_axis(ratios, order, axis=1)
        cum = np.cumsum(counts[order], axis=1)
        virtual = np.true_divide([tail, 100.0 - tail], 100) * (resamples - 1)
        below = np.floor(virtual).astype(int)
        frac = virtual - below
        rows = np.arange(len(idx))
        bounds = []
        for lo_pos, t in zip(below, frac):
            a_ = ranked[rows, (cum <= lo_pos).sum(axis=1).clip(max=ranked.shape[1] - 1)]
            b_ = ranked[rows, (cum <= min(lo_pos + 1, resamples - 1)).sum(axis=1).clip(max=ranked.shape[1] - 1)]
            with np.errstate(invalid="ignore"):  # rows with an infinite ratio (a zero baseline) go the slow way below
                diff = b_ - a_
                bounds.append(b_ - diff * (1 - t) if t >= 0.5 else a_ + diff * t)  # numpy's own _lerp
        for k, i in enumerate(idx):
            mb, mo = float(med_b[k]), float(med_o[k])
            if mb == 0.0:
                nan = math.nan
                out[i] = Comparison(nan, nan, nan, float(p[k]), nb, no, mb, mo, labels[i], test, float(p_eq[k]),
                                    float(se[k]), float(df[k]))
                continue
            if finite[k]:
                lo, hi = bounds[0][k], bounds[1][k]
            else:  # a zero among the resampled baselines: the slow way, dropping the non-finite ratios
                boot_b = (base[k, mid_b[:, 0]] + base[k, mid_b[:, 1]]) / 2.0
                boot_o = (other[k, mid_o[:, 0]] + other[k, mid_o[:, 1]]) / 2.0
                with np.errstate(divide="ignore", invalid="ignore"):
                    r = boot_o / boot_b
                lo, hi = np.percentile(r[np.isfinite(r)], [tail, 100.0 - tail])
            out[i] = Comparison(mo / mb, float(lo), float(hi), float(p[k]), nb, no, mb, mo, labels[i], test,
                                float(p_eq[k]), float(se[k]), float(df[k]))
    return out  # type: ignore[return-value]


def _by_sizes(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]
              ) -> dict[tuple[int, int], tuple[list[int], np.ndarray, np.ndarray]]:
    """The pairs grouped by (baseline size, other size), in order of first appearance: (their indices, the
    baselines' samples stacked, the others'). One array per group rather than two per pair; anything the group
    cannot take (an empty or non-finite sample, not a flat list) goes pair by pair, raising `_as_array`'s error."""
    groups: dict[tuple[int, int], list[int]] = {}
    try:
        for i, (b, o) in enumerate(pairs):
            groups.setdefault((len(b), len(o)), []).append(i)
        out = {}
        for (nb, no), idx in groups.items():
            base = np.array([pairs[i][0] for i in idx], dtype=float)
            other = np.array([pairs[i][1] for i in idx], dtype=float)
            if (base.shape != (len(idx), nb) or other.shape != (len(idx), no) or not nb or not no
                    or not np.isfinite(base).all() or not np.isfinite(other).all()):
                raise ValueError("not a group")
            out[(nb, no)] = (idx, base, other)
        return out
    except (TypeError, ValueError):
        pass
    arrays = [(_as_array(b, "baseline samples"), _as_array(o, "other samples")) for b, o in pairs]
    groups = {}
    for i, (b, o) in enumerate(arrays):
        groups.setdefault((b.size, o.size), []).append(i)
    return {k: (idx, np.stack([arrays[i][0] for i in idx]), np.stack([arrays[i][1] for i in idx]))
            for k, idx in groups.items()}


def _tests(base: np.ndarray, other: np.ndarray, test: str,
           noise: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(test p, TOST p, Welch's log se and df) for each row of equal-sized samples; rows the vector path cannot
    take use the scalar one (se and df: NaN where Welch on log values was not the test)."""
    k, nb = base.shape
    no = other.shape[1]
    p, p_eq = np.ones(k), np.ones(k)
    if min(nb, no) < MIN_REPEATS:
        return p, p_eq, np.full(k, np.nan), np.full(k, np.nan)
    positive = (base > 0).all(axis=1) & (other > 0).all(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lx, ly = np.log(np.where(positive[:, None], base, 1.0)), np.log(np.where(positive[:, None], other, 1.0))
    vx, vy = lx.var(axis=1, ddof=1) / nb, ly.var(axis=1, ddof=1) / no
    vector = positive & (vx + vy > 0) & (test == "welch")
    d = ly.mean(axis=1) - lx.mean(axis=1)
    se = np.sqrt(vx + vy)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vx + vy) ** 2 / (np.where(vx > 0, vx**2 / (nb - 1), 0.0) + np.where(vy > 0, vy**2 / (no - 1), 0.0))
        t = d / se
        p_vec = 2.0 * _t_sf(np.abs(t), df)
        lo, hi = math.log(1.0 - noise), math.log(1.0 + noise)
        eq_vec = np.maximum(_t_sf((d - lo) / se, df), _t_sf((hi - d) / se, df))
    for i in range(k):
        if vector[i]:
            p[i] = min(1.0, float(p_vec[i]))
        else:
            p[i] = test_p(base[i], other[i], test)
        if positive[i] and se[i] > 0 and noise > 0:
            p_eq[i] = float(eq_vec[i])
        else:
            p_eq[i] = tost_log_p(base[i], other[i], noise)
    w_se, w_df = welch_se_df(lx, ly)
    welch = positive & (test == "welch")
    return p, p_eq, np.where(welch, w_se, np.nan), np.where(welch, w_df, np.nan)
