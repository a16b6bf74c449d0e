"""``mmrag score RUN_DIR --judge ...`` (re-judge a saved run) and ``mmrag score humblebench
--predictions FILE`` (the official HumbleBench metrics of a results file)."""

from __future__ import annotations

from pathlib import Path

import typer

from mmrag.commands._console import console, results_table
from mmrag.commands.judge import JudgeBaseUrlOpt, JudgeKeyEnvOpt, JudgeModelOpt, judge_config


def score(
    target: str = typer.Argument(..., help="a run directory, or 'humblebench' to score a predictions file"),
    predictions: Path | None = typer.Option(
        None, "--predictions", help="official HumbleBench results JSONL (with target 'humblebench')"
    ),
    judge: str = typer.Option("rule", "--judge", help="rule | llm | rule+llm"),
    judge_model: str | None = JudgeModelOpt,
    judge_base_url: str | None = JudgeBaseUrlOpt,
    judge_api_key_env: str | None = JudgeKeyEnvOpt,
    use_noise_image: bool = typer.Option(
        False, "--use-noise-image", help="the predictions were made on the noise-image setting (HumbleBench-GN)"
    ),
    nota_only: bool = typer.Option(
        False, "--nota-only", help="the predictions were made on the NOTA-only setting (HumbleBench-E)"
    ),
    model_name: str | None = typer.Option(None, "--model-name", help="model name to print with the metrics"),
    postprocess: str = typer.Option(
        "none",
        "--postprocess",
        help="none | reasoning: cut replies as the official reasoning wrappers do "
        "(</think>, <answer>, 'answer is') before the official rule "
        "(with target 'humblebench')",
    ),
) -> None:
    """Score again without calling any model."""
    from mmrag.errors import InputError

    if target == "humblebench":
        if predictions is None:
            raise InputError("give --predictions FILE.jsonl", field="--predictions")
        from mmrag.commands.judge import score_humblebench_command

        # every argument by name: a forgotten one would arrive as typer's OptionInfo default
        score_humblebench_command(
            predictions=predictions,
            use_noise_image=use_noise_image,
            nota_only=nota_only,
            model_name=model_name,
            postprocess=postprocess,
        )
        return
    from mmrag.labels.summary import with_corrected
    from mmrag.runs.rescore import rescore

    summary = rescore(Path(target), judge_config(judge, judge_model, judge_base_url, judge_api_key_env))
    summary = with_corrected(target, summary)  # a labelled run's corrected rates, for the new verdicts
    console.print(results_table(summary, title=f"Re-judged ({judge})"))
    console.print(f"outcomes changed: {summary['changed_outcomes']}")
