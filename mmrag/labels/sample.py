"""The labelling sample: stratified by source x judge outcome, seeded, kept with its weights.

Why stratify on the judge's own outcome: the judge's errors are what labels measure, and a plain
random sample of 200 replies from a run that is 85 % correct sees a dozen deflections at best.
Each stratum (``source|outcome``) first gets a floor of items (``min(10, n // strata)``, or all of
it when smaller), the rest is shared in proportion to stratum size; every item carries the design
weight ``N_h / n_h`` so that estimates can be re-weighted to the whole run.  Failed requests are
left out: there is no reply to label (they stay unparseable, exactly known).

The sample is drawn once and stored in ``RUN_DIR/labels/sample.json``: reopening the page and a
second labeller see the same items in the same (shuffled: strata never come in blocks, which
would give the verdict away) order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mmrag.errors import InputError
from mmrag.labels.store import labels_dir
from mmrag.mapping_files import read_json_mapping
from mmrag.util import atomic_write_json

SAMPLE_FILE = "sample.json"
DEFAULT_N = 200
MIN_PER_STRATUM = 10
STRATUM_SEP = "|"


def stratum_of(source: pd.Series, outcome: pd.Series) -> pd.Series:
    return source.astype(str) + STRATUM_SEP + outcome.astype(str)


def eligible(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with a reply to label (a failed request has none)."""
    return df[df["error"].isna()] if "error" in df.columns else df


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Items per stratum: a floor each, then the rest in proportion to size (largest remainders)."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    floor = min(MIN_PER_STRATUM, n // max(1, len(sizes)))
    alloc = {h: min(size, floor) for h, size in sizes.items()}
    rest = n - sum(alloc.values())
    while rest > 0:
        open_ = {h: sizes[h] for h in sizes if alloc[h] < sizes[h]}
        weight = sum(open_.values())
        share = {h: rest * s / weight for h, s in open_.items()}
        given = 0
        for h, x in share.items():
            k = min(int(x), sizes[h] - alloc[h])
            alloc[h] += k
            given += k
        if given == 0:  # hand out single items by the largest remainder
            for h in sorted(open_, key=lambda h: (-(share[h] - int(share[h])), h))[:rest]:
                alloc[h] += 1
                given += 1
        rest -= given
    return alloc


@dataclass
class LabelSample:
    """The items to label, in showing order, with stratum and design weight of each."""

    items: pd.DataFrame  # key, stratum, source, outcome, weight
    seed: int
    n: int
    strata: dict[str, dict[str, int]]  # {stratum: {"N": size in the run, "n": drawn}}

    @property
    def keys(self) -> list[str]:
        return list(self.items["key"])

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "n": self.n,
            "strata": self.strata,
            "items": self.items[["key", "stratum", "source", "outcome", "weight"]].to_dict("records"),
        }


def draw(df: pd.DataFrame, n: int = DEFAULT_N, seed: int = 0) -> LabelSample:
    """Draw the stratified sample from a run frame (:func:`mmrag.runs.load`)."""
    if n < 1:
        raise InputError(f"must be at least 1, got {n}", field="--n")
    pool = eligible(df)
    if pool.empty:
        raise InputError("the run has no replies to label (no records, or every request failed)")
    pool = pool.assign(stratum=stratum_of(pool["source"], pool["outcome"]))
    sizes = pool.groupby("stratum").size().to_dict()
    alloc = allocate({h: int(s) for h, s in sizes.items()}, n)
    rng = np.random.default_rng(seed)
    parts = []
    for h in sorted(alloc):
        rows = pool[pool["stratum"] == h].sort_values("key")
        pick = rng.choice(len(rows), size=alloc[h], replace=False) if alloc[h] else np.array([], dtype=int)
        part = rows.iloc[np.sort(pick)][["key", "stratum", "source", "outcome"]]
        parts.append(part.assign(weight=sizes[h] / alloc[h] if alloc[h] else 0.0))
    items = pd.concat(parts, ignore_index=True)
    items = items.iloc[rng.permutation(len(items))].reset_index(drop=True)
    strata = {h: {"N": int(sizes[h]), "n": int(alloc[h])} for h in sorted(sizes)}
    return LabelSample(items=items, seed=seed, n=n, strata=strata)


def sample_path(run_dir: str | Path) -> Path:
    return labels_dir(run_dir) / SAMPLE_FILE


def read_sample(run_dir: str | Path) -> LabelSample | None:
    path = sample_path(run_dir)
    if not path.exists():
        return None
    obj = read_json_mapping(path, "a labelling sample")
    try:
        items = pd.DataFrame(obj["items"], columns=["key", "stratum", "source", "outcome", "weight"])
        return LabelSample(
            items=items,
            seed=int(obj["seed"]),
            n=int(obj["n"]),
            strata={str(k): {"N": int(v["N"]), "n": int(v["n"])} for k, v in obj["strata"].items()},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a labelling sample ({exc})", path=path) from None


def ensure_sample(run_dir: str | Path, df: pd.DataFrame, n: int | None = None, seed: int | None = None) -> LabelSample:
    """The run's stored sample, or a new one drawn and stored.  Asking for another ``n`` or
    ``seed`` than the stored sample's is refused (labels of two samples must not be mixed)."""
    stored = read_sample(run_dir)
    if stored is not None:
        for flag, want, have in (("--n", n, stored.n), ("--seed", seed, stored.seed)):
            if want is not None and want != have:
                raise InputError(
                    f"this run's labelling sample was drawn with {flag} {have}; drop {flag} to "
                    f"keep labelling it, or remove {sample_path(run_dir)} to draw another",
                    field=flag,
                )
        return stored
    s = draw(df, DEFAULT_N if n is None else n, 0 if seed is None else seed)
    atomic_write_json(sample_path(run_dir), s.to_json())
    return s
