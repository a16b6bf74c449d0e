"""VLM-DeflectionBench's dynamic curation pipeline (parametric filter, negative mining, oracle filter)."""

from mmrag.curation.config import CurateConfig, load_curate_config
from mmrag.curation.pipeline import curate

__all__ = ["CurateConfig", "curate", "load_curate_config"]
