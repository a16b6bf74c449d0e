"""From command-line flags (or a run directory's manifest) to a validated :class:`RunConfig`.

Kept apart from :mod:`mmrag.commands.run` so the command functions there hold only their flags
and the order of the steps, while the translation of flags into a config (and each rule broken
turned into one :class:`InputError` naming the flag) is shared by ``run``, ``sweep``, ``demo``
and ``reproduce``.
"""

from __future__ import annotations

import json
from pathlib import Path

from mmrag.errors import InputError
from mmrag.runs.config import BenchmarkRef, CacheConfig, JudgeConfig, RunConfig
from mmrag.scenarios.kinds import get_kind, kind_ids
from mmrag.scenarios.spec import ScenarioSpec


def split_list(values: list[str] | None) -> list[str]:
    """Repeatable, comma-separated flag values as one flat list (``-b a,b -b c`` -> a, b, c)."""
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def split_models(values: list[str] | None) -> list[str]:
    """Like :func:`split_list`, but a ``name=value`` piece continues the model before it, so
    ``sim-vlm:text_prior=0.9,vision=0.8`` stays one model while ``a,b`` are two."""
    out: list[str] = []
    for piece in split_list(values):
        if out and "=" in piece and ":" not in piece:
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


#: ScenarioSpec field -> the flag that sets it, where the names differ
_SPEC_FLAGS = {"n_distractors": "--distractors"}


def specs_from_flags(
    kinds: list[str], distractors: list[int], negative: list[str], positive: str, strictness: list[str], seed: int
) -> list[ScenarioSpec]:
    from pydantic import ValidationError

    specs = []
    for kind in kinds:
        if kind not in kind_ids():
            raise InputError(f"unknown scenario '{kind}'; known: {', '.join(kind_ids())}", field="--scenarios")
        knobs = get_kind(kind).knobs
        for strict in strictness:
            ns = distractors if "n_distractors" in knobs else [0]
            negs = negative if "negative_modality" in knobs else ["text"]
            for n in ns:
                for neg in negs:
                    try:
                        specs.append(
                            ScenarioSpec.model_validate(  # flag values: pydantic checks them, naming the flag
                                {
                                    "kind": kind,
                                    "n_distractors": n,
                                    "negative_modality": neg,
                                    "positive_modality": positive,
                                    "strictness": strict,
                                    "seed": seed,
                                }
                            )
                        )
                    except ValidationError as exc:
                        err = exc.errors()[0]
                        name = str(err["loc"][0])
                        flag = _SPEC_FLAGS.get(name, "--" + name.replace("_", "-"))
                        raise InputError(err["msg"], field=flag) from None
    return specs


def config_from_flags(
    benchmark: list[str],
    model: list[str],
    base_url: str | None,
    api_key_env: str | None,
    scenarios: list[str],
    distractors: list[int],
    negative_modality: list[str],
    positive_modality: str,
    strictness: list[str],
    limit: int | None,
    seed: int,
    judge: str,
    no_cache: bool,
    cache_path: str | None,
    batch_size: int,
    gen: dict,
    judge_cfg: JudgeConfig | None = None,
) -> RunConfig:
    from mmrag.models import parse_model_arg

    if not benchmark:
        raise InputError("give --benchmark NAME (or --config FILE)", field="--benchmark")
    if not model:
        raise InputError("give --model BACKEND:MODEL or a baseline name (or --config FILE)", field="--model")
    specs = specs_from_flags(scenarios, distractors, negative_modality, positive_modality, strictness, seed)
    models = [parse_model_arg(m, base_url=base_url, api_key_env=api_key_env, **gen) for m in model]
    return flag_config(
        benchmarks=[BenchmarkRef(name=b) for b in benchmark],
        scenarios=specs,
        models=models,
        judge=judge_cfg or JudgeConfig.model_validate({"mode": judge}),
        limit=limit,
        seed=seed,
        batch_size=batch_size,
        cache=CacheConfig(enabled=not no_cache, path=cache_path),
    )


def with_fields(cfg: RunConfig, values: list[str] | None) -> None:
    """``--field`` mappings onto the run's ``hf:`` benchmarks (an error when there is none)."""
    from mmrag.benchmarks.hf import PREFIX, parse_fields

    if not values:
        return
    refs = [b for b in cfg.benchmarks if b.name == "hf" or b.name.startswith(PREFIX)]
    if not refs:
        raise InputError("--field maps the columns of an hf:PATH_OR_ID benchmark; none is given", field="--field")
    for ref in refs:
        ref.options["fields"] = parse_fields(",".join(values))


def flag_config(**fields) -> RunConfig:
    """A RunConfig built from flags; a rule it breaks (a model named twice) is one InputError."""
    from pydantic import ValidationError

    from mmrag.errors import pydantic_field, pydantic_message

    try:
        return RunConfig(**fields)
    except ValidationError as exc:
        loc = pydantic_field(exc).split(".")[0]
        flag = {"benchmarks": "--benchmark", "models": "--model"}.get(loc, loc)
        raise InputError(pydantic_message(exc).removeprefix("Value error, "), field=flag) from None


def config_from_manifest(run_dir: Path) -> RunConfig:
    """The config of a run directory, read as data: a damaged manifest or one whose secrets were
    redacted when it was written is one clear error (the dotted-path check in the registries
    refuses any code it names, since ``--resume`` never runs inside ``allow_code``)."""
    from pydantic import ValidationError

    from mmrag.errors import pydantic_field, pydantic_message
    from mmrag.redact import REDACTED, find_redacted

    mpath = run_dir / "manifest.json"
    if not mpath.is_file():
        raise InputError("no manifest.json here: not a run directory", path=run_dir)
    try:
        data = json.loads(mpath.read_bytes().decode("utf-8"))
        raw = data["config"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"unreadable manifest ({type(exc).__name__}); start a new run with --config", path=mpath
        ) from None
    hidden = find_redacted(raw)
    if hidden:
        raise InputError(
            f"the manifest's config had a secret removed ({REDACTED} at '{hidden}'); resume with "
            "the original config: --config FILE --out DIR (keys belong in --api-key-env)",
            path=mpath,
            field=f"config.{hidden}",
        )
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise InputError(pydantic_message(exc), path=mpath, field=f"config.{pydantic_field(exc)}") from None


def with_execution(cfg: RunConfig, max_concurrency: int | None, max_failures: str | None) -> RunConfig:
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
