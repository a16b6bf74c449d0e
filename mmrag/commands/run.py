"""``mmrag run``, ``mmrag sweep`` and ``mmrag demo``: build a RunConfig from flags or YAML and execute it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from mmrag.commands._console import console, progress_bar, results_table
from mmrag.commands._engine import ADDRESS, ENGINE, REPLICAS, engine_scope
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
                      max_new_tokens: Optional[int]) -> RunConfig:
    from mmrag.models import parse_model_arg

    if not benchmark:
        raise InputError("give --benchmark NAME (or --config FILE)", field="--benchmark")
    if not model:
        raise InputError("give --model BACKEND:MODEL or a baseline name (or --config FILE)", field="--model")
    specs = specs_from_flags(scenarios, distractors, negative_modality, positive_modality, strictness, seed)
    settings = GenerationSettings(max_new_tokens=max_new_tokens) if max_new_tokens else None
    models = [parse_model_arg(m, base_url=base_url, api_key_env=api_key_env) for m in model]
    return RunConfig(benchmarks=[BenchmarkRef(name=b) for b in benchmark], scenarios=specs, models=models,
                     judge=JudgeConfig(mode=judge), limit=limit, seed=seed, batch_size=batch_size,
                     cache=CacheConfig(enabled=not no_cache, path=cache_path), settings=settings)


def run_and_print(config: RunConfig, out: Path, title: str = "Results") -> RunResult:
    t0 = time.perf_counter()
    with progress_bar() as progress:
        result = execute(config, out, argv=sys.argv, progress=progress)
    console.print(results_table(result.summary, title=title))
    errs = ", ".join(f"{k}={v}" for k, v in sorted(result.errors.items())) or "none"
    console.print(f"run directory: {out}  |  new records: {result.new_records}  |  model calls: {result.model_calls}"
                  f"  |  failed requests: {errs}  |  {time.perf_counter() - t0:.1f}s")
    return result


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
    judge: str = typer.Option("rule", "--judge", help="rule | llm | rule+llm"),
    no_cache: bool = typer.Option(False, "--no-cache"),
    cache_path: Optional[str] = typer.Option(None, "--cache-path"),
    batch_size: int = typer.Option(32, "--batch-size", min=1),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens"),
    out: Optional[Path] = typer.Option(None, "--out", help="run directory"),
    engine: str = ENGINE, address: Optional[str] = ADDRESS, replicas: Optional[int] = REPLICAS,
) -> None:
    """Run benchmarks x scenarios x models, judge every answer, write a run directory."""
    if resume is not None:
        mpath = resume / "manifest.json"
        if not mpath.exists():
            raise InputError("no manifest.json here: not a run directory", path=resume)
        cfg = RunConfig.model_validate(json.loads(mpath.read_text(encoding="utf-8"))["config"])
        with engine_scope(engine, address, replicas):
            run_and_print(cfg, resume)
        return
    if config is not None:
        cfg = load_run_config(config)
    else:
        try:
            ns = [int(x) for x in _split([distractors])]
        except ValueError:
            raise InputError(f"'{distractors}' is not a comma-separated list of integers", field="--distractors") from None
        cfg = config_from_flags(_split(benchmark), _split(model), base_url, api_key_env, _split([scenarios]), ns,
                                _split([negative_modality]), positive_modality, _split([strictness]), limit, seed,
                                judge, no_cache, cache_path, batch_size, max_new_tokens)
        if source is not None:
            if len(cfg.benchmarks) != 1:
                raise InputError("--source applies to exactly one --benchmark", field="--source")
            cfg.benchmarks[0].source = source
    target = out or (Path(cfg.out) if cfg.out else default_run_dir("run"))
    with engine_scope(engine, address, replicas):
        run_and_print(cfg, target)


def sweep(
    config: Path = typer.Option(..., "--config", help="sweep.yaml (a Sweep, or a run config with `sweeps:`), "
                                                      "or a built-in sweep name"),
    out: Optional[Path] = typer.Option(None, "--out"),
    benchmark: str = typer.Option("demo", "--benchmark"),
    model: str = typer.Option("context-reader", "--model", help="BACKEND:MODEL or baseline names, comma-separated"),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="name of the env var holding the key"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1),
    engine: str = ENGINE, address: Optional[str] = ADDRESS, replicas: Optional[int] = REPLICAS,
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
    target = out or (Path(cfg.out) if cfg.out else default_run_dir("sweep"))
    with engine_scope(engine, address, replicas):
        run_and_print(cfg, target, title=f"Sweep {config.name}")


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
