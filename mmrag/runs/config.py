"""RunConfig: the typed, YAML-loadable description of a run (benchmarks x scenarios x models x judge).

Every field is validated with ``extra="forbid"``: a misspelt key in ``run.yaml`` is an error naming
the file and the field, never a silently ignored knob.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mmrag.mapping_files import load_yaml_model
from mmrag.models.base import GenerationSettings, ModelSpec
from mmrag.scenarios.spec import ScenarioSpec


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BenchmarkRef(_Cfg):
    name: str
    source: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class JudgeConfig(_Cfg):
    mode: Literal["rule", "llm", "rule+llm"] = "rule"
    model: ModelSpec | None = None


class CacheConfig(_Cfg):
    enabled: bool = True
    #: None = the shared cache under MMRAG_HOME; a path isolates this run's cache
    path: str | None = None


class RetrievalConfig(_Cfg):
    """Where negatives come from.  The world miner builds (and caches) text, visual and multimodal
    indices over the benchmark's own knowledge base with the default encoders; ``retrievers``
    replaces the retriever of any of those kinds with your own, named like any retriever spec
    (``"bm25"``, ``"my_pkg.module:MyRetriever"``, an entry point of ``mmrag.retrievers``, or
    ``{name: ..., **kwargs}``; factories that accept ``documents=`` / ``store=`` receive them)."""

    miner: Literal["world"] = "world"
    retrievers: dict[Literal["text", "visual", "multimodal"], str | dict[str, Any]] = Field(default_factory=dict)
    cache_dir: str | None = None
    factory: str = "Flat"


class RunConfig(_Cfg):
    benchmarks: list[BenchmarkRef] = Field(min_length=1)
    scenarios: list[ScenarioSpec] = Field(default_factory=list)
    sweeps: list[str] = Field(default_factory=list)
    models: list[ModelSpec] = Field(min_length=1)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    settings: GenerationSettings | None = None
    limit: int | None = Field(default=None, ge=1, strict=True)  # strict: `limit: true` is not 1
    #: prompts per model call for backends that compute a batch in one pass (local models); remote
    #: backends take one prompt per call and keep ``max_concurrency`` of them in flight
    batch_size: int = Field(default=32, ge=1, strict=True)
    #: the error budget: more than this fraction of the run's cells failed -> the run fails
    max_failures: float = Field(default=0.05, ge=0, le=1)
    #: records are committed (fsynced) at least every ``flush_every`` records or ``flush_seconds``
    flush_every: int = Field(default=500, ge=1)
    flush_seconds: float = Field(default=1.0, gt=0)
    seed: int = Field(default=0, strict=True)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    out: str | None = None

    @staticmethod
    def builtin_sweeps() -> dict[str, str]:
        """The ready-made sweeps a config may name in ``sweeps`` (``distractor-curve``,
        ``modality-matrix``, ``strictness`` ...): name -> the scenarios it expands to, as labels."""
        from mmrag.scenarios.sweep import builtin_sweeps, load_sweep

        return {
            name: ", ".join(s.label for s in load_sweep(path).expand())
            for name, path in sorted(builtin_sweeps().items())
        }

    @field_validator("scenarios", mode="before")
    @classmethod
    def _no_ignored_knobs(cls, value: Any) -> Any:
        """A scenario written in a config must not set a knob its kind ignores (``oracle`` with
        ``n_distractors: 5`` would silently run with none): that is an error naming the field."""
        from mmrag.scenarios.spec import canonical_fields

        for i, raw in enumerate(value if isinstance(value, list) else []):
            if not isinstance(raw, dict):
                continue
            canon = canonical_fields(raw)
            for name, v in raw.items():
                if name != "stress" and name in canon and canon[name] != v:
                    raise ValueError(
                        f"scenario {i} ({raw.get('kind', 'oracle')}) ignores '{name}' (set to {v!r}); "
                        f"remove it or choose a kind that uses it"
                    )
        return value

    @field_validator("benchmarks", "models", mode="after")
    @classmethod
    def _each_once(cls, value: list, info) -> list:
        """A benchmark or a model named twice (``-b demo,demo``, ``-m a,a``) would double every
        record, and n, rates and CIs would count each cell twice: refused, naming the duplicate.
        Models are told apart by their label (``backend:model``), benchmarks by their name: the
        summary groups records by those, so two entries sharing one would be merged."""
        what = info.field_name[:-1]
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            name = item.name if what == "benchmark" else item.label
            if name in seen:
                raise ValueError(
                    f"{what} '{name}' is named twice (entries {seen[name]} and {i}); name each "
                    f"{what} once (its records would be counted twice)"
                )
            seen[name] = i
        return value


#: knobs of how a run executes, not of what it measures: they may differ between a run and its resume
EXECUTION_KNOBS = ("out", "batch_size", "max_failures", "flush_every", "flush_seconds")


def load_run_config(path: str | Path) -> RunConfig:
    return load_yaml_model(path, RunConfig, "config file")
