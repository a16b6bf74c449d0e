"""Paired differences: two models, or two scenarios, on the *same* samples.

Comparing two rates that each carry their own interval wastes the pairing: most of the variance is
between questions, and both arms see the same questions.  Here rows are matched one to one (same
sample, same scenario for a model comparison; same sample, same model for a scenario comparison)
and the difference ``B - A`` gets a paired, question-clustered bootstrap interval
(:func:`mmrag.metrics.paired_bootstrap`, whose two-sided bootstrap p-value on correctness is
``p_boot``) and, for correctness, McNemar's test on the discordant pairs
(:func:`mmrag.metrics.mcnemar`: exact binomial below 25 discordant pairs, else chi-square with
continuity correction), ``p_mcnemar``.  Rows present in only one arm are left out and
counted (``n_pairs``); cells whose request failed (``error`` set: nothing was measured) are left
out of both arms and counted per arm (``n_failed_a`` / ``n_failed_b``), so a model with failures
is marked in every comparison it enters.

Which pairs are compared when none are named:

* models: every pair of models, within each benchmark and scenario;
* scenarios: every pair of scenarios of one benchmark and model that differ in exactly **one**
  knob (kind, distractor count, positive modality, negative modality, strictness, stress), where
  a knob that does not apply to a kind (the negative modality of an oracle prompt, the distractor
  count of a parametric one) matches anything.  That yields the contrasts the papers discuss
  (oracle vs realistic at each distractor count, realistic vs adversarial, one strictness step,
  a stress setting vs another) without the quadratic blow-up of all pairs.  The arm that comes
  first in kind order (parametric, oracle, realistic, adversarial), then fewer distractors, then
  the lower strictness, then the ``common`` stress setting is ``A``.

P-values are reported raw and Holm-adjusted within each table (``p_holm``), because a sweep makes
many comparisons at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

import numpy as np
import pandas as pd

from mmrag.errors import InputError
from mmrag.reports.tables import CIOptions
from mmrag.scenarios.kinds import get_kind, kind_order
from mmrag.scenarios.spec import STRICTNESS_LEVELS

KNOBS = ("kind", "n_distractors", "positive_modality", "negative_modality", "strictness", "stress")
_STRICT_ORDER = {k: i for i, k in enumerate(STRICTNESS_LEVELS)}
DIFF_OUTCOMES = ("correct", "deflection", "hallucination")
#: the frame knobs a scenario kind may leave unused (they match anything when finding neighbours)
_KIND_KNOBS = ("n_distractors", "positive_modality", "negative_modality")


def _not_applicable(kind_id: object) -> set[str]:
    """The knobs a kind does not read (its registered ``knobs``); an unknown kind reads them all."""
    try:
        kind = get_kind(str(kind_id))
    except InputError:
        return set()
    return {k for k in _KIND_KNOBS if k not in kind.knobs}


def holm(p: Iterable[float]) -> np.ndarray:
    """Holm's step-down adjustment (NaN p-values stay NaN and do not count)."""
    p = np.asarray(list(p), dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    running = 0.0
    for rank, idx in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        out[idx] = running
    return out


def compare(
    a: pd.DataFrame, b: pd.DataFrame, on: str = "sample_id", opts: CIOptions = CIOptions()
) -> dict[str, object]:
    """Match ``a`` and ``b`` rows on the ``on`` column and compare them (B - A, in percentage points)."""
    from mmrag.metrics import mcnemar, paired_bootstrap

    # a failed request measured nothing: its cell is left out of the pairing and counted
    failed_a, failed_b = _failed(a), _failed(b)
    a, b = a[~failed_a], b[~failed_b]
    ids_a, ids_b = a[on].to_numpy(), b[on].to_numpy()
    _, ia, ib = np.intersect1d(ids_a, ids_b, return_indices=True)
    row: dict[str, object] = {
        "n_pairs": len(ia),
        "n_only_a": len(a) - len(ia),
        "n_only_b": len(b) - len(ib),
        "n_failed_a": int(failed_a.sum()),
        "n_failed_b": int(failed_b.sum()),
    }
    if len(ia) == 0:
        for o in DIFF_OUTCOMES:
            row.update({f"{o}_a": np.nan, f"{o}_b": np.nan, f"d_{o}": np.nan, f"d_{o}_lo": np.nan, f"d_{o}_hi": np.nan})
        row.update({"p_boot": np.nan, "b01": 0, "b10": 0, "p_mcnemar": np.nan})
        return row
    clusters = a["question_id"].to_numpy()[ia]
    for o in DIFF_OUTCOMES:
        xa = a[o].to_numpy(dtype=float)[ia]
        xb = b[o].to_numpy(dtype=float)[ib]
        # metrics.paired_bootstrap reports mean(first) - mean(second): pass B first for B - A
        res = paired_bootstrap(xb, xa, clusters, level=opts.level, n_boot=opts.n_boot, seed=opts.seed)
        row.update(
            {
                f"{o}_a": 100 * xa.mean(),
                f"{o}_b": 100 * xb.mean(),
                f"d_{o}": 100 * res.diff,
                f"d_{o}_lo": 100 * res.ci[0],
                f"d_{o}_hi": 100 * res.ci[1],
            }
        )
        if o == "correct":
            row["p_boot"] = res.p_value
    ca = a["correct"].to_numpy(dtype=bool)[ia]
    cb = b["correct"].to_numpy(dtype=bool)[ib]
    row["b01"] = int((~ca & cb).sum())  # wrong under A, right under B
    row["b10"] = int((ca & ~cb).sum())
    row["p_mcnemar"] = float(mcnemar(ca, cb)[1])
    return row


def _failed(df: pd.DataFrame) -> pd.Series:
    """Rows whose request failed (``error`` set); older frames without the column have none."""
    return df["error"].notna() if "error" in df.columns else pd.Series(False, index=df.index)


def _finish(rows: list[dict[str, object]]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if not df.empty:
        df["p_holm"] = holm(df["p_mcnemar"])
    return df


def model_differences(
    df: pd.DataFrame, pairs: list[tuple[str, str]] | None = None, opts: CIOptions = CIOptions()
) -> pd.DataFrame:
    """B - A per benchmark and scenario for each model pair (default: all pairs, sorted by name)."""
    rows = []
    models = sorted(df["model"].unique())
    for a_name, b_name in pairs if pairs is not None else list(combinations(models, 2)):
        cells = list(df.groupby(["benchmark", "scenario_id"], sort=True))
        if set(KNOBS) <= set(df.columns):  # the paper's order of scenarios (a bare frame keeps id order)
            cells.sort(key=lambda kv: (kv[0][0], _order(_knobs(kv[1])), kv[0][1]))
        for (bench, sid), g in cells:
            a, b = g[g.model == a_name], g[g.model == b_name]
            if a.empty or b.empty:
                continue
            rows.append(
                {"benchmark": bench, "scenario_id": sid, "a": a_name, "b": b_name, **compare(a, b, "sample_id", opts)}
            )
    return _finish(rows)


def _knobs(g: pd.DataFrame) -> dict[str, object]:
    first = g.iloc[0]
    return {k: first[k] for k in KNOBS}


def changed_knobs(ka: dict[str, object], kb: dict[str, object]) -> list[str]:
    """The knobs in which two scenarios differ, ignoring knobs that do not apply to either kind."""
    skip = _not_applicable(ka["kind"]) | _not_applicable(kb["kind"])
    return [k for k in KNOBS if k not in skip and ka[k] != kb[k] and not (pd.isna(ka[k]) and pd.isna(kb[k]))]


def neighbours(ka: dict[str, object], kb: dict[str, object]) -> bool:
    """True when two scenarios differ in exactly one applicable knob (see module docstring)."""
    return len(changed_knobs(ka, kb)) == 1


def _order(k: dict[str, object]) -> tuple:
    return (
        kind_order(k["kind"]),
        int(str(k["n_distractors"])),
        _STRICT_ORDER.get(str(k["strictness"]), 9),
        k["stress"] != "common",
        str(k["stress"]),
        str(k["positive_modality"]),
        str(k["negative_modality"]),
    )


def scenario_differences(
    df: pd.DataFrame, pairs: list[tuple[str, str]] | None = None, opts: CIOptions = CIOptions()
) -> pd.DataFrame:
    """B - A per benchmark and model for scenario pairs (default: one-knob neighbours)."""
    rows = []
    for (bench, model), g in df.groupby(["benchmark", "model"], sort=True):
        groups = {sid: sg for sid, sg in g.groupby("scenario_id", sort=True)}
        knobs = {sid: _knobs(sg) for sid, sg in groups.items()}
        if pairs is not None:
            todo = [(a, b) for a, b in pairs if a in groups and b in groups]
        else:
            todo = []
            for x, y in combinations(sorted(groups), 2):
                if neighbours(knobs[x], knobs[y]) and set(groups[x].sample_id) & set(groups[y].sample_id):
                    todo.append((x, y) if _order(knobs[x]) <= _order(knobs[y]) else (y, x))
        for a, b in todo:
            rows.append(
                {
                    "benchmark": bench,
                    "model": model,
                    "a": a,
                    "b": b,
                    "changed": ",".join(changed_knobs(knobs[a], knobs[b])),
                    **compare(groups[a], groups[b], "sample_id", opts),
                }
            )
    return _finish(rows)
