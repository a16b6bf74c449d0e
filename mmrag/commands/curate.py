"""``mmrag curate --config curate.yaml``."""

from __future__ import annotations

from pathlib import Path

import typer

from mmrag.commands._console import console
from mmrag.commands._engine import ADDRESS, ENGINE, REPLICAS, engine_scope
from mmrag.commands.judge import JudgeBaseUrlOpt, JudgeKeyEnvOpt, JudgeModelOpt, judge_config


def curate(
    config: Path = typer.Option(
        ..., "--config", help="curate.yaml (CurateConfig; e.g. mmrag/configs/curate.demo.yaml)"
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="folder for the curated benchmark (default: the config's out, else a new folder under MMRAG_HOME)",
    ),
    judge: str | None = typer.Option(None, "--judge", help="rule | llm | rule+llm (over the config's)"),
    judge_model: str | None = JudgeModelOpt,
    judge_base_url: str | None = JudgeBaseUrlOpt,
    judge_api_key_env: str | None = JudgeKeyEnvOpt,
    engine: str = ENGINE,
    address: str | None = ADDRESS,
    replicas: int | None = REPLICAS,
) -> None:
    """Re-curate a DeflectionBench-format benchmark: keep only samples that truly need retrieval."""
    from mmrag.curation import curate as run_curation
    from mmrag.curation import load_curate_config
    from mmrag.runs.engine import default_run_dir

    cfg = load_curate_config(config)
    cfg.judge = judge_config(judge, judge_model, judge_base_url, judge_api_key_env, base=cfg.judge)
    target = out or (Path(cfg.out) if cfg.out else default_run_dir("curation"))
    with engine_scope(engine, address, replicas):
        report = run_curation(cfg, target)
    console.print((target / "report.md").read_text(encoding="utf-8"))
    console.print(f"survivors: {report['totals'].get('stage3_oracle', 0)} -> {target / 'curated.jsonl'}")
