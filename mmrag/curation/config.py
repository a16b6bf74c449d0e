"""CurateConfig: the knobs of VLM-DeflectionBench's dynamic curation pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from mmrag.mapping_files import load_yaml_model
from mmrag.models.base import GenerationSettings, ModelSpec
from mmrag.runs.config import BenchmarkRef, CacheConfig, JudgeConfig, RetrievalConfig
from mmrag.schema import Modality


class CurateConfig(BaseModel):
    """Stage I keeps a sample only if *every* gating model fails it without context; Stage II mines
    ``negatives_per_modality`` hard negatives from each index in ``modalities``; Stage III drops a
    sample that every gating model still fails with gold evidence, drops each negative with which
    any gating model answers correctly, and requires ``k_min`` negatives to survive (the paper: 5).
    The miner is the one ``mmrag run`` builds from ``retrieval`` (same retrievers)."""

    model_config = ConfigDict(extra="forbid")

    benchmark: BenchmarkRef
    gating_models: list[ModelSpec] = Field(min_length=1)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    settings: GenerationSettings = Field(default_factory=GenerationSettings)
    modalities: list[Literal["text", "image", "multimodal"]] = Field(default_factory=lambda: list(get_args(Modality)))
    negatives_per_modality: int = Field(default=4, ge=1)
    k_min: int = Field(default=5, ge=0)
    #: "curated": Stage II starts from the sample's own negatives (WebQA negFacts, MMDocRAG quotes,
    #: MRAG-Bench retrieved images, an earlier curation), mining only a shortfall; "regenerate": mine
    negatives: Literal["curated", "regenerate"] = "curated"
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0
    batch_size: int = Field(default=64, ge=1)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    out: str | None = None


def load_curate_config(path: str | Path) -> CurateConfig:
    return load_yaml_model(path, CurateConfig, "config file")
