"""Writing a paper's artifacts and its ``paper.md`` index (see :mod:`mmrag.reports.paper`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.errors import InputError
from mmrag.reports.paper import Context, Paper
from mmrag.reports.paper.cells import rounded
from mmrag.reports.paper.published import compare, paper_models, published
from mmrag.reports.render import to_markdown, write_csv
from mmrag.util import atomic_write_text


def _md(title: str, note: str, t: pd.DataFrame, digits: int = 1) -> str:
    head = [f"# {title}", ""]
    if note:
        head += [f"_{note}_", ""]
    return "\n".join(head + [to_markdown(rounded(t, digits)) if len(t) else "_no rows_", ""])


def write_all(
    paper: Paper, ctx: Context, out: Path, *, paper_model: str | None = None, model: str | None = None
) -> dict[str, Any]:
    from mmrag.reports.plotkit import save_figure

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder ({exc.strerror})", path=out) from None
    if paper_model is not None and paper_model not in paper_models(paper.data_file):
        raise InputError(
            f"'{paper_model}' has no published rows in {paper.name}; models with rows: "
            f"{', '.join(paper_models(paper.data_file))}",
            field="--paper-model",
        )
    index: dict[str, Any] = {}
    for a in paper.artifacts:
        why = a.missing(ctx)
        if why:
            index[a.id] = {"made": False, "files": [], "why": why, "title": a.title, "kind": a.kind}
            continue
        assert a.build is not None  # missing() said why not otherwise
        built = a.build(ctx)
        files: list[Path] = []
        if a.kind == "table":
            table = built
            files.append(write_csv(table, out / f"{a.id}.csv"))
            atomic_write_text(
                out / f"{a.id}.md", _md(f"{paper.name} {a.id.replace('_', ' ').title()}: {a.title}", a.note, table)
            )
            files.append(out / f"{a.id}.md")
        else:
            files += save_figure(built, out, a.id)
            table = built.data
            files.append(write_csv(table, out / f"{a.id}.csv"))
        if paper_model is not None:
            cmp = compare(paper.data_file, a.id, table, paper_model, model)
            if len(cmp):
                files.append(write_csv(cmp, out / f"{a.id}_vs_paper.csv"))
                atomic_write_text(
                    out / f"{a.id}_vs_paper.md",
                    _md(
                        f"{a.id}: {paper_model} (published) vs {model or 'ours'}",
                        f"published: {cmp['paper'].iloc[0]}, {a.id}; diff = ours - published "
                        "(percentage points); ours with its 95% interval",
                        cmp.drop(columns=["paper", "table"]),
                        digits=2,
                    ),
                )
                files.append(out / f"{a.id}_vs_paper.md")
        index[a.id] = {"made": True, "files": [p.name for p in files], "why": "", "title": a.title, "kind": a.kind}
    atomic_write_text(out / "paper.md", _index_md(paper, index, paper_model, model))
    return index


def _index_md(paper: Paper, index: dict[str, Any], paper_model: str | None, model: str | None) -> str:
    made = sum(1 for v in index.values() if v["made"])
    data = published(paper.data_file)
    lines = [
        f"# {paper.title}",
        "",
        f"{paper.citation}. Every table and figure of the paper, made here or not "
        f"and why ({made} of {len(index)} made). Numbers are percentages with 95 % question-clustered "
        "bootstrap intervals in the CSV files (`_lo`, `_hi`); a figure's CSV holds the numbers it draws.",
        "",
    ]
    if paper_model:
        lines += [
            f"Published numbers of **{paper_model}** beside {model or 'ours'}: `*_vs_paper.md` "
            f"(source: {data['paper']}).",
            "",
        ]
    else:
        lines += [
            f"Published rows shipped for: {', '.join(paper_models(paper.data_file))} "
            "(`--paper-model NAME` puts them beside yours).",
            "",
        ]
    lines += ["| item | title | made | files or why not |", "| --- | --- | --- | --- |"]
    for aid, v in index.items():
        what = " · ".join(f"[{f}]({f})" for f in v["files"]) if v["made"] else v["why"]
        lines.append(f"| {aid.replace('_', ' ').title()} | {v['title']} | {'yes' if v['made'] else 'no'} | {what} |")
    return "\n".join(lines + [""])
