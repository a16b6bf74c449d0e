"""The corrected rates in a run's ``summary.json`` / ``summary.md`` (when the run has labels).

Labels build on runs, never the reverse: :mod:`mmrag.runs.summary` writes a run's summary without
them, and :func:`refresh_summary` adds the corrected rates to it after a run, a re-scoring or
labelling (the CLI and :mod:`mmrag.api` call it), keeping everything else in it.
:func:`judge_corrected` computes them over the records the summary measures (failed requests left
out as there); :func:`corrected_markdown` gives the summary.md lines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmrag.labels.rates import corrected_rates, run_has_labels
from mmrag.labels.store import HUMAN_LABELS
from mmrag.labels.store import load as load_labels

KEY = "judge_corrected"
#: summary.json key of who settled the replies (rule, LLM, person), written where labels exist
SETTLED = "settled_by"
_BY = ("benchmark", "scenario_id", "model")


def _fmt(x: float | None) -> str:
    return "—" if x is None or x != x else f"{x:.1f}"


def judge_corrected(
    run_dir: str | Path, records: Sequence[Any], *, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """``{"judge_corrected": {...}}`` for a run with labels, else ``{}``."""
    if not run_has_labels(run_dir):
        return {}
    labels = load_labels(run_dir)
    if labels.empty:
        return {}
    from mmrag.runs.frame import frame_from_records

    df = frame_from_records([r for r in records if r.response.error is None])
    if df.empty:
        return {}
    table = corrected_rates(df, labels, by=_BY, n_boot=n_boot, seed=seed)
    labels_of = dict(zip(df["scenario_id"], df["scenario"]))
    groups = []
    for row in table.to_dict("records"):
        groups.append(
            {
                "benchmark": row["benchmark"],
                "scenario_id": row["scenario_id"],
                "scenario": labels_of.get(row["scenario_id"]),
                "model": row["model"],
                "n": int(row["n"]),
                "coverage": row["coverage"],
                "confusion": row["confusion"],
                "rates": {
                    t: {
                        "judged": row[t],
                        "value": row[f"{t}_corrected"],
                        "ci": [row[f"{t}_corrected_lo"], row[f"{t}_corrected_hi"]],
                        "clipped": bool(row[f"{t}_clipped"]),
                    }
                    for t in HUMAN_LABELS
                },
            }
        )
    a = table.attrs
    from mmrag.labels.settled import settled_groups

    return {
        KEY: {
            "method": a["method"],
            "assumption": a["assumption"],
            "labeller": a["labeller"],
            "n_labels": a["n_labels"],
            "confusion_groups": a["confusion_groups"],
            "level": a["level"],
            "groups": groups,
        },
        SETTLED: settled_groups(records, labels),
    }


def settled_section(groups: Sequence[dict[str, Any]] | None, heading: str = "##") -> list[str]:
    """The "who settled the replies" markdown (summary.md and report.md), empty without groups."""
    from mmrag.labels.settled import settled_markdown

    if not groups:
        return []
    return [
        "",
        f"{heading} Who settled the replies",
        "",
        "Every response (failed requests left out), by who decided it: the rules, the LLM judge, a "
        "person's label where the rules left it undecided (`mmrag label RUN --undecided`), nobody yet "
        "(still undecided), or not judged (cut off, empty). See docs/labelling.md.",
        "",
        *settled_markdown(groups),
    ]


def corrected_markdown(summary: dict[str, Any]) -> list[str]:
    """The summary.md sections (empty when the summary has no corrected rates)."""
    jc = summary.get(KEY)
    if not jc:
        return []
    lines = [
        "",
        "## Rates corrected for judge error",
        "",
        f"{jc['n_labels']} labels by {jc['labeller']}; {jc['method']}. Assumption: {jc['assumption']}. "
        f"Brackets: {jc['level']:.0%} bootstrap interval over the labels and the run's questions; "
        "† clipped into [0, 100]. See docs/labelling.md.",
        "",
        "| benchmark | scenario | model | n | coverage % | "
        + " | ".join(f"{t} judged → corrected" for t in HUMAN_LABELS)
        + " | confusion |",
        "| --- | --- | --- | ---: | ---: | " + " | ".join("---:" for _ in HUMAN_LABELS) + " | --- |",
    ]
    for g in jc["groups"]:
        cells = []
        for t in HUMAN_LABELS:
            r = g["rates"][t]
            cells.append(
                f"{_fmt(r['judged'])} → {_fmt(r['value'])} [{_fmt(r['ci'][0])}, {_fmt(r['ci'][1])}]"
                + (" †" if r["clipped"] else "")
            )
        lines.append(
            f"| {g['benchmark']} | {g['scenario'] or g['scenario_id']} | {g['model']} | {g['n']} | "
            f"{_fmt(g['coverage'])} | " + " | ".join(cells) + f" | {g['confusion']} |"
        )
    return lines + settled_section(summary.get(SETTLED))


def refresh_summary(run_dir: str | Path) -> dict[str, Any] | None:
    """Recompute the corrected rates of an existing summary (after a run, a re-scoring or
    labelling); the summary rewritten, or None when the run has no labels or no summary."""
    from mmrag.runs.frame import read_records
    from mmrag.runs.summary import summary_markdown
    from mmrag.util import atomic_write_json, atomic_write_text

    path = Path(run_dir) / "summary.json"
    if not path.exists() or not run_has_labels(run_dir):
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None  # a summary we cannot read is the run's business, not the labels'
    summary.pop(KEY, None)
    summary.pop(SETTLED, None)
    summary.update(judge_corrected(run_dir, [r for r in read_records(run_dir) if r.response.error is None]))
    atomic_write_json(path, summary)
    atomic_write_text(Path(run_dir) / "summary.md", summary_markdown(summary, corrected_markdown(summary)))
    return summary


def with_corrected(run_dir: str | Path, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` (a run's, as just written by a run or a re-scoring) with the judge-corrected
    rates and who settled the replies when the run has labels, summary.json and summary.md rewritten to match."""
    fresh = refresh_summary(run_dir)
    return {**summary, **{k: fresh[k] for k in (KEY, SETTLED) if k in fresh}} if fresh else summary
