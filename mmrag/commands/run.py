"""``mmrag run``, ``mmrag sweep`` and ``mmrag demo``: build a RunConfig from flags or YAML and execute it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from mmrag.commands._console import console, progress_bar, results_table
from mmrag.commands.judge import JudgeBaseUrlOpt, JudgeKeyEnvOpt, JudgeModelOpt, judge_config
from mmrag.errors import InputError
from mmrag.models.base import GenerationSettings
from mmrag.runs.config import BenchmarkRef, CacheConfig, JudgeConfig, RunConfig, load_run_config
from mmrag.runs.engine import RunResult, default_run_dir, execute
from mmrag.scenarios.spec import ScenarioSpec

SCENARIO_KINDS = ("parametric", "oracle", "realistic", "adversarial", "humblebench", "knowhal")


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def specs_from_flags(kinds: list[str], distractors: list[int], negative: list[str], positive: str,
                     strictness: list[str], seed: int) -> list[ScenarioSpec]:
    from pydantic import ValidationError

    specs = []
    for kind in kinds:
        if kind not in SCENARIO_KINDS:
            raise InputError(f"unknown scenario '{kind}'; known: {', '.join(SCENARIO_KINDS)}", field="--scenarios")
        for strict in strictness:
            ns = distractors if kind in ("realistic", "adversarial") else [0]
            negs = negative if kind in ("realistic", "adversarial") else ["text"]
            for n in ns:
                for neg in negs:
                    try:
                        specs.append(ScenarioSpec(kind=kind, n_distractors=n, negative_modality=neg,
                                                  positive_modality=positive, strictness=strict, seed=seed))
                    except ValidationError as exc:
                        err = exc.errors()[0]
                        raise InputError(err["msg"], field="--" + str(err["loc"][0]).replace("_", "-")) from None
    return specs


def config_from_flags(benchmark: list[str], model: list[str], base_url: Optional[str], api_key_env: Optional[str],
                      scenarios: list[str], distractors: list[int], negative_modality: list[str],
                      positive_modality: str, strictness: list[str], limit: Optional[int], seed: int,
                      judge: str, no_cache: bool, cache_path: Optional[str], batch_size: int,
                      max_new_tokens: Optional[int], judge_cfg: JudgeConfig | None = None) -> RunConfig:
    from mmrag.models import parse_model_arg

    if not benchmark:
        raise InputError("give --benchmark NAME (or --config FILE)", field="--benchmark")
    if not model:
        raise InputError("give --model BACKEND:MODEL or a baseline name (or --config FILE)", field="--model")
    specs = specs_from_flags(scenarios, distractors, negative_modality, positive_modality, strictness, seed)
    settings = GenerationSettings(max_new_tokens=max_new_tokens) if max_new_tokens else None
    models = [parse_model_arg(m, base_url=base_url, api_key_env=api_key_env) for m in model]
    return RunConfig(benchmarks=[BenchmarkRef(name=b) for b in benchmark], scenarios=specs, models=models,
                     judge=judge_cfg or JudgeConfig(mode=judge), limit=limit, seed=seed, batch_size=batch_size,
                     cache=CacheConfig(enabled=not no_cache, path=cache_path), settings=settings)


def run_and_print(config: RunConfig, out: Path, title: str = "Results", retry_failed: bool = False) -> RunResult:
    """Execute and print; a run over its error budget exits 1 with a one-line reason on stderr."""
    t0 = time.perf_counter()
    with progress_bar() as progress:
        result = execute(config, out, argv=sys.argv, progress=progress, retry_failed=retry_failed)
    console.print(results_table(result.summary, title=title))
    errs = ", ".join(f"{k}={v}" for k, v in sorted(result.errors.items())) or "none"
    console.print(f"run directory: {out}  |  new records: {result.new_records}  |  model calls: {result.model_calls}"
                  f"  |  failed requests: {errs}  |  {time.perf_counter() - t0:.1f}s")
    if result.failure:
        typer.echo(f"mmrag: run failed: {result.failure}", err=True)
        raise typer.Exit(1)
    return result


def with_execution(cfg: RunConfig, max_concurrency: Optional[int], max_failures: Optional[str]) -> RunConfig:
    """Apply the execution flags (they change how a run goes, never what it measures)."""
    update: dict = {}
    if max_concurrency is not None:
        update["models"] = [m.model_copy(update={"max_concurrency": max_concurrency}) for m in cfg.models]
    if max_failures is not None:
        update["max_failures"] = parse_fraction(max_failures)
    return cfg.model_copy(update=update) if update else cfg


def parse_fraction(text: str) -> float:
    """``0.05`` or ``5%``."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        v = -1.0
    if not 0.0 <= v <= 1.0:
        raise InputError(f"'{text}' is not a fraction in [0, 1] or a percentage like 5%", field="--max-failures")
    return v


_MAX_CONC = "most requests in flight per model (the window a run keeps full)"
_MAX_FAIL = "error budget: fail the run when more than this fraction (0.05 or 5%) of cells failed"


def run(
    config: Optional[Path] = typer.Option(None, "--config", help="run.yaml (RunConfig)"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="continue the run in this directory"),
    benchmark: list[str] = typer.Option(None, "--benchmark", "-b", help="benchmark name(s), comma-separated ok"),
    source: Optional[str] = typer.Option(None, "--source", help="data path for the benchmark (one benchmark only)"),
    model: list[str] = typer.Option(None, "--model", "-m", help="BACKEND:MODEL or a baseline name"),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="name of the env var holding the key"),
    scenarios: str = typer.Option("parametric,oracle,realistic,adversarial", "--scenarios"),
    distractors: str = typer.Option("2", "--distractors", help="comma-separated counts"),
    negative_modality: str = typer.Option("text", "--negative-modality"),
    positive_modality: str = typer.Option("any", "--positive-modality"),
    strictness: str = typer.Option("none", "--strictness"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1),
    seed: int = typer.Option(0, "--seed"),
    judge: Optional[str] = typer.Option(None, "--judge", help="rule | llm | rule+llm (default rule)"),
    judge_model: Optional[str] = JudgeModelOpt,
    judge_base_url: Optional[str] = JudgeBaseUrlOpt,
    judge_api_key_env: Optional[str] = JudgeKeyEnvOpt,
    no_cache: bool = typer.Option(False, "--no-cache"),
    cache_path: Optional[str] = typer.Option(None, "--cache-path"),
    batch_size: int = typer.Option(32, "--batch-size", min=1),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens"),
    out: Optional[Path] = typer.Option(None, "--out", help="run directory"),
    max_concurrency: Optional[int] = typer.Option(None, "--max-concurrency", min=1, help=_MAX_CONC),
    max_failures: Optional[str] = typer.Option(None, "--max-failures", help=_MAX_FAIL),
    retry_errors: bool = typer.Option(False, "--retry-errors",
                                      help="send cells whose last attempt failed again (--resume always does)"),
) -> None:
    """Run benchmarks x scenarios x models, judge every answer, write a run directory."""
    if resume is not None:
        mpath = resume / "manifest.json"
        if not mpath.exists():
            raise InputError("no manifest.json here: not a run directory", path=resume)
        cfg = RunConfig.model_validate(json.loads(mpath.read_text(encoding="utf-8"))["config"])
        run_and_print(with_execution(cfg, max_concurrency, max_failures), resume, retry_failed=True)
        return
    if config is not None:
        cfg = load_run_config(config)
        cfg.judge = judge_config(judge, judge_model, judge_base_url, judge_api_key_env, base=cfg.judge)
    else:
        try:
            ns = [int(x) for x in _split([distractors])]
        except ValueError:
            raise InputError(f"'{distractors}' is not a comma-separated list of integers", field="--distractors") from None
        cfg = config_from_flags(_split(benchmark), _split(model), base_url, api_key_env, _split([scenarios]), ns,
                                _split([negative_modality]), positive_modality, _split([strictness]), limit, seed,
                                judge or "rule", no_cache, cache_path, batch_size, max_new_tokens,
                                judge_config(judge, judge_model, judge_base_url, judge_api_key_env))
        if source is not None:
            if len(cfg.benchmarks) != 1:
                raise InputError("--source applies to exactly one --benchmark", field="--source")
            cfg.benchmarks[0].source = source
    target = out or (Path(cfg.out) if cfg.out else default_run_dir("run"))
    run_and_print(with_execution(cfg, max_concurrency, max_failures), target, retry_failed=retry_errors)


def sweep(
    config: Path = typer.Option(..., "--config", help="sweep.yaml (a Sweep, or a run config with `sweeps:`), "
                                                      "or a built-in sweep name"),
    out: Optional[Path] = typer.Option(None, "--out"),
    benchmark: str = typer.Option("demo", "--benchmark"),
    model: str = typer.Option("context-reader", "--model", help="BACKEND:MODEL or baseline names, comma-separated"),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="name of the env var holding the key"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1),
    judge: Optional[str] = typer.Option(None, "--judge", help="rule | llm | rule+llm (default rule)"),
    judge_model: Optional[str] = JudgeModelOpt,
    judge_base_url: Optional[str] = JudgeBaseUrlOpt,
    judge_api_key_env: Optional[str] = JudgeKeyEnvOpt,
    max_concurrency: Optional[int] = typer.Option(None, "--max-concurrency", min=1, help=_MAX_CONC),
    max_failures: Optional[str] = typer.Option(None, "--max-failures", help=_MAX_FAIL),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="send cells whose last attempt failed again"),
) -> None:
    """Run every cell of a sweep; cells already in the run directory are not run again."""
    import yaml

    from mmrag.models import parse_model_arg

    from mmrag.scenarios import builtin_sweeps

    if not config.exists() and str(config) in builtin_sweeps():  # `--config distractor-curve`
        config = builtin_sweeps()[str(config)]
    data = yaml.safe_load(config.read_text(encoding="utf-8")) if config.exists() else None
    if data is None:
        raise InputError(f"sweep config not found or empty (built-in sweeps: {', '.join(sorted(builtin_sweeps()))})",
                         path=config)
    if isinstance(data, dict) and "benchmarks" in data:
        cfg = load_run_config(config)
    else:
        from mmrag.scenarios import load_sweep

        load_sweep(config)  # validates the file, naming file and field on error
        cfg = RunConfig(benchmarks=[BenchmarkRef(name=b) for b in _split([benchmark])],
                        models=[parse_model_arg(m, base_url=base_url, api_key_env=api_key_env) for m in _split([model])],
                        sweeps=[str(config)], limit=limit)
    cfg.judge = judge_config(judge, judge_model, judge_base_url, judge_api_key_env, base=cfg.judge)
    target = out or (Path(cfg.out) if cfg.out else default_run_dir("sweep"))
    run_and_print(with_execution(cfg, max_concurrency, max_failures), target, title=f"Sweep {config.name}",
                  retry_failed=retry_errors)


def demo(
    out: Optional[Path] = typer.Option(None, "--out"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1),
    distractors: int = typer.Option(2, "--distractors", min=1),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """The embedded default: the generated demo world, four DeflectionBench scenarios, two baselines."""
    from mmrag.models import parse_model_arg

    specs = specs_from_flags(["parametric", "oracle", "realistic", "adversarial"], [distractors], ["text"], "any",
                             ["none"], seed)
    cfg = RunConfig(benchmarks=[BenchmarkRef(name="demo", options={"seed": seed})], scenarios=specs,
                    models=[parse_model_arg("always-deflect"), parse_model_arg("context-reader")],
                    limit=limit, seed=seed)
    run_and_print(cfg, out or default_run_dir("demo"), title="mmrag demo: VLM-DeflectionBench scenarios on the demo world")
