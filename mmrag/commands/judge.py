"""CLI for judging and scoring: ``mmrag judge``, ``mmrag judge-agreement``, ``mmrag score humblebench``.

Thin on purpose: parse, call :mod:`mmrag.judging.records` / :mod:`mmrag.metrics`, print.  Mount with
:func:`register` (or the three functions and ``score_app`` one by one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from mmrag.errors import InputError, MmragError

score_app = typer.Typer(help="Score saved predictions.", no_args_is_help=True)


def _fail(exc: MmragError) -> None:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(code=exc.exit_code)


def build_judge_model(spec: str | None, base_url: str | None):
    """``BACKEND:MODEL`` -> a VLM from the model registry (None when no spec is given)."""
    if not spec:
        return None
    from mmrag.models.base import MODELS, ModelSpec

    backend, _, model = spec.partition(":")
    if not backend:
        raise InputError(f"--judge-model must be BACKEND:MODEL, got {spec!r}", field="--judge-model")
    return MODELS.create(backend, ModelSpec(backend=backend, model=model, base_url=base_url))


def judge_command(
    input: Path = typer.Option(..., "--input", help="JSONL with question, answers, response [, choices]."),
    output: Path = typer.Option(..., "--output", help="Where to write the judged JSONL."),
    judge: str = typer.Option("rule", "--judge", help="rule | llm | rule+llm (or another registered judge)."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="BACKEND:MODEL of the LLM judge."),
    judge_base_url: Optional[str] = typer.Option(None, "--judge-base-url", help="Base URL of the judge server."),
) -> None:
    """Judge each record: writes it back with outcome and extracted."""
    from mmrag.judging import make_judge
    from mmrag.judging.records import judge_file

    try:
        j = make_judge(judge, llm=build_judge_model(judge_model, judge_base_url))
        counts = judge_file(input, output, j)
    except MmragError as exc:
        _fail(exc)
    typer.echo(json.dumps({"output": str(output), "judge": getattr(j, "judge_id", judge), "counts": counts}))


def judge_agreement_command(
    a: Path = typer.Argument(..., help="First labelled JSONL (outcome, else label)."),
    b: Path = typer.Argument(..., help="Second labelled JSONL."),
    field_a: Optional[str] = typer.Option(None, "--field-a", help="Label field of A."),
    field_b: Optional[str] = typer.Option(None, "--field-b", help="Label field of B."),
) -> None:
    """Agreement and Cohen's kappa between two judgings (or a judge and human labels)."""
    from mmrag.metrics.agreement import agreement

    try:
        result = agreement(a, b, field_a=field_a, field_b=field_b)
    except MmragError as exc:
        _fail(exc)
    typer.echo(json.dumps(result, indent=2))


@score_app.command("humblebench")
def score_humblebench_command(
    predictions: Path = typer.Option(..., "--predictions", help="Official HumbleBench results JSONL."),
    use_noise_image: bool = typer.Option(False, "--use-noise-image", help="Recorded like the official flag."),
    nota_only: bool = typer.Option(False, "--nota-only", help="Recorded like the official flag."),
    model_name: Optional[str] = typer.Option(None, "--model-name", help="Recorded as model_name_or_path."),
    postprocess: str = typer.Option("none", "--postprocess",
                                    help="none | reasoning: cut replies as the official reasoning wrappers do "
                                         "(</think>, <answer>, 'answer is') before the official rule."),
) -> None:
    """Official HumbleBench metrics (official nesting) plus mmrag's NOTA measures under "mmrag"."""
    from mmrag.metrics.humblebench import score_humblebench_predictions

    try:
        result = score_humblebench_predictions(predictions, use_noise_image=use_noise_image, nota_only=nota_only,
                                               model_name_or_path=model_name, postprocess=postprocess)
    except MmragError as exc:
        _fail(exc)
    typer.echo(json.dumps(result, indent=2))


def register(app: typer.Typer, *, score: typer.Typer | None = None) -> None:
    """Mount ``judge`` and ``judge-agreement`` on ``app``, and ``humblebench`` under ``score``
    (our ``score_app`` as ``mmrag score`` when no score group is given)."""
    app.command("judge")(judge_command)
    app.command("judge-agreement")(judge_agreement_command)
    if score is None:
        app.add_typer(score_app, name="score")
    else:
        score.command("humblebench")(score_humblebench_command)
