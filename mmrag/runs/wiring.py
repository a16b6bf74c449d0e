"""Build the model and judge a run config names (the only place the engine touches registries)."""

from __future__ import annotations

from pathlib import Path

from mmrag.indices.progress import status
from mmrag.models.base import GenerationSettings, ModelSpec
from mmrag.runs.config import RunConfig


def response_cache(config: RunConfig):
    """The shared cache under MMRAG_HOME unless the config isolates or disables it."""
    if not config.cache.enabled:
        return None
    from mmrag.models import ResponseCache

    return ResponseCache(Path(config.cache.path)) if config.cache.path else ResponseCache.default()


def model_settings(spec: ModelSpec, default: GenerationSettings) -> GenerationSettings:
    """The settings a model is asked with: its own (``settings:`` of its spec, which its fingerprint
    names) when it has any, else the run's or curation's."""
    return spec.settings if spec.settings != GenerationSettings() else default


def make_model(spec: ModelSpec, config: RunConfig):
    from mmrag.models import create_model

    return create_model(spec, cache=response_cache(config))


def make_judge(benchmark_kind: str, config: RunConfig):
    """The judge the benchmark family declares (``BenchmarkFamily.judge``), else the run's mode."""
    from mmrag.benchmarks.family import get_family
    from mmrag.judging import make_judge as _make

    spec = config.judge.model
    llm = make_model(spec, config) if spec is not None else None
    name = get_family(benchmark_kind).judge_name(config.judge.mode)
    status(f"loading the judge {name}" + (f" ({spec.label})" if spec is not None else ""))
    return _make(name, llm=llm)
