"""Text for people: the run form of ``mmrag judge-agreement`` and the report's corrected-rates
section (``mmrag report`` calls :func:`corrected_section` for every run that has labels)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.labels.correct import MIN_LABELS
from mmrag.labels.store import HUMAN_LABELS
from mmrag.metrics.agreement import format_block

REPORT_BY = ("benchmark", "model", "kind", "scenario")


def _ci(r: dict[str, Any], name: str, fmt: str) -> str:
    lo, hi = (r.get("ci") or {}).get(name, (None, None))
    return "" if lo is None else f" [{lo:{fmt}}, {hi:{fmt}}]"


def format_run_agreement(result: dict[str, Any]) -> str:
    """The plain-text report of :func:`mmrag.labels.agreement` (people are rows, the judge columns)."""
    lines = [
        f"labels by {result['labeller']}: {result['n']} replies of a run of {result['n_run']} responses; "
        f"judge coverage on the run {result['coverage_run']:.1f}% (not unparseable)"
    ]
    for ia in result.get("inter_annotator", []):
        lines.append(
            f"inter-annotator {ia['a']} vs {ia['b']}: n={ia['n']}  agreement={ia['agreement']:.1f}%  "
            f"kappa={ia['kappa']:.3f}"
        )
    lines.append("")

    def one(title: str, r: dict[str, Any]) -> None:
        format_block(lines, title, r, "people", "judge")
        if "kappa_run" in r:
            lines.append(
                f"  re-weighted to the run: agreement={r['agreement_run']:.1f}%{_ci(r, 'agreement_run', '.1f')}"
                f"  kappa={r['kappa_run']:.3f}{_ci(r, 'kappa_run', '.3f')}"
            )

    one("overall", result)
    for field, groups in result.get("by", {}).items():
        for value, r in groups.items():
            lines.append("")
            one(f"{field}={value}", r)
    return "\n".join(lines)


def _cell(row: dict[str, Any], t: str) -> str:
    if pd.isna(row[f"{t}_corrected"]):
        return "–"
    return (
        f"{row[t]:.1f} → **{row[f'{t}_corrected']:.1f}** [{row[f'{t}_corrected_lo']:.1f}, "
        f"{row[f'{t}_corrected_hi']:.1f}]" + (" †" if row[f"{t}_clipped"] else "")
    )


def corrected_markdown_table(table: pd.DataFrame, labels_of: dict[str, str] | None = None) -> list[str]:
    by = [c for c in table.columns if c in REPORT_BY]
    head = [
        "| "
        + " | ".join(by)
        + " | n | coverage % | "
        + " | ".join(f"{t} judged → corrected" for t in HUMAN_LABELS)
        + " | confusion |",
        "| "
        + " | ".join("---" for _ in by)
        + " | ---: | ---: | "
        + " | ".join("---:" for _ in HUMAN_LABELS)
        + " | --- |",
    ]
    for row in table.to_dict("records"):
        keys = [str(row[c]) if row[c] is not None and row[c] == row[c] else "–" for c in by]
        head.append(
            "| "
            + " | ".join(keys)
            + f" | {row['n']} | {row['coverage']:.1f} | "
            + " | ".join(_cell(row, t) for t in HUMAN_LABELS)
            + f" | {row['confusion']} |"
        )
    return head


def corrected_section(dirs: Sequence[Path], df: pd.DataFrame, opts, tables_dir: Path, written: list[Path]) -> list[str]:
    """report.md lines (and tables/corrected*.csv|md) for every run that has labels; [] if none."""
    from mmrag.labels.rates import corrected_rates, run_has_labels
    from mmrag.labels.settled import settled_groups
    from mmrag.labels.store import load as load_labels
    from mmrag.labels.summary import settled_section
    from mmrag.reports.render import write_csv
    from mmrag.reports.tables import order_key
    from mmrag.runs.frame import read_records
    from mmrag.util import atomic_write_text

    md: list[str] = []
    for d in dirs:
        if not run_has_labels(d):
            continue
        labels = load_labels(d)
        sub = df[df["run"].isin([d.name, str(d)])]
        if labels.empty or sub.empty:
            continue
        table = corrected_rates(sub, labels, by=REPORT_BY, level=opts.level, n_boot=opts.n_boot, seed=opts.seed)
        a = dict(table.attrs)
        table = table.sort_values(
            [c for c in REPORT_BY if c in table.columns], key=order_key, kind="stable", ignore_index=True
        )  # scenario kinds in the paper's order, as every table
        name = "corrected" if len(dirs) == 1 else f"corrected-{d.name}"
        written.append(write_csv(table, tables_dir / f"{name}.csv"))
        body = corrected_markdown_table(table)
        atomic_write_text(tables_dir / f"{name}.md", "\n".join(body) + "\n")
        written.append(tables_dir / f"{name}.md")
        groups = a["confusion_groups"]
        own = [f"{g} ({n} labels)" for g, n in groups.items() if g != "pooled"]
        basis = (
            f"Per source where a source has at least {a['min_labels']} labels"
            + (f" ({', '.join(own)})" if own else " (none has)")
            + f", otherwise pooled over all {a['n_labels']} labels"
            "; the last column says which."
        )
        md += [
            f"### Rates corrected for judge error ({d.name})"
            if len(dirs) > 1
            else "## Rates corrected for judge error",
            "",
            f"Method: {a['method']} (docs/metrics.md). {a['n_labels']} labels by {a['labeller']} "
            f"(`mmrag label`). Assumption: {a['assumption']}. {basis} Each cell shows the judged rate → the "
            f"corrected rate [{a['level']:.0%} interval from a bootstrap over both the labels and the run's "
            f"questions], percent of all responses; † marks a value clipped into [0, 100]. Coverage: percent of "
            "responses the judge put in one of the three classes.",
            "",
            *body,
            "",
            f"[CSV](tables/{name}.csv)",
            *settled_section(settled_groups(read_records(d), labels), heading="###"),
            "",
        ]
    return md


__all__ = ["MIN_LABELS", "corrected_markdown_table", "corrected_section", "format_run_agreement"]
