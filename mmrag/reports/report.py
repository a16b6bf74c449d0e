"""``report(run_dirs, out_dir)``: every table, paired test, figure and browser of one or more runs.

The output folder is self-contained and never touches the run directories (they may be read-only
or shared)::

    OUT/report.md                 the overview, embedding the figures and the main tables
    OUT/tables/NAME.csv|.md       one per applicable table (numbers with _lo/_hi columns in CSV)
    OUT/tables/paired_*.csv|.md   paired differences between models / scenarios
    OUT/figures/NAME.png|.svg     one per applicable figure
    OUT/browser[-RUN].html        the sample browser of each run

Several runs are concatenated (see :func:`mmrag.runs.frame.load`); a model name that appears in
more than one run is renamed ``model (run)`` so that its runs are compared, not merged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from mmrag.errors import InputError
from mmrag.outdir import claim
from mmrag.reports.browser import write_browser
from mmrag.reports.crossed import parse_by
from mmrag.reports.family import humblebench_panel, knowhal_table
from mmrag.reports.paired import model_differences, scenario_differences
from mmrag.reports.plotkit import PLOTS
from mmrag.reports.plots import make_plots
from mmrag.reports.render import to_markdown, to_rich, write_csv
from mmrag.reports.tables import CIOptions, build_tables
from mmrag.runs.frame import load
from mmrag.util import atomic_write_text

#: How many rows of a paired-difference table report.md shows inline (all are in the CSV / MD).
INLINE_PAIRED_ROWS = 20
_MANIFEST_KEYS = ("created", "created_at", "git_revision", "git", "mmrag_version", "judge_id", "seed")


def disambiguate_models(df: pd.DataFrame) -> pd.DataFrame:
    """Rename a model seen in several runs to ``model (run)``."""
    if df.empty or df["run"].nunique() < 2:
        return df
    runs_per_model = df.groupby("model")["run"].nunique()
    shared = set(runs_per_model[runs_per_model > 1].index)
    if not shared:
        return df
    df = df.copy()
    mask = df["model"].isin(shared)
    df.loc[mask, "model"] = df.loc[mask, "model"] + " (" + df.loc[mask, "run"] + ")"
    return df


def _with_labels(t: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """The scenario label (the one the console and summary.md print) in place of hashed ids; the
    id stays only where two scenarios share a label (they differ in a knob the label omits).  The
    CSV keeps the ids."""
    t = t.copy()
    unique = len(set(labels.values())) == len(labels)
    for col in ("a", "b"):
        if col in t.columns and unique and t[col].isin(list(labels)).all():
            t[col] = t[col].map(labels)
    if "scenario_id" in t.columns:
        if "scenario" not in t.columns:
            t.insert(list(t.columns).index("scenario_id"), "scenario", t["scenario_id"].map(labels))
        if unique:
            t = t.drop(columns="scenario_id")
    return t


def _manifest_lines(run_dirs: Sequence[Path], df: pd.DataFrame) -> list[str]:
    lines = ["| run | records | models | benchmarks | details |", "| --- | ---: | --- | --- | --- |"]
    for d in run_dirs:
        sub = df[df["run"].isin([d.name, str(d)])]
        details = []
        mf = d / "manifest.json"
        if mf.exists():
            try:
                man = json.loads(mf.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise InputError(f"unreadable manifest ({exc})", path=mf) from None
            details = [
                f"{k}={man[k]}" for k in _MANIFEST_KEYS if isinstance(man, dict) and man.get(k) not in (None, "")
            ]
        lines.append(
            f"| {d} | {len(sub)} | {', '.join(sorted(sub['model'].unique()))} | "
            f"{', '.join(sorted(sub['benchmark'].unique()))} | {'; '.join(details)} |"
        )
    return lines


def _crossed_section(
    df: pd.DataFrame, knobs: list[str], opts: CIOptions, out: Path, written: list[Path], labels: dict, console
) -> list[str]:
    """``--by``: the crossed table (tables/by_A_B) and faceted figure (figures/by_A_B), first in report.md."""
    from mmrag.reports.crossed import crossed_table, draw_crossed, pooled_over, pooled_sentence
    from mmrag.reports.plotkit import save_figure

    name = "by_" + "_".join(knobs)
    title = " × ".join(knobs)
    table = crossed_table(df, knobs, opts)
    text = _write_table(table, out / "tables", name, written, labels)
    pooled = pooled_over(df, [*knobs, "model", "kind", "benchmark"])
    note = f"Pooled over {pooled_sentence(pooled)}." if pooled else "Nothing else varies in these rows."
    fig = draw_crossed(df, knobs, opts)
    written += [*save_figure(fig, out / "figures", name), write_csv(fig.data, out / "figures" / f"{name}.csv")]
    if console is not None:
        console.print(to_rich(_with_labels(table, labels), f"Rates by {title}"))
    return [
        f"## By {title}",
        "",
        note,
        "",
        text,
        f"[CSV](tables/{name}.csv)",
        "",
        f"![by {title}](figures/{name}.png)",
        "",
        f"[SVG](figures/{name}.svg) · [the numbers drawn (CSV)](figures/{name}.csv)",
        "",
    ]


def run_states(run_dirs: Sequence[Path], frame: pd.DataFrame) -> list:
    """Each run's :class:`~mmrag.runs.state.RunState` from its rows of ``frame`` (models not yet
    renamed ``model (run)``)."""
    from mmrag.runs.state import frame_state

    out = []
    for d in run_dirs:
        rows = frame[frame["run"].isin([d.name, str(d)])] if len(frame) else frame
        out.append(frame_state(d, rows))
    return out


def _state_lines(states: list, labels: dict[str, str]) -> list[str]:
    """``incomplete: X of Y cells`` for each unfinished run, with the scenarios still to do: a
    scenario missing from the tables below is named here, not silently absent."""
    lines = []
    for st in states:
        if st.notice() is None:
            continue
        lines += [f"> **{st.run}: {st.notice()}.** The tables and figures below show only the cells done.", ""]
        missing = st.missing()
        if missing:
            lines += ["| benchmark | scenario | model | cells done | planned |", "| --- | --- | --- | ---: | ---: |"]
            lines += [
                f"| {b} | {labels.get(sid) or st.labels.get(sid, sid)} | {m} | {done} | {n} |"
                for (b, sid, m), done, n in missing
            ]
            lines.append("")
    return lines


#: columns of a paired-difference table shown in Markdown (the CSV keeps all of them)
PAIRED_MD_COLUMNS = (
    "benchmark",
    "model",
    "scenario_id",
    "a",
    "b",
    "changed",
    "n_pairs",
    "correct_a",
    "correct_b",
    "d_correct",
    "d_correct_lo",
    "d_correct_hi",
    "d_deflection",
    "d_deflection_lo",
    "d_deflection_hi",
    "d_hallucination",
    "d_hallucination_lo",
    "d_hallucination_hi",
    "b01",
    "b10",
    "p_mcnemar",
    "p_holm",
    "p_boot",
)


def _paired_view(df: pd.DataFrame) -> pd.DataFrame:
    return df[[c for c in PAIRED_MD_COLUMNS if c in df.columns]]


def _write_table(df: pd.DataFrame, tables_dir: Path, name: str, written: list[Path], labels: dict[str, str]) -> str:
    written.append(write_csv(df, tables_dir / f"{name}.csv"))
    md = to_markdown(_with_labels(_paired_view(df) if name.startswith("paired_") else df, labels))
    atomic_write_text(tables_dir / f"{name}.md", md)
    written.append(tables_dir / f"{name}.md")
    return md


#: ``(run dirs, frame, opts, tables folder, files written) -> report.md lines``: a section a layer
#: above the reports adds (it appends the files it writes to the list)
ReportSection = Callable[[list[Path], pd.DataFrame, CIOptions, Path, list[Path]], list[str]]


def report(
    run_dirs: str | Path | Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    opts: CIOptions = CIOptions(),
    browser: bool = True,
    console=None,
    sections: Sequence[ReportSection] = (),
    by: str | Sequence[str] | None = None,
) -> list[Path]:
    """Write the report of ``run_dirs`` into ``out_dir`` (default ``RUN_DIR/report`` for one run).

    Returns every file written.  ``console`` (a :class:`rich.console.Console`) also gets the main
    tables printed.  ``sections``: report.md sections a layer above adds after the family tables
    (:func:`mmrag.report` and ``mmrag report`` pass the judge-corrected rates of labelled runs,
    :func:`mmrag.labels.report.corrected_section`; reports never import labels).  ``by``: one or
    two knobs (``"n_distractors,negative_modality"``) for a crossed table and faceted figure
    (:mod:`mmrag.reports.crossed`), written first.
    """
    dirs = [Path(run_dirs)] if isinstance(run_dirs, (str, Path)) else [Path(d) for d in run_dirs]
    if not dirs:
        raise InputError("give at least one run directory")
    explicit = out_dir is not None
    if out_dir is None:
        if len(dirs) > 1:
            raise InputError("several runs: say where the report goes with --out DIR", field="--out")
        out_dir = dirs[0] / "report"
    out = Path(out_dir)
    raw = load(dirs)
    states = run_states(dirs, raw)
    df = disambiguate_models(raw)
    knobs = parse_by(by, df) if by else []
    claim(out, "report", check=explicit)  # --out: never into a folder of other files (a user's report.md)
    try:
        (out / "tables").mkdir(parents=True, exist_ok=True)
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the report folder ({exc.strerror})", path=out) from None
    labels = dict(zip(df["scenario_id"], df["scenario"]))
    written: list[Path] = []
    md = [
        "# mmrag report",
        "",
        *_state_lines(states, labels),
        *_manifest_lines(dirs, df),
        "",
        f"Rates are percentages of samples with {opts.level:.0%} bootstrap confidence intervals clustered by "
        f"question ({opts.n_boot} resamples, seed {opts.seed}); differences are B − A in percentage points "
        "with a paired clustered bootstrap interval and McNemar's exact test on correctness "
        "(p_holm: Holm-adjusted within the table). See docs/reports.md.",
        "",
    ]
    if console is not None:
        for st in states:
            if st.notice():
                console.print(f"[yellow]{st.run}: {st.notice()}[/yellow]")
    if df.empty:
        md += ["_The run has no records yet._", ""]
    else:
        if knobs:
            md += _crossed_section(df, knobs, opts, out, written, labels, console)
        md += ["## Tables", ""]
        for name, (spec, table) in build_tables(df, opts=opts).items():
            text = _write_table(table, out / "tables", name, written, labels)
            md += [f"### {spec.title}", "", text, f"[CSV](tables/{name}.csv)", ""]
            if console is not None and name == "scenario":
                console.print(to_rich(_with_labels(table, labels), spec.title))
        for name, title, table in (
            ("humblebench_stress", "HumbleBench stress settings", humblebench_panel(df, opts)),
            ("knowhal", "KnowHal per dimension (HPS)", knowhal_table(df, opts)),
        ):
            if table.empty:
                continue
            text = _write_table(table, out / "tables", name, written, labels)
            md += [f"### {title}", "", text, f"[CSV](tables/{name}.csv)", ""]
            if console is not None:
                console.print(to_rich(table, title))
        for section in sections:
            md += section(dirs, df, opts, out / "tables", written)
        md += ["## Paired differences", ""]
        for name, title, table in (
            ("paired_models", "Models (B − A, same samples and scenario)", model_differences(df, opts=opts)),
            (
                "paired_scenarios",
                "Scenarios differing in one knob (B − A, same samples and model)",
                scenario_differences(df, opts=opts),
            ),
        ):
            if table.empty:
                md += [f"### {title}", "", "_no comparable pairs in these runs_", ""]
                continue
            _write_table(table, out / "tables", name, written, labels)
            top = table.sort_values(["p_mcnemar", "d_correct"], na_position="last").head(INLINE_PAIRED_ROWS)
            more = (
                f" (the {len(top)} smallest p-values of {len(table)} rows; all in "
                f"[MD](tables/{name}.md) / [CSV](tables/{name}.csv))"
                if len(table) > len(top)
                else f" ([CSV](tables/{name}.csv))"
            )
            md += [
                f"### {title}",
                "",
                f"Comparisons{more}.",
                "",
                to_markdown(_with_labels(_paired_view(top), labels)),
                "",
            ]
        figures = make_plots(df, out / "figures", opts)
        if figures:
            md += ["## Figures", ""]
        for name, paths in figures.items():
            written += paths
            md += [
                f"### {PLOTS[name].title}",
                "",
                f"![{PLOTS[name].title}](figures/{name}.png)",
                "",
                f"[SVG](figures/{name}.svg) · [the numbers drawn (CSV)](figures/{name}.csv)",
                "",
            ]
    if browser:
        md += ["## Sample browser", ""]
        names = [d.name for d in dirs]
        for i, d in enumerate(dirs):
            stem = d.name if names.count(d.name) == 1 else f"{i + 1}-{d.name}"
            target = out / ("browser.html" if len(dirs) == 1 else f"browser-{stem}.html")
            written.append(write_browser(d, out=target))
            md.append(
                f"- [{d.name}]({target.name}): every sample with its images, contexts, prompt, response and verdict"
            )
        md.append("")
    atomic_write_text(out / "report.md", "\n".join(md))
    written.append(out / "report.md")
    return written
