"""``mmrag run``, ``mmrag sweep`` and ``mmrag demo``: build a RunConfig from flags or YAML and execute it.

The flags, their help texts and the order of the steps live here; turning flags into a config is
:mod:`mmrag.commands._run_config`'s."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer
from rich.text import Text

from mmrag.benchmarks.family import DEFLECTION
from mmrag.commands._console import choices, console, err_console, progress_bar, refuse_extra_flags, results_table
from mmrag.commands._engine import ADDRESS, ENGINE, ENGINE_FLAGS, REPLICAS, engine_scope
from mmrag.commands._generation import (
    GEN_KWARGS,
    LMMS_MAX_TOKENS,
    MAX_NEW_TOKENS,
    TEMPERATURE,
    TOP_P,
    generation,
    refuse_max_tokens,
)
from mmrag.commands._run_config import (
    config_from_flags,
    config_from_manifest,
    flag_config,
    specs_from_flags,
    split_list,
    split_models,
    with_execution,
    with_fields,
)
from mmrag.commands.judge import JudgeBaseUrlOpt, JudgeKeyEnvOpt, JudgeModelOpt, judge_config
from mmrag.errors import InputError
from mmrag.registry import allow_code as trusting_code
from mmrag.runs.config import BenchmarkRef, RunConfig, load_run_config
from mmrag.scenarios.kinds import kind_ids
from mmrag.scenarios.spec import MODALITIES, STRICTNESS_LEVELS

if TYPE_CHECKING:  # the engine (pandas, pyarrow) is imported when a run starts, not with the CLI
    from mmrag.runs.engine import RunResult


def default_run_dir(name: str) -> Path:
    from mmrag.runs.engine import default_run_dir as default

    return default(name)


ALLOW_CODE_HELP = (
    "import plug-ins the config names by dotted path (pkg.module:Class); only for configs you "
    "trust, never taken from a run directory"
)
Modality = Literal[MODALITIES]  # type: ignore[valid-type]  # built from the tuple: typer lists the choices in --help

#: one help text per flag, shared by every command that has the flag (one meaning everywhere)
BENCHMARK_HELP = (
    "benchmark name(s): a registered loader, an mmrag.benchmarks entry point, pkg.module:Name or "
    "hf:PATH_OR_ID (a Hugging Face dataset, columns named by --field); repeatable, comma-separated ok"
)
SOURCE_HELP = "data path of the benchmark (a file or folder; one --benchmark only)"
MODEL_HELP = (
    "BACKEND:MODEL (e.g. openai:NAME, transformers:PATH, vllm:PATH), a baseline name, or the "
    "simulated VLM sim-vlm[:param=value,...]; repeatable, comma-separated ok"
)
BASE_URL_HELP = "base URL of an OpenAI-compatible server, for openai:NAME models"
KEY_HELP = "name of the environment variable holding the API key (the key itself is never written anywhere)"
LIMIT_HELP = (
    "use only the first N samples of each benchmark (per benchmark: every scenario and model runs on "
    "them, so 4 scenarios x 1 model make 4N requests)"
)
OUT_HELP = "run directory to write (default: a new folder under MMRAG_HOME/runs)"
JUDGE_HELP = (
    "judge of open answers: rule | llm | rule+llm (or a registered judge name; default rule, or the "
    "config's); HumbleBench and KnowHal use their family's judge"
)
FIELD_HELP = (
    "for hf:PATH_OR_ID benchmarks: FIELD=COLUMN pieces (question, answer, image, id, choices, label, "
    "context, ...), e.g. question=q,answer=a,image=img; see docs/interop.md"
)

#: flags that --config still honours (they are applied over the file's values, not dropped)
CONFIG_OVERRIDES = (
    "--out",
    "--judge",
    "--judge-model",
    "--judge-base-url",
    "--judge-api-key-env",
    "--allow-code",
    *ENGINE_FLAGS,
)


def _builtin_sweep_names() -> list[str]:
    from mmrag.scenarios import builtin_sweeps

    return list(builtin_sweeps())


def run_and_print(config: RunConfig, out: Path, title: str = "Results", retry_failed: bool = False) -> RunResult:
    """Execute and print; a run over its error budget exits 1 with a one-line reason on stderr."""
    from mmrag.labels.summary import with_corrected
    from mmrag.util import as_input_error

    t0 = time.perf_counter()
    err_console.print(Text.assemble(("run directory: ", "bold"), str(out)), highlight=False)
    try:
        with progress_bar() as progress:
            from mmrag.runs.engine import execute

            result = execute(config, out, argv=sys.argv, progress=progress, retry_failed=retry_failed)
        result.summary = with_corrected(result.run_dir, result.summary)  # a labelled run's corrected rates
    except OSError as exc:  # a full disk, a quota, a file-size limit: one line, and how to go on
        err = as_input_error(exc, out, f"free space and resume: mmrag run --resume {out}")
        if err is exc:
            raise
        raise err from None
    console.print(results_table(result.summary, title=title))
    errs = ", ".join(f"{k}={v}" for k, v in sorted(result.errors.items())) or "none"
    console.print(
        f"run directory: {out}  |  new records: {result.new_records}  |  model calls: {result.model_calls}"
        f"  |  failed requests: {errs}  |  {time.perf_counter() - t0:.1f}s"
    )
    if result.failure:
        typer.echo(f"mmrag: run failed: {result.failure}", err=True)
        raise typer.Exit(1)
    return result


_MAX_CONC = "most requests in flight per model (the window a run keeps full)"
_MAX_FAIL = "error budget: fail the run when more than this fraction (0.05 or 5%) of cells failed"
#: flags of how a run executes: accepted next to --resume and --config
EXECUTION_FLAGS = ("--max-concurrency", "--max-failures", "--retry-errors")


def run(
    ctx: typer.Context,
    config: Path | None = typer.Option(
        None,
        "--config",
        help="run.yaml (RunConfig); takes every setting from "
        "the file (other flags are refused; --out and the --judge* flags apply over it)",
    ),
    resume: Path | None = typer.Option(
        None, "--resume", help="continue the run in this directory with its own config (other flags are refused)"
    ),
    benchmark: list[str] = typer.Option(None, "--benchmark", "-b", help=BENCHMARK_HELP),
    source: str | None = typer.Option(None, "--source", help=SOURCE_HELP),
    field: list[str] = typer.Option(None, "--field", help=FIELD_HELP),
    model: list[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help=KEY_HELP),
    scenarios: str = typer.Option(
        ",".join(DEFLECTION.scenario_kinds),
        "--scenarios",
        help=f"comma-separated scenario kinds: {choices(kind_ids())}",
    ),
    distractors: str = typer.Option(
        "2", "--distractors", help="comma-separated distractor counts (0-64) for the kinds that show negatives"
    ),
    negative_modality: str = typer.Option(
        "text", "--negative-modality", help=f"comma-separated modalities of the negatives: {choices(MODALITIES)}"
    ),
    positive_modality: Modality = typer.Option(
        "any", "--positive-modality", help="keep only gold evidence of this modality (any = all)"
    ),
    strictness: str = typer.Option(
        "none", "--strictness", help=f"comma-separated prompt strictness levels: {choices(STRICTNESS_LEVELS)}"
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help=LIMIT_HELP),
    seed: int = typer.Option(
        0,
        "--seed",
        help="seed of the scenario composer (shuffles, negatives) and of "
        "generation (sampling, the baselines' random picks; --gen-kwargs seed=N sets it alone)",
    ),
    temperature: float | None = TEMPERATURE,
    top_p: float | None = TOP_P,
    gen_kwargs: str | None = GEN_KWARGS,
    judge: str | None = typer.Option(None, "--judge", help=JUDGE_HELP),
    judge_model: str | None = JudgeModelOpt,
    judge_base_url: str | None = JudgeBaseUrlOpt,
    judge_api_key_env: str | None = JudgeKeyEnvOpt,
    no_cache: bool = typer.Option(False, "--no-cache", help="do not read or write the response cache"),
    cache_path: str | None = typer.Option(
        None, "--cache-path", help="SQLite response cache to use (default: MMRAG_HOME's shared cache)"
    ),
    batch_size: int = typer.Option(32, "--batch-size", min=1, help="prompts per model request batch"),
    max_new_tokens: int | None = MAX_NEW_TOKENS,
    max_tokens: int | None = LMMS_MAX_TOKENS,
    out: Path | None = typer.Option(None, "--out", "-o", help=OUT_HELP),
    allow_code: bool = typer.Option(False, "--allow-code", help=ALLOW_CODE_HELP),
    max_concurrency: int | None = typer.Option(None, "--max-concurrency", min=1, help=_MAX_CONC),
    max_failures: str | None = typer.Option(None, "--max-failures", help=_MAX_FAIL),
    retry_errors: bool = typer.Option(
        False, "--retry-errors", help="send cells whose last attempt failed again (--resume always does)"
    ),
    engine: str = ENGINE,
    address: str | None = ADDRESS,
    replicas: int | None = REPLICAS,
) -> None:
    """Run benchmarks x scenarios x models, judge every answer, write a run directory."""
    refuse_max_tokens(max_tokens)
    if resume is not None and allow_code:
        raise InputError(
            "--allow-code does not apply to --resume: a run directory is data and the code its "
            "manifest names is never imported; to continue a run that uses a plug-in by dotted "
            "path, give its config again: --config FILE --allow-code --out DIR",
            field="--allow-code",
        )
    if resume is not None:
        refuse_extra_flags(
            ctx, "--resume", allowed=(*EXECUTION_FLAGS, *ENGINE_FLAGS)
        )  # how and where it runs, not what it measures
    elif config is not None:
        refuse_extra_flags(ctx, "--config", allowed=(*CONFIG_OVERRIDES, *EXECUTION_FLAGS))
    if resume is not None:
        from mmrag.runs.state import nothing_to_do

        done = None if (max_concurrency or max_failures) else nothing_to_do(resume)
        if done:  # a finished run: said from its manifest, before anything heavy is imported
            console.print(f"[green]{done}[/green]")
            return
        with engine_scope(engine, address, replicas):
            run_and_print(
                with_execution(config_from_manifest(resume), max_concurrency, max_failures), resume, retry_failed=True
            )
        return
    if config is not None:
        cfg = load_run_config(config)
        cfg.judge = judge_config(judge, judge_model, judge_base_url, judge_api_key_env, base=cfg.judge)
    else:
        try:
            ns = [int(x) for x in split_list([distractors])]
        except ValueError:
            raise InputError(
                f"'{distractors}' is not a comma-separated list of integers", field="--distractors"
            ) from None
        cfg = config_from_flags(
            split_list(benchmark),
            split_models(model),
            base_url,
            api_key_env,
            split_list([scenarios]),
            ns,
            split_list([negative_modality]),
            positive_modality,
            split_list([strictness]),
            limit,
            seed,
            judge or "rule",
            no_cache,
            cache_path,
            batch_size,
            generation(temperature, top_p, max_new_tokens, seed, gen_kwargs),
            judge_config(judge, judge_model, judge_base_url, judge_api_key_env),
        )
        with_fields(cfg, field)
        if source is not None:
            if len(cfg.benchmarks) != 1:
                raise InputError("--source applies to exactly one --benchmark", field="--source")
            cfg.benchmarks[0].source = source
    target = out or (Path(cfg.out) if cfg.out else default_run_dir("run"))
    with trusting_code(allow_code), engine_scope(engine, address, replicas):
        run_and_print(with_execution(cfg, max_concurrency, max_failures), target, retry_failed=retry_errors)


SWEEP_CONFIG_HELP = (
    "sweep.yaml (a Sweep, or a run config with `sweeps:`, which then names benchmarks and models "
    f"itself), or a built-in sweep name: {choices(sorted(_builtin_sweep_names()))}"
)


def sweep(
    ctx: typer.Context,
    config: Path = typer.Option(..., "--config", help=SWEEP_CONFIG_HELP),
    out: Path | None = typer.Option(None, "--out", "-o", help=OUT_HELP),
    benchmark: list[str] = typer.Option(["demo"], "--benchmark", "-b", help=BENCHMARK_HELP),
    field: list[str] = typer.Option(None, "--field", help=FIELD_HELP),
    model: list[str] = typer.Option(["context-reader"], "--model", "-m", help=MODEL_HELP),
    base_url: str | None = typer.Option(None, "--base-url", help=BASE_URL_HELP),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help=KEY_HELP),
    limit: int | None = typer.Option(None, "--limit", min=1, help=LIMIT_HELP),
    temperature: float | None = TEMPERATURE,
    top_p: float | None = TOP_P,
    max_new_tokens: int | None = MAX_NEW_TOKENS,
    max_tokens: int | None = LMMS_MAX_TOKENS,
    seed: int | None = typer.Option(None, "--seed", help="generation seed (the sweep file seeds its scenarios)"),
    gen_kwargs: str | None = GEN_KWARGS,
    judge: str | None = typer.Option(None, "--judge", help=JUDGE_HELP),
    judge_model: str | None = JudgeModelOpt,
    judge_base_url: str | None = JudgeBaseUrlOpt,
    judge_api_key_env: str | None = JudgeKeyEnvOpt,
    allow_code: bool = typer.Option(False, "--allow-code", help=ALLOW_CODE_HELP),
    max_concurrency: int | None = typer.Option(None, "--max-concurrency", min=1, help=_MAX_CONC),
    max_failures: str | None = typer.Option(None, "--max-failures", help=_MAX_FAIL),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="send cells whose last attempt failed again"),
    engine: str = ENGINE,
    address: str | None = ADDRESS,
    replicas: int | None = REPLICAS,
) -> None:
    """Run every cell of a sweep; cells already in the run directory are not run again."""
    refuse_max_tokens(max_tokens)
    from mmrag.mapping_files import read_yaml_mapping
    from mmrag.models import parse_model_arg
    from mmrag.scenarios import builtin_sweeps

    if not config.exists() and str(config) in builtin_sweeps():  # `--config distractor-curve`
        config = builtin_sweeps()[str(config)]
    if not config.exists():
        raise InputError(
            f"sweep config not found (built-in sweeps: {', '.join(sorted(builtin_sweeps()))})", path=config
        )
    data = read_yaml_mapping(config, "sweep config")  # duplicate keys and non-mappings refused, with the line
    if isinstance(data, dict) and "benchmarks" in data:
        refuse_extra_flags(ctx, "--config", allowed=(*CONFIG_OVERRIDES, *EXECUTION_FLAGS))
        cfg = load_run_config(config)
    else:
        from mmrag.scenarios import load_sweep

        load_sweep(config)  # validates the file, naming file and field on error
        gen = generation(temperature, top_p, max_new_tokens, seed, gen_kwargs)
        cfg = flag_config(
            benchmarks=[BenchmarkRef(name=b) for b in split_list(benchmark)],
            models=[parse_model_arg(m, base_url=base_url, api_key_env=api_key_env, **gen) for m in split_models(model)],
            sweeps=[str(config)],
            limit=limit,
        )
        with_fields(cfg, field)
    cfg.judge = judge_config(judge, judge_model, judge_base_url, judge_api_key_env, base=cfg.judge)
    target = out or (Path(cfg.out) if cfg.out else default_run_dir("sweep"))
    with trusting_code(allow_code), engine_scope(engine, address, replicas):
        run_and_print(
            with_execution(cfg, max_concurrency, max_failures),
            target,
            title=f"Sweep {config.name}",
            retry_failed=retry_errors,
        )


def demo(
    out: Path | None = typer.Option(None, "--out", "-o", help=OUT_HELP),
    limit: int | None = typer.Option(None, "--limit", min=1, help=LIMIT_HELP),
    distractors: int = typer.Option(
        2, "--distractors", min=1, max=64, help="distractor count of the realistic and adversarial scenarios"
    ),
    seed: int = typer.Option(0, "--seed", help="seed of the demo world and of the scenario composer"),
) -> None:
    """The embedded default: the generated demo world, four DeflectionBench scenarios, two baselines."""
    from mmrag.benchmarks.demo.world import MANIFEST, world_dir
    from mmrag.models import parse_model_arg

    if not (world_dir(seed) / MANIFEST).is_file():
        # a first demo: MiniLM's import and load overlap the world's generation.  Once the world
        # exists, so do its indices, mining-query vectors and (usually) the replies: MiniLM is
        # loaded only if something still needs it.
        from mmrag.indices.encoders import preload_minilm

        preload_minilm()

    specs = specs_from_flags(list(DEFLECTION.scenario_kinds), [distractors], ["text"], "any", ["none"], seed)
    cfg = RunConfig(
        benchmarks=[BenchmarkRef(name="demo", options={"seed": seed})],
        scenarios=specs,
        models=[parse_model_arg("always-deflect"), parse_model_arg("context-reader")],
        limit=limit,
        seed=seed,
    )
    run_and_print(
        cfg, out or default_run_dir("demo"), title="mmrag demo: VLM-DeflectionBench scenarios on the demo world"
    )
