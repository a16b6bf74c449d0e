"""Writing a paper's artifacts and its ``paper.md`` index (see :mod:`mmrag.reports.paper`).

Every table is written with the paper's published rows under ours (``origin`` column), and every
table, figure and ``paper.md`` says what produced our numbers (:mod:`.provenance`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from mmrag.errors import InputError
from mmrag.reports.paper import Artifact, Context, Paper
from mmrag.reports.paper.cells import BESIDE_NOTE, FEW_NOTE, has_few, rounded
from mmrag.reports.paper.provenance import Provenance, n_text, provenance, wrapped
from mmrag.reports.paper.published import compare, paper_models, published, stacked, table_rows
from mmrag.reports.render import to_markdown, write_csv
from mmrag.util import atomic_write_text

SUBTITLE_POINTS = 8.0


def _md(title: str, notes: list[str], t: pd.DataFrame, digits: int = 1) -> str:
    head = [f"# {title}", ""]
    for note in notes:
        if note:
            head += [f"_{note}_", ""]
    body = [to_markdown(rounded(t, digits)) if len(t) else "_no rows_", ""]
    return "\n".join(head + body + ([f"_{FEW_NOTE}_", ""] if has_few(t) else []))


def artifact_rows(paper: Paper, a: Artifact, ctx: Context) -> pd.DataFrame:
    """The run rows an artifact reads (its presets' cells; all of the paper's family without presets)."""
    if a.presets:
        return ctx.rows(a.presets)
    df = ctx.df
    return df[df["benchmark_kind"] == paper.family] if "benchmark_kind" in df.columns else df


def published_note(paper: Paper, a: Artifact) -> str:
    """What the published rows of an artifact are, or '' when the paper gives none for it."""
    keys, rows = table_rows(paper.data_file, a.id)
    if not rows:
        return ""
    what = f"the paper's models on the paper's data, judged by {paper.judge}" if "model" in keys else "the paper's data"
    return (
        f"Rows with origin `published`: {published(paper.data_file)['paper']}, {a.id.replace('_', ' ').title()}, "
        f"as printed: {what}; no interval or n of ours."
    )


def finish_figure(fig, caption: str):
    """``fig`` with ``caption`` as its subtitle (wrapped to its width; the figure grows to hold it)."""
    w, h = fig.get_size_inches()
    text = wrapped(caption, w, SUBTITLE_POINTS)
    fig.set_size_inches(w, h + 0.17 * (text.count("\n") + 1))
    fig.suptitle(text, fontsize=SUBTITLE_POINTS, ha="center")
    return fig


def caption_of(paper: Paper, a: Artifact, ctx: Context, prov: Provenance) -> str:
    """The one-line caption of an artifact: what its numbers are (data, model, judge, n)."""
    return prov.caption(a.n_of(ctx) if a.n_of is not None else n_text(artifact_rows(paper, a, ctx)))


def build_figure(paper: Paper, a: Artifact, ctx: Context, prov: Provenance):
    """Artifact ``a`` (a figure) drawn and captioned, as it is saved."""
    assert a.build is not None  # missing() said why not otherwise
    return finish_figure(a.build(ctx), caption_of(paper, a, ctx, prov))


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
    prov = provenance(ctx.run_dirs, ctx.df, demo_benchmark=paper.demo_benchmark, paper_judge=paper.judge)
    index: dict[str, Any] = {}
    for a in paper.artifacts:
        why = a.missing(ctx)
        if why:
            index[a.id] = {"made": False, "files": [], "why": why, "title": a.title, "kind": a.kind}
            continue
        assert a.build is not None  # missing() said why not otherwise
        title = f"{paper.name} {a.id.replace('_', ' ').title()}: {a.title}"
        caption = caption_of(paper, a, ctx, prov)
        files: list[Path] = []
        if a.kind == "table":
            table = a.build(ctx)
            shown = stacked(paper.data_file, a.id, table)
            files.append(write_csv(shown, out / f"{a.id}.csv"))
            beside = BESIDE_NOTE if any(c.endswith("unparseable") for c in table.columns) else ""
            notes = [caption, a.note, beside, published_note(paper, a)]
            atomic_write_text(out / f"{a.id}.md", _md(title, notes, shown))
            files.append(out / f"{a.id}.md")
        else:
            fig = build_figure(paper, a, ctx, prov)
            files += save_figure(fig, out, a.id)
            table = fig.data
            files.append(write_csv(table, out / f"{a.id}.csv"))
            if a.numbers is not None:
                atomic_write_text(out / f"{a.id}.md", _md(title, [caption, a.note], a.numbers(ctx)))
                files.append(out / f"{a.id}.md")
        if paper_model is not None:
            files += _write_vs_paper(paper, a, table, out, paper_model, model, prov, caption)
        index[a.id] = {
            "made": True,
            "files": [p.name for p in files],
            "why": "",
            "title": a.title,
            "kind": a.kind,
            "note": a.note,
        }
    atomic_write_text(out / "paper.md", _index_md(paper, index, prov, paper_model, model))
    return index


def _write_vs_paper(
    paper: Paper,
    a: Artifact,
    table: pd.DataFrame,
    out: Path,
    paper_model: str,
    model: str | None,
    prov: Provenance,
    caption: str,
) -> list[Path]:
    cmp = compare(paper.data_file, a.id, table, paper_model, model)
    if not len(cmp):
        return []
    notes = [
        f"published: {cmp['paper'].iloc[0]}, {a.id}, judged by {paper.judge}; diff = ours - published "
        "(percentage points); ours with its 95% interval and n, the number of items our value is a share of.",
        caption,
    ]
    if prov.demo or any(m.simulated for m in prov.models):
        notes.append(
            "Not comparable: our data, model or judge is not the paper's, so a difference is not a reproduction error."
        )
    atomic_write_text(
        out / f"{a.id}_vs_paper.md",
        _md(
            f"{a.id}: {paper_model} (published) beside {model or 'ours'}",
            notes,
            cmp.drop(columns=["paper", "table"]),
            digits=2,
        ),
    )
    return [write_csv(cmp, out / f"{a.id}_vs_paper.csv"), out / f"{a.id}_vs_paper.md"]


def _index_md(paper: Paper, index: dict[str, Any], prov: Provenance, paper_model: str | None, model: str | None) -> str:
    made = sum(1 for v in index.values() if v["made"])
    data = published(paper.data_file)
    lines = [
        f"# {paper.title}",
        "",
        f"{paper.citation}. Every table and figure of the paper, made here or not "
        f"and why ({made} of {len(index)} made). Numbers are percentages with 95 % question-clustered "
        "bootstrap intervals in the CSV files (`_lo`, `_hi`) and the number of items each is a share of "
        f"(`_n`); a figure's CSV holds the numbers it draws. {FEW_NOTE}",
        "",
        "## What these numbers are",
        "",
        *prov.lines(),
        "",
        f"Every table with published numbers lists our rows first (`origin` = ours), then the paper's rows "
        f"(`origin` = published; source: {data['paper']}) in the same columns. Published rows shipped for: "
        f"{', '.join(paper_models(paper.data_file))}."
        + (
            f" `*_vs_paper.md` lines up **{paper_model}** with {model or 'ours'}, number by number."
            if paper_model
            else " `--paper-model NAME` adds a number-by-number comparison with one of them."
        ),
        "",
        "## Tables and figures",
        "",
        "| item | title | made | files or why not |",
        "| --- | --- | --- | --- |",
    ]
    for aid, v in index.items():
        what = " · ".join(f"[{f}]({f})" for f in v["files"]) if v["made"] else v["why"]
        if v.get("note"):  # the paper's protocol and mmrag's choices for this item
            what += f" — {v['note']}"
        lines.append(f"| {aid.replace('_', ' ').title()} | {v['title']} | {'yes' if v['made'] else 'no'} | {what} |")
    return "\n".join(lines + [""])
