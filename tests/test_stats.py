"""Clustered bootstrap, paired bootstrap, McNemar and Cohen's kappa."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mmrag.metrics import bootstrap_ci, cohen_kappa, confusion, mcnemar, paired_bootstrap
from mmrag.metrics.stats import rate


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    values = (rng.random(400) < 0.3).astype(float)
    a = bootstrap_ci(values, None, level=0.95, n_boot=500, seed=3)
    b = bootstrap_ci(values, None, level=0.95, n_boot=500, seed=3)
    c = bootstrap_ci(values, None, level=0.95, n_boot=500, seed=4)
    assert a == b and a != c
    assert a[0] < values.mean() < a[1]
    # close to the normal approximation for a proportion
    se = math.sqrt(values.mean() * (1 - values.mean()) / len(values))
    assert a[1] - a[0] == pytest.approx(2 * 1.96 * se, rel=0.2)


def test_level_narrows_the_interval():
    values = np.random.default_rng(0).random(300)
    w90 = np.subtract(*bootstrap_ci(values, None, level=0.90, n_boot=800)[::-1])
    w99 = np.subtract(*bootstrap_ci(values, None, level=0.99, n_boot=800)[::-1])
    assert w99 > w90 > 0


def test_clustering_widens_interval_for_correlated_items():
    # 50 questions, 8 samples each, all samples of a question share the outcome
    q = np.repeat(np.arange(50), 8)
    per_q = (np.random.default_rng(5).random(50) < 0.5).astype(float)
    values = per_q[q]
    lo_i, hi_i = bootstrap_ci(values, None, n_boot=800)
    lo_c, hi_c = bootstrap_ci(values, q, n_boot=800)
    assert (hi_c - lo_c) > 2 * (hi_i - lo_i)


def test_bootstrap_edge_cases():
    assert all(math.isnan(x) for x in bootstrap_ci(np.array([]), None))
    assert bootstrap_ci(np.ones(10), None) == (1.0, 1.0)
    with pytest.raises(ValueError):
        bootstrap_ci(np.ones(3), np.array([1, 2]))
    with pytest.raises(ValueError):
        bootstrap_ci(np.ones(3), None, level=1.5)
    assert rate(np.array([]), None)["value"] is None
    r = rate(np.array([1, 0, 1, 1.0]), None, n_boot=200)
    assert r["value"] == 75.0 and r["n"] == 4 and r["ci"][0] <= 75.0 <= r["ci"][1]


def test_paired_bootstrap():
    rng = np.random.default_rng(2)
    a = (rng.random(300) < 0.7).astype(float)
    same = paired_bootstrap(a, a.copy(), None, n_boot=300)
    assert same.diff == 0.0 and same.ci == (0.0, 0.0) and same.p_value == 1.0
    b = (rng.random(300) < 0.4).astype(float)
    res = paired_bootstrap(a, b, np.arange(300) // 3, n_boot=500, seed=1)
    assert res.diff == pytest.approx(a.mean() - b.mean())
    assert res.ci[0] > 0 and res.p_value < 0.01
    with pytest.raises(ValueError):
        paired_bootstrap(a, b[:10])


def test_mcnemar_exact_and_chi_square():
    # 1 vs 9 discordant pairs: exact two-sided p = 2 * (C(10,0)+C(10,1)) / 2^10
    a = [True] * 1 + [False] * 9 + [True] * 20
    b = [False] * 1 + [True] * 9 + [True] * 20
    stat, p = mcnemar(a, b)
    assert stat == 1.0 and p == pytest.approx(2 * 11 / 1024)
    # 40 vs 20 discordant: chi2 with continuity correction (|40-20|-1)^2/60
    a2 = [True] * 40 + [False] * 20
    b2 = [False] * 40 + [True] * 20
    stat2, p2 = mcnemar(a2, b2)
    assert stat2 == pytest.approx(19**2 / 60)
    assert p2 == pytest.approx(math.erfc(math.sqrt(stat2 / 2)))
    assert 0.01 < p2 < 0.02
    assert mcnemar([True, False], [True, False]) == (0.0, 1.0)
    with pytest.raises(ValueError):
        mcnemar([True], [True, False])


def test_cohen_kappa_known_values():
    # textbook 2x2: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po=0.7, pe=0.5, kappa=0.4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa(["x"] * 5, ["x"] * 5) == 1.0  # documented convention for pe == 1
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    assert math.isnan(cohen_kappa([], []))
    assert confusion(a, b)["y"] == {"y": 20, "n": 5}
    with pytest.raises(ValueError):
        cohen_kappa(["a"], [])


def test_cohen_kappa_matches_sklearn_when_available():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(9)
    a = rng.choice(["correct", "deflection", "hallucination", "unparseable"], 200)
    b = np.where(rng.random(200) < 0.7, a, rng.choice(["correct", "deflection", "hallucination"], 200))
    assert cohen_kappa(list(a), list(b)) == pytest.approx(sk.cohen_kappa_score(a, b))


def test_hps_interval_brackets_the_point_value_and_narrows_with_data():
    from mmrag.metrics import hps_ci

    rng = np.random.default_rng(0)

    def pairs(n):
        pos = rng.random(n) < 0.8  # positives right 80 % of the time
        neg = rng.random(n) < 0.4  # negatives right 40 %: HPS ~ 50
        scores = np.concatenate([pos, neg]).astype(float)
        positive = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
        clusters = np.concatenate([np.arange(n), np.arange(n)])
        return scores, positive, clusters

    s, p, c = pairs(200)
    point = 100 * (1 - s[~p].mean() / s[p].mean())
    lo, hi = hps_ci(s, p, c, n_boot=2000, seed=1)
    assert lo < point < hi
    s2, p2, c2 = pairs(2000)
    lo2, hi2 = hps_ci(s2, p2, c2, n_boot=2000, seed=1)
    assert (hi2 - lo2) < (hi - lo)
    assert hps_ci(s, p, c, seed=3) == hps_ci(s, p, c, seed=3)
    nan_lo, nan_hi = hps_ci(s[p], p[p], c[p])  # no negatives at all
    assert np.isnan(nan_lo) and np.isnan(nan_hi)
