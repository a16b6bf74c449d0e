"""VLM-DeflectionBench's curation results: Table 2 and Figures 4 and 5, from a curation folder.

A curation folder (``mmrag curate``) holds ``config.json`` (the benchmark and gating models),
``stage1_parametric.jsonl`` (each gating model's verdict without context, per sample),
``stage3_oracle.jsonl`` and ``report.json`` (counts per source).  From them:

* Table 2: per source, the input samples, the survivors and the retained share (the paper's
  "Filtered (%)" column is, per its caption, the percentage retained);
* Figure 4: the category distribution of the input and of the survivors, and the shift in
  percentage points; a sample's category is ``metadata.category``, else its question slot
  (``metadata.slot``), else ``metadata.question_type``, else its source;
* Figure 5: Stage I run with the first k gating models (k = 0 .. M, in the configured order): the
  share of samples removed and the parametric accuracy of all M gating models on what is left
  (it reaches 0 at k = M by construction: a survivor is one every gating model fails).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from mmrag.errors import InputError
from mmrag.reports.plotkit import STYLE, color_of, drawn


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable curation file ({type(exc).__name__})", path=path) from None


def _rows(path: Path) -> list[dict]:
    from mmrag.util import iter_jsonl

    return [obj for _, obj in iter_jsonl(path)]


def curation_n(ctx) -> str:
    """What a curation artifact's numbers are over: its gating models and samples (its caption's n)."""
    rep = _json(ctx.curation / "report.json")
    cfg_path = ctx.curation / "config.json"
    gating = _json(cfg_path).get("gating_models", []) if cfg_path.is_file() else []
    names = [":".join(x for x in (g.get("backend"), g.get("model")) if x) for g in gating if isinstance(g, dict)]
    tot = rep.get("totals", {})
    return (
        f"curated by the gating models {', '.join(names) or '(see config.json)'}; "
        f"n = {tot.get('input', 0)} input samples, {tot.get('stage3_oracle', 0)} kept"
    )


def retained_per_source(ctx) -> pd.DataFrame:
    rep = _json(ctx.curation / "report.json")
    rows = []
    for src, r in sorted(rep["per_source"].items(), key=lambda kv: -kv[1].get("stage3_oracle", 0)):
        rows.append(
            {
                "source": src,
                "input": r.get("input", 0),
                "samples": r.get("stage3_oracle", 0),
                "retained_pct": 100.0 * r.get("stage3_oracle", 0) / max(r.get("input", 0), 1),
            }
        )
    tot = rep["totals"]
    rows.append(
        {
            "source": "all",
            "input": tot.get("input", 0),
            "samples": tot.get("stage3_oracle", 0),
            "retained_pct": 100.0 * tot.get("stage3_oracle", 0) / max(tot.get("input", 0), 1),
        }
    )
    return pd.DataFrame(rows)


def category_of(sample) -> str:
    m = sample.metadata
    return str(m.get("category") or m.get("slot") or m.get("question_type") or sample.source or "?")


def _input_samples(curation: Path) -> list:
    from mmrag.benchmarks import load_benchmark

    cfg = _json(curation / "config.json")
    ref = cfg["benchmark"]
    samples = list(load_benchmark(ref["name"], ref.get("source"), **(ref.get("options") or {})).samples())
    return samples[: cfg["limit"]] if cfg.get("limit") else samples


def category_shift(ctx) -> pd.DataFrame:
    samples = _input_samples(ctx.curation)
    kept = {r["sample_id"] for r in _rows(ctx.curation / "stage3_oracle.jsonl") if r["kept"]}
    before = pd.Series([category_of(s) for s in samples]).value_counts()
    after = pd.Series([category_of(s) for s in samples if s.id in kept], dtype=object).value_counts()
    cats = sorted(before.index, key=lambda c: (-before[c], c))
    rows = []
    for c in cats:
        b, a = int(before.get(c, 0)), int(after.get(c, 0))
        bp, ap = 100.0 * b / max(len(samples), 1), 100.0 * a / max(len(kept), 1)
        rows.append(
            {"category": c, "n_before": b, "n_after": a, "before_pct": bp, "after_pct": ap, "shift_pp": ap - bp}
        )
    return pd.DataFrame(rows)


def draw_category_shift(ctx):
    data = category_shift(ctx)
    with rc_context(STYLE):
        fig = Figure(figsize=(11, 3.6), layout="constrained")
        axes = fig.subplots(1, 3)
        y = range(len(data))
        for ax, col, title, colour in (
            (axes[0], "before_pct", "Sources (before curation)", color_of(0)),
            (axes[1], "after_pct", "After curation", color_of(1)),
        ):
            ax.barh(list(y), data[col], color=colour)
            ax.set_yticks(list(y), data["category"])
            ax.invert_yaxis()
            ax.set_title(title)
            ax.set_xlabel("% of samples")
        axes[2].barh(
            list(y), data["shift_pp"], color=[color_of(2) if v >= 0 else color_of(1) for v in data["shift_pp"]]
        )
        axes[2].set_yticks(list(y), data["category"])
        axes[2].invert_yaxis()
        axes[2].axvline(0, color="black", lw=0.8)
        axes[2].set_title("Shift (after − before)")
        axes[2].set_xlabel("percentage points")
    return drawn(fig, data)


def incremental_gating(ctx) -> pd.DataFrame:
    rows = _rows(ctx.curation / "stage1_parametric.jsonl")
    if not rows:
        raise InputError("the curation's Stage I has no rows", path=ctx.curation / "stage1_parametric.jsonl")
    models = list(rows[0]["outcomes"])
    n = len(rows)
    out = []
    for k in range(len(models) + 1):
        first = models[:k]
        kept = [r for r in rows if not any(r["outcomes"].get(m) == "correct" for m in first)]
        pairs = [r["outcomes"].get(m) == "correct" for r in kept for m in models]
        out.append(
            {
                "k": k,
                "added_model": models[k - 1] if k else "",
                "remaining": len(kept),
                "removed_pct": 100.0 * (n - len(kept)) / n,
                "parametric_accuracy": 100.0 * sum(pairs) / len(pairs) if pairs else float("nan"),
            }
        )
    return pd.DataFrame(out)


def short_model(name: str) -> str:
    """A gating model's tick label: its name without the backend prefix and the options fingerprint."""
    return name.split("@", 1)[0].removeprefix("baseline:")


def draw_incremental_gating(ctx):
    data = incremental_gating(ctx)
    with rc_context(STYLE):
        fig = Figure(figsize=(6.5, 3.6), layout="constrained")
        ax = fig.subplots()
        ax.plot(
            data["k"],
            data["parametric_accuracy"],
            marker="o",
            color=color_of(0),
            label="parametric accuracy of the gating models on what remains (%)",
        )
        ax.plot(data["k"], data["removed_pct"], marker="s", ls="--", color=color_of(1), label="samples removed (%)")
        ax.set_xticks(
            list(data["k"]), ["none", *[f"+{short_model(m)}" for m in data["added_model"][1:]]], rotation=20, ha="right"
        )
        ax.set_xlabel("gating models in Stage I")
        ax.set_ylim(0, 100)
        ax.set_ylabel("%")
        fig.legend(loc="outside lower center", ncol=1, frameon=False)
    return drawn(fig, data)
