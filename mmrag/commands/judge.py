"""CLI for judging and scoring: ``mmrag judge``, ``mmrag judge-agreement``, ``mmrag score humblebench``.

Thin on purpose: parse, call :mod:`mmrag.judging.records` / :mod:`mmrag.metrics`, print.  Mount with
:func:`register` (or the three functions and ``score_app`` one by one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import typer

from mmrag.errors import InputError, MmragError

score_app = typer.Typer(help="Score saved predictions.", no_args_is_help=True)


def _fail(exc: MmragError) -> NoReturn:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(code=exc.exit_code)


def judge_model_spec(spec: str | None, base_url: str | None = None, api_key_env: str | None = None):
    """``--judge-model BACKEND:MODEL`` (+ ``--judge-base-url``, ``--judge-api-key-env``) -> a
    ModelSpec, or None when no judge model is named.  Errors name the judge flags."""
    if not spec:
        return None
    from mmrag.models import parse_model_arg

    try:
        return parse_model_arg(spec, base_url=base_url, api_key_env=api_key_env)
    except InputError as exc:
        field = {"--model": "--judge-model", "--base-url": "--judge-base-url"}.get(exc.field or "", exc.field)
        raise InputError(
            exc.message.replace("--model", "--judge-model").replace("--base-url", "--judge-base-url"), field=field
        ) from None


def build_judge_model(
    spec: str | None, base_url: str | None = None, api_key_env: str | None = None, cache: str | None = "default"
):
    """A judge VLM behind the shared response cache (judge calls are cached like model calls;
    ``cache=None`` turns that off), or None when no ``--judge-model`` is given."""
    ms = judge_model_spec(spec, base_url, api_key_env)
    if ms is None:
        return None
    from mmrag.models import create_model

    return create_model(ms, cache=cache)


#: the three judge-model flags, shared by every command that judges
JudgeModelOpt = typer.Option(None, "--judge-model", help="BACKEND:MODEL of the LLM judge (modes llm, rule+llm).")
JudgeBaseUrlOpt = typer.Option(None, "--judge-base-url", help="Base URL of the judge's OpenAI-compatible server.")
JudgeKeyEnvOpt = typer.Option(None, "--judge-api-key-env", help="Name of the env var holding the judge's API key.")


def judge_command(
    input: Path = typer.Option(..., "--input", help="JSONL with question, answers, response [, choices]."),
    output: Path = typer.Option(..., "--output", help="Where to write the judged JSONL."),
    judge: str = typer.Option("rule", "--judge", help="rule | llm | rule+llm (or another registered judge)."),
    judge_model: str | None = JudgeModelOpt,
    judge_base_url: str | None = JudgeBaseUrlOpt,
    judge_api_key_env: str | None = JudgeKeyEnvOpt,
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not cache judge calls."),
) -> None:
    """Judge each record: writes it back with outcome and extracted."""
    from mmrag.judging import make_judge
    from mmrag.judging.records import judge_file

    try:
        j = make_judge(
            judge,
            llm=build_judge_model(
                judge_model, judge_base_url, judge_api_key_env, cache=None if no_cache else "default"
            ),
        )
        counts = judge_file(input, output, j)
    except MmragError as exc:
        _fail(exc)
    typer.echo(json.dumps({"output": str(output), "judge": getattr(j, "judge_id", judge), **counts}))


def judge_agreement_command(
    a: Path = typer.Argument(
        ...,
        help="A run directory (its judge against its labels), or the first labelled "
        "JSONL (the reference: outcome, else label).",
    ),
    b: Path | None = typer.Argument(None, help="Second labelled JSONL (the judge); none with a run directory."),
    field_a: str | None = typer.Option(None, "--field-a", help="Label field of A."),
    field_b: str | None = typer.Option(None, "--field-b", help="Label field of B."),
    by: list[str] | None = typer.Option(
        None, "--by", help="Also group by this record field (repeatable; a run's default: source and kind)."
    ),
    labeller: str | None = typer.Option(None, "--labeller", help="Run form: whose labels (default: most labels)."),
    n_boot: int = typer.Option(1000, "--n-boot", min=100, help="Run form: bootstrap resamples per interval."),
    seed: int = typer.Option(0, "--seed", help="Run form: bootstrap seed."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of the tables."),
) -> None:
    """Agreement, Cohen's kappa, coverage and the confusion matrix between two judgings (or a
    judge and human labels), overall, per source and per --by field; with a run directory, the
    run's judge against the run's own labels (`mmrag label`), with bootstrap intervals."""
    from mmrag.metrics.agreement import agreement, format_agreement

    try:
        if b is None:
            if not a.is_dir():
                raise InputError("give a run directory, or two labelled JSONL files", path=a)
            if field_a or field_b:
                raise InputError(
                    "--field-a / --field-b are for two files; a run compares its verdicts with its labels",
                    field="--field-a" if field_a else "--field-b",
                )
            from mmrag.labels.agree import DEFAULT_BY
            from mmrag.labels.agree import agreement as run_agreement
            from mmrag.labels.report import format_run_agreement

            result = run_agreement(a, labeller=labeller, by=tuple(by) if by else DEFAULT_BY, n_boot=n_boot, seed=seed)
            typer.echo(json.dumps(result, indent=2) if as_json else format_run_agreement(result))
            return
        result = agreement(a, b, field_a=field_a, field_b=field_b, by=tuple(by or ()))
    except MmragError as exc:
        _fail(exc)
    typer.echo(json.dumps(result, indent=2) if as_json else format_agreement(result, a.stem, b.stem))


@score_app.command("humblebench")
def score_humblebench_command(
    predictions: Path = typer.Option(..., "--predictions", help="Official HumbleBench results JSONL."),
    use_noise_image: bool = typer.Option(False, "--use-noise-image", help="Recorded like the official flag."),
    nota_only: bool = typer.Option(False, "--nota-only", help="Recorded like the official flag."),
    model_name: str | None = typer.Option(None, "--model-name", help="Recorded as model_name_or_path."),
    postprocess: str = typer.Option(
        "none",
        "--postprocess",
        help="none | reasoning: cut replies as the official reasoning wrappers do "
        "(</think>, <answer>, 'answer is') before the official rule.",
    ),
) -> None:
    """Official HumbleBench metrics (official nesting) plus mmrag's NOTA measures under "mmrag"."""
    from mmrag.metrics.humblebench import score_humblebench_predictions

    try:
        result = score_humblebench_predictions(
            predictions,
            use_noise_image=use_noise_image,
            nota_only=nota_only,
            model_name_or_path=model_name,
            postprocess=postprocess,
        )
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


def judge_config(mode: str | None, model: str | None, base_url: str | None, api_key_env: str | None, base=None):
    """A run's JudgeConfig from the judge flags, over ``base`` (a config file's) when given: flags
    that are set win.  Modes ``llm`` and ``rule+llm`` need a judge model."""
    from mmrag.runs.config import JudgeConfig

    cfg = base.model_copy() if base is not None else JudgeConfig()
    if mode:
        if mode not in ("rule", "llm", "rule+llm"):
            raise InputError(f"unknown judge mode {mode!r}; one of rule, llm, rule+llm", field="--judge")
        cfg.mode = mode
    spec = judge_model_spec(model, base_url, api_key_env)
    if spec is not None:
        cfg.model = spec
    if cfg.mode != "rule" and cfg.model is None:
        raise InputError(
            f"judge mode '{cfg.mode}' needs a judge model (--judge-model BACKEND:MODEL)", field="--judge-model"
        )
    return cfg
