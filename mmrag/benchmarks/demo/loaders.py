"""The demo world as benchmarks, read through the same loaders as real data.

``demo`` (kind deflection), ``demo-humblebench`` and ``demo-knowhal``: with no source the world for
``seed`` (option, default 0) is generated or reused under ``mmrag_home()/demo``; a source may name
an existing world folder instead (e.g. one generated with another seed or copied elsewhere).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmrag.benchmarks._loading import take_options
from mmrag.benchmarks.base import BENCHMARKS
from mmrag.benchmarks.deflection import DeflectionBenchmark
from mmrag.benchmarks.demo.world import ensure_world
from mmrag.benchmarks.humblebench import HumbleBenchBenchmark
from mmrag.benchmarks.knowhal import KnowHalBenchmark
from mmrag.errors import InputError


def _world(source: str | None, seed: int) -> Path:
    if source is None:
        return ensure_world(seed=int(seed))
    p = Path(source)
    if not p.is_dir():
        raise InputError("a demo source must be a demo world folder (see `ensure_world`)", path=p)
    return p


@BENCHMARKS.register("demo")
def demo_benchmark(source: str | None = None, **options: Any) -> DeflectionBenchmark:
    """The demo world's knowledge questions and knowledge base (kind ``deflection``)."""
    opts = take_options("demo", options, {"seed": 0})
    w = _world(source, opts["seed"])
    return DeflectionBenchmark(w / "deflection.jsonl", kb=w / "kb.jsonl", name="demo")


@BENCHMARKS.register("demo-humblebench")
def demo_humblebench(source: str | None = None, **options: Any) -> HumbleBenchBenchmark:
    """The demo world's drawn-scene MCQs, read by the real HumbleBench imagefolder loader."""
    opts = take_options("demo-humblebench", options, {"seed": 0})
    return HumbleBenchBenchmark(
        _world(source, opts["seed"]) / "humblebench", name="demo-humblebench", source_tag="demo"
    )


@BENCHMARKS.register("demo-knowhal")
def demo_knowhal(source: str | None = None, **options: Any) -> KnowHalBenchmark:
    """The demo world's KnowHal-style pairs, read by the real KnowHal loader."""
    opts = take_options("demo-knowhal", options, {"seed": 0})
    return KnowHalBenchmark(_world(source, opts["seed"]) / "knowhal.jsonl", name="demo-knowhal", source="demo")
