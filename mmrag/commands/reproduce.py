"""``mmrag reproduce deflectionbench|humblebench|knowhal --model M --out DIR``: every table and
figure of a paper from one resumable sweep.

``DIR/run/`` is one run over every preset the paper's tables and figures need (the sweep engine
skips the cells already there, so running the command again only fills what is missing);
``DIR/curation/`` is the curation with ``--gating-model`` (VLM-DeflectionBench's Table 2 and
Figures 4-5); the tables, figures and ``paper.md`` are written into ``DIR`` itself.  The work is in
:mod:`mmrag.reports.paper`; this module only parses flags and wires the run.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from mmrag.commands._console import console
from mmrag.errors import InputError


def run_paper(
    paper_name: str,
    *,
    models: list[str],
    out: Path,
    benchmark: str | None = None,
    source: str | None = None,
    limit: int | None = None,
    gating_models: list[str] | None = None,
    k_min: int = 5,
    judge: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    paper_model: str | None = None,
) -> dict:
    """Run (or resume) every preset of ``paper_name`` into ``out/run``, curate with
    ``gating_models`` into ``out/curation`` when given, then write the paper's artifacts into ``out``."""
    from mmrag.commands.run import run_and_print
    from mmrag.models import parse_model_arg
    from mmrag.reports.paper import get_paper, write_paper
    from mmrag.runs.config import BenchmarkRef, JudgeConfig, RunConfig
    from mmrag.runs.frame import load

    paper = get_paper(paper_name)
    if not models:
        raise InputError("give --model BACKEND:MODEL or a baseline name", field="--model")
    if gating_models and not paper.curates:
        raise InputError(
            f"--gating-model applies to a paper with a curation pipeline, not {paper.name}", field="--gating-model"
        )
    ref = BenchmarkRef(name=benchmark or paper.demo_benchmark, source=source)
    cfg = RunConfig(
        benchmarks=[ref],
        models=[parse_model_arg(m, base_url=base_url, api_key_env=api_key_env) for m in models],
        sweeps=list(paper.presets),
        limit=limit,
        judge=JudgeConfig.model_validate({"mode": judge or "rule"}),
    )
    run_dir = out / "run"
    run_and_print(cfg, run_dir, title=f"mmrag reproduce {paper.name}")
    curation = None
    if gating_models:
        from mmrag.curation import curate
        from mmrag.curation.config import CurateConfig

        curation = out / "curation"
        ccfg = CurateConfig(
            benchmark=ref,
            gating_models=[parse_model_arg(m, base_url=base_url, api_key_env=api_key_env) for m in gating_models],
            judge=JudgeConfig.model_validate({"mode": judge or "rule"}),
            limit=limit,
            k_min=k_min,
        )
        rep = curate(ccfg, curation)
        console.print(
            f"curation: {rep['totals'].get('stage3_oracle', 0)} of {rep['totals'].get('input', 0)} "
            f"samples kept -> {curation}"
        )
    df = load(run_dir)
    names = sorted(df["model"].unique()) if len(df) else []
    return write_paper(
        paper.name,
        df,
        out,
        curation=curation,
        run_dirs=(run_dir,),
        paper_model=paper_model,
        model=names[0] if len(names) == 1 else None,
    )


def print_index(index: dict, out: Path) -> None:
    made = [k for k, v in index.items() if v["made"]]
    console.print(
        f"[green]paper:[/green] {out / 'paper.md'}  ({len(made)} of {len(index)} tables and figures made: "
        f"{', '.join(made) or 'none'})"
    )


def reproduce(
    paper: str = typer.Argument(..., help="deflectionbench | humblebench | knowhal"),
    model: list[str] = typer.Option(
        ..., "--model", "-m", help="BACKEND:MODEL, a baseline name or sim-vlm[:...]; repeatable"
    ),
    out: Path = typer.Option(..., "--out", "-o", help="folder for the run, the tables, the figures and paper.md"),
    benchmark: str | None = typer.Option(
        None, "--benchmark", "-b", help="benchmark name (default: the demo world's benchmark of the paper's family)"
    ),
    source: str | None = typer.Option(None, "--source", help="data path of the benchmark"),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="use only the first N samples (per benchmark; every preset cell runs on them)"
    ),
    gating_model: list[str] = typer.Option(
        [],
        "--gating-model",
        help="gating model of the curation (deflectionbench: Table 2, Figures 4-5); repeatable, in order",
    ),
    k_min: int = typer.Option(5, "--k-min", min=0, help="negatives a sample must keep through curation (paper: 5)"),
    paper_model: str | None = typer.Option(
        None,
        "--paper-model",
        help="a model of the paper: line its published numbers up with yours, one by one, with the difference "
        "(every table lists all published rows anyway)",
    ),
    judge: str | None = typer.Option(None, "--judge", help="rule | llm | rule+llm (default rule)"),
    base_url: str | None = typer.Option(None, "--base-url", help="base URL of an OpenAI-compatible server"),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="environment variable holding the API key"),
) -> None:
    """Every table and figure of a paper: one resumable sweep, the paper's tables and figures, paper.md."""
    from mmrag.commands._run_config import split_models

    t0 = time.perf_counter()
    index = run_paper(
        paper,
        models=split_models(model),
        out=out,
        benchmark=benchmark,
        source=source,
        limit=limit,
        gating_models=split_models(gating_model),
        k_min=k_min,
        judge=judge,
        base_url=base_url,
        api_key_env=api_key_env,
        paper_model=paper_model,
    )
    print_index(index, out)
    console.print(f"reproduce {paper}: {time.perf_counter() - t0:.1f}s")
