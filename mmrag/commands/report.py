"""``mmrag report RUN_DIR [RUN_DIR ...] [--out DIR]`` and ``mmrag browse RUN_DIR``: read finished
(or running) runs into tables, figures and the sample browser.  Parsing only; the work is in
:mod:`mmrag.reports`."""

from __future__ import annotations

from pathlib import Path

import typer

from mmrag.commands._console import console
from mmrag.errors import InputError


def report(
    run_dirs: list[Path] = typer.Argument(..., help="one or more run directories (mmrag run --out DIR)"),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="report folder (default RUN_DIR/report; required with several runs)"
    ),
    level: float = typer.Option(0.95, "--level", help="confidence level of every interval"),
    n_boot: int = typer.Option(1000, "--n-boot", help="bootstrap resamples per interval"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed (same seed, same numbers)"),
    browser: bool = typer.Option(True, "--browser/--no-browser", help="also write the HTML sample browser of each run"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="do not print the tables"),
    by: str | None = typer.Option(
        None,
        "--by",
        help="KNOB[,KNOB]: a table of the rates crossed by one or two knobs or record columns "
        "(n_distractors,negative_modality) and a figure with a panel per value of the second",
    ),
    paper: str | None = typer.Option(
        None,
        "--paper",
        help="deflectionbench | humblebench | knowhal: write that "
        "paper's tables, figures and paper.md instead (default --out RUN_DIR/paper)",
    ),
    paper_model: str | None = typer.Option(
        None, "--paper-model", help="with --paper: a model of the paper, its published numbers beside yours"
    ),
    curation: Path | None = typer.Option(
        None, "--curation", help="with --paper deflectionbench: an `mmrag curate` folder (Table 2, Figures 4-5)"
    ),
) -> None:
    """Tables with confidence intervals, paired tests, PNG/SVG figures and report.md."""
    from mmrag.labels.report import corrected_section
    from mmrag.reports import CIOptions
    from mmrag.reports import report as make_report

    if not 0.5 <= level < 1.0:
        raise InputError(f"must be in [0.5, 1), got {level}", field="--level")
    if n_boot < 100:
        raise InputError(f"use at least 100 resamples, got {n_boot}", field="--n-boot")
    if paper is None and (paper_model or curation):
        raise InputError("--paper-model and --curation go with --paper NAME", field="--paper")
    if paper is not None:
        from mmrag.commands.reproduce import print_index
        from mmrag.reports.paper import write_paper
        from mmrag.runs.frame import load

        if out is None and len(run_dirs) > 1:
            raise InputError("several runs: say where the paper's tables go with --out DIR", field="--out")
        target = out or run_dirs[0] / "paper"
        df = load(run_dirs)
        from mmrag.outdir import claim

        claim(target, "paper", check=out is not None)  # --out: never into a folder of other files
        names = sorted(df["model"].unique()) if len(df) else []
        index = write_paper(
            paper,
            df,
            target,
            opts=CIOptions(level=level, n_boot=n_boot, seed=seed),
            curation=curation,
            run_dirs=tuple(run_dirs),
            paper_model=paper_model,
            model=names[0] if len(names) == 1 else None,
        )
        print_index(index, target)
        return
    paths = make_report(
        run_dirs,
        out,
        opts=CIOptions(level=level, n_boot=n_boot, seed=seed),
        browser=browser,
        console=None if quiet else console,
        sections=(corrected_section,),  # the judge-corrected rates of labelled runs
        by=by,
    )
    md = next(p for p in paths if p.name == "report.md")
    console.print(f"[green]report:[/green] {md}  ({len(paths)} files)")


def browse(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    out: Path | None = typer.Option(None, "--out", "-o", help="HTML file to write (default RUN_DIR/browser.html)"),
    max_side: int = typer.Option(384, "--max-side", help="downscale images to this many pixels on the longer side"),
    max_image_mb: float = typer.Option(
        48.0, "--max-image-mb", help="stop embedding images past this size (0 = no limit)"
    ),
) -> None:
    """Write the run's self-contained HTML sample browser."""
    from mmrag.reports import write_browser

    if max_side < 16:
        raise InputError(f"must be at least 16, got {max_side}", field="--max-side")
    limit = None if max_image_mb <= 0 else int(max_image_mb * 1024 * 1024)
    path = write_browser(run_dir, out, max_side=max_side, max_image_bytes=limit)
    console.print(f"[green]browser:[/green] {path}")
