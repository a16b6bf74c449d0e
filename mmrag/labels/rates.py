"""Labels joined to their run, and the run's rates corrected for the judge's errors.

``corrected_rates(RUN_DIR)`` gives one row per cell (benchmark x model x scenario by default)
with the judged rate, the corrected rate and its interval for correct / deflection /
hallucination, the coverage, which confusion corrected it (per source or pooled) and a flag where
a corrected value was clipped into [0, 1].  The method and its assumption are in
:mod:`mmrag.labels.correct` and in the frame's ``attrs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.errors import InputError
from mmrag.labels.correct import ASSUMPTION, METHOD, MIN_LABELS, POOLED, Confusion, cluster_counts, correct_cell
from mmrag.labels.store import HUMAN_LABELS
from mmrag.labels.store import load as load_labels

DEFAULT_BY = ("benchmark", "model", "scenario")


def run_frame(run: Any) -> pd.DataFrame:
    """A run frame: given, or loaded from a run directory (:func:`mmrag.runs.load`)."""
    if isinstance(run, pd.DataFrame):
        return run
    from mmrag.runs.frame import load

    return load(run)


def choose_labeller(labels: pd.DataFrame, labeller: str | None = None) -> str | None:
    """The labeller asked for, else the one with most labels (ties: alphabetical); None if none."""
    if labels.empty:
        if labeller is not None:
            raise InputError(f"no labels by {labeller!r} in this run", field="--labeller")
        return None
    counts = labels.groupby("labeller").size()
    if labeller is not None:
        if labeller not in counts.index:
            raise InputError(
                f"no labels by {labeller!r}; labellers here: {', '.join(sorted(counts.index))}", field="--labeller"
            )
        return labeller
    return sorted(counts.index, key=lambda k: (-int(counts[k]), k))[0]


def labelled_pairs(df: pd.DataFrame, labels: pd.DataFrame, labeller: str | None = None) -> pd.DataFrame:
    """The run's rows that ``labeller`` labelled, with the label as ``truth`` (failed requests and
    skips left out).  A label whose key the run lacks is an error: it belongs to another run."""
    who = choose_labeller(labels, labeller)
    if who is None:
        return df.iloc[0:0].assign(truth=pd.Series(dtype=object))
    mine = labels[(labels["labeller"] == who) & labels["label"].isin(HUMAN_LABELS)]
    unknown = sorted(set(mine["key"]) - set(df["key"]))
    if unknown:
        raise InputError(
            f"{len(unknown)} labels of {who!r} name records this run does not hold "
            f"(e.g. {unknown[0]}): labels of another run?",
            path=f"labels/{who}.jsonl",
        )
    pairs = df.merge(mine[["key", "label"]].rename(columns={"label": "truth"}), on="key", how="inner")
    pairs = pairs[pairs["error"].isna()]
    return pairs.reset_index(drop=True)


def stratum_sizes(df: pd.DataFrame) -> dict[tuple[str, str], int]:
    ok = df[df["error"].isna()]
    return {(str(s), str(o)): int(n) for (s, o), n in ok.groupby(["source", "outcome"]).size().items()}


def estimate_confusion(
    df: pd.DataFrame, pairs: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, min_labels: int = MIN_LABELS
) -> Confusion:
    if pairs.empty:
        raise InputError("no labels to estimate the judge's confusion from (label some replies with `mmrag label`)")
    return Confusion.estimate(
        pairs["source"].astype(str).tolist(),
        pairs["outcome"].tolist(),
        pairs["truth"].tolist(),
        stratum_sizes(df),
        n_boot=n_boot,
        seed=seed,
        min_labels=min_labels,
    )


def _basis(conf: Confusion, sources: Sequence[str]) -> str:
    kinds = {conf.basis(s) for s in sources}
    if kinds == {"per source"}:
        return "per source"
    if kinds == {POOLED}:
        return POOLED
    return (
        "per source: "
        + ", ".join(s for s in sources if conf.basis(s) != POOLED)
        + "; pooled: "
        + ", ".join(s for s in sources if conf.basis(s) == POOLED)
    )


def corrected_rates(
    run: Any,
    labels: pd.DataFrame | None = None,
    *,
    by: Sequence[str] = DEFAULT_BY,
    labeller: str | None = None,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    min_labels: int = MIN_LABELS,
    confusion: Confusion | None = None,
) -> pd.DataFrame:
    """Per group of ``by``: ``n``, ``coverage`` and, for each of correct / deflection /
    hallucination, the judged rate, ``_corrected``, ``_corrected_lo``, ``_corrected_hi`` and
    ``_clipped`` (percent of all responses), plus ``confusion`` (``per source`` / ``pooled`` /
    which sources were which).  ``attrs`` hold ``method``, ``assumption``, ``labeller`` and
    ``n_labels``.  ``run``: a run directory or its frame; ``labels``: default the run's own."""
    df = run_frame(run)
    if labels is None:
        if isinstance(run, pd.DataFrame):
            raise InputError("give the labels (mmrag.labels.load(RUN_DIR)) with a frame")
        labels = load_labels(run)
    who = choose_labeller(labels, labeller)
    pairs = labelled_pairs(df, labels, who)
    conf = confusion or estimate_confusion(df, pairs, n_boot=n_boot, seed=seed, min_labels=min_labels)
    by = [c for c in by if c in df.columns]
    rows = []
    for salt, (key, g) in enumerate(df.groupby(by, dropna=False, sort=True) if by else [((), df)]):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key))
        row["n"] = len(g)
        row["coverage"] = 100.0 * float((g["outcome"] != "unparseable").mean())
        parts = []
        for src, s in g.groupby("source", sort=True):
            parts.append(
                (
                    str(src),
                    cluster_counts(
                        s["outcome"].tolist(), s["error"].notna().to_numpy(), s["question_id"].astype(str).to_numpy()
                    ),
                )
            )
        res = correct_cell(conf, parts, level=level, seed=seed, salt=salt + 1)
        row["confusion"] = _basis(conf, [p[0] for p in parts])
        for t in HUMAN_LABELS:
            row[t] = 100.0 * float((g["outcome"] == t).mean())
            row[f"{t}_corrected"] = res[t]["value"]
            row[f"{t}_corrected_lo"], row[f"{t}_corrected_hi"] = res[t]["ci"]
            row[f"{t}_clipped"] = res[t]["clipped"]
        rows.append(row)
    cols = [*by, "n", "coverage", "confusion"] + [
        f"{t}{s}" for t in HUMAN_LABELS for s in ("", "_corrected", "_corrected_lo", "_corrected_hi", "_clipped")
    ]
    out = pd.DataFrame(rows, columns=cols)
    out.attrs.update(
        {
            "method": METHOD,
            "assumption": ASSUMPTION,
            "labeller": who,
            "n_labels": int(len(pairs)),
            "level": level,
            "n_boot": n_boot,
            "seed": seed,
            "confusion_groups": {g: conf.n_labels[g] for g in conf.groups},
            "min_labels": conf.min_labels,
        }
    )
    return out


def run_has_labels(run_dir: str | Path) -> bool:
    """Whether the run has a label file (reading it, and its errors, is left to the caller)."""
    from mmrag.labels.store import labels_dir

    d = labels_dir(run_dir)
    return d.is_dir() and any(d.glob("*.jsonl"))
