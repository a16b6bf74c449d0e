"""mmrag.models: the VLM protocol, its backends, the baselines and the response cache.

Importing this package is cheap: backends that need torch, transformers or vllm are imported when a
model of that backend is created (``create_model``), not before.
"""

from mmrag.models.base import MODELS, VLM, Capabilities, GenerationSettings, ModelSpec
from mmrag.models.baselines import AlwaysDeflect, AlwaysNota, Baseline, FirstOption, RandomChoice
from mmrag.models.cache import ResponseCache, cache_key
from mmrag.models.cached import CachedVLM
from mmrag.models.concurrency import AIMDLimiter
from mmrag.models.factory import BACKENDS, BASELINES, create_model, open_cache, parse_model_arg
from mmrag.models.openai_compat import OpenAICompatible, OpenAIOptions

__all__ = [
    "MODELS",
    "VLM",
    "Capabilities",
    "GenerationSettings",
    "ModelSpec",
    "AlwaysDeflect",
    "AlwaysNota",
    "Baseline",
    "FirstOption",
    "RandomChoice",
    "ContextReader",
    "ResponseCache",
    "cache_key",
    "CachedVLM",
    "AIMDLimiter",
    "BACKENDS",
    "BASELINES",
    "create_model",
    "open_cache",
    "parse_model_arg",
    "OpenAICompatible",
    "OpenAIOptions",
    "TransformersVLM",
    "VLLMVLM",
]


def __getattr__(name: str):
    """Heavy classes on first use: ``from mmrag.models import TransformersVLM`` imports torch then."""
    if name == "TransformersVLM":
        from mmrag.models.transformers_vlm import TransformersVLM

        return TransformersVLM
    if name == "VLLMVLM":
        from mmrag.models.vllm_vlm import VLLMVLM

        return VLLMVLM
    if name == "ContextReader":
        from mmrag.models.context_reader import ContextReader

        return ContextReader
    raise AttributeError(f"module 'mmrag.models' has no attribute {name!r}")
