"""``mmrag score RUN_DIR --judge ...`` (re-judge a saved run) and ``mmrag score humblebench
--predictions FILE`` (the official HumbleBench metrics of a results file)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from mmrag.commands._console import console, results_table


def score(
    target: str = typer.Argument(..., help="a run directory, or 'humblebench' to score a predictions file"),
    predictions: Optional[Path] = typer.Option(None, "--predictions",
                                               help="official HumbleBench results JSONL (with target 'humblebench')"),
    judge: str = typer.Option("rule", "--judge", help="rule | llm | rule+llm"),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="BACKEND:MODEL for the LLM judge"),
    judge_base_url: Optional[str] = typer.Option(None, "--judge-base-url",
                                                 help="base URL of the OpenAI-compatible server of --judge-model"),
    use_noise_image: bool = typer.Option(False, "--use-noise-image",
                                         help="the predictions were made on the noise-image setting (HumbleBench-GN)"),
    nota_only: bool = typer.Option(False, "--nota-only",
                                   help="the predictions were made on the NOTA-only setting (HumbleBench-E)"),
    model_name: Optional[str] = typer.Option(None, "--model-name", help="model name to print with the metrics"),
) -> None:
    """Score again without calling any model."""
    from mmrag.errors import InputError

    if target == "humblebench":
        if predictions is None:
            raise InputError("give --predictions FILE.jsonl", field="--predictions")
        from mmrag.commands.judge import score_humblebench_command

        score_humblebench_command(predictions, use_noise_image, nota_only, model_name)
        return
    from mmrag.models import parse_model_arg
    from mmrag.runs.config import JudgeConfig
    from mmrag.runs.rescore import rescore

    spec = parse_model_arg(judge_model, base_url=judge_base_url) if judge_model else None
    summary = rescore(Path(target), JudgeConfig(mode=judge, model=spec))
    console.print(results_table(summary, title=f"Re-judged ({judge})"))
    console.print(f"outcomes changed: {summary['changed_outcomes']}")
