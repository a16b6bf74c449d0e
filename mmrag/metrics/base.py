"""What metrics consume (:class:`Scored`), their registry, and the grouping keys.

A metric is a function ``items -> dict`` over :class:`Scored` tuples; :data:`METRICS` maps a
benchmark kind (``deflection`` | ``humblebench`` | ``knowhal``) to it, so the run layer picks the
metric from ``Benchmark.kind`` without dispatching on names.

Grouping keys (``by=``) are looked up in :data:`GROUP_KEYS` (``scenario``, ``source``,
``strictness``, ``modality_cell`` ...), or given as ``scenario.FIELD`` / ``metadata.FIELD`` /
``prompt.FIELD``, or as a callable ``Scored -> value``.  A tuple of keys crosses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from mmrag.errors import InputError
from mmrag.registry import Registry
from mmrag.schema import Prompt, Response, Sample, Verdict


class Scored(NamedTuple):
    sample: Sample
    prompt: Prompt
    response: Response
    verdict: Verdict


MetricFn = Callable[..., dict[str, Any]]

#: ``METRICS.get(kind)(items, **options) -> dict``; entry-point group ``mmrag.metrics``.
METRICS: Registry[dict[str, Any]] = Registry("metric", group="mmrag.metrics")


def family_metric(name: str) -> MetricFn:
    """The metric function a benchmark family names (``BenchmarkFamily.metrics``).  Resolved here,
    not on the family: benchmarks sit below metrics (a family names its metric, as it names its
    judge).  A ``pkg.module:function`` path is part of the family object, which only code defines
    (a built-in or an installed entry point), never a config or a run directory; so it resolves
    like a scenario kind's builder, not through the guarded registry path that refuses dotted
    names read from configs."""
    from mmrag.registry import load_dotted

    if ":" in name:
        return load_dotted(name)
    return METRICS.get(name)


def _scenario_field(name: str) -> Callable[[Scored], Any]:
    return lambda s: s.prompt.scenario.get(name)


GROUP_KEYS: dict[str, Callable[[Scored], Any]] = {
    "scenario": lambda s: s.prompt.scenario.get("kind", s.prompt.scenario_id or "unknown"),
    "scenario_id": lambda s: s.prompt.scenario_id or "unknown",
    "source": lambda s: s.sample.source or "unknown",
    "benchmark": lambda s: s.sample.benchmark,
    "model": lambda s: s.response.model or "unknown",
    "strictness": _scenario_field("strictness"),
    "n_distractors": _scenario_field("n_distractors"),
    "positive_modality": _scenario_field("positive_modality"),
    "negative_modality": _scenario_field("negative_modality"),
    "modality_cell": lambda s: (
        f"pos_{s.prompt.scenario.get('positive_modality')}/neg_{s.prompt.scenario.get('negative_modality')}"
    ),
    "judge": lambda s: s.verdict.judge_id,
}

GroupKey = str | Callable[[Scored], Any] | Sequence[str | Callable[[Scored], Any]]


def key_function(key: GroupKey) -> tuple[str, Callable[[Scored], Any]]:
    """(display name, getter) of a grouping key."""
    if callable(key):
        return getattr(key, "__name__", "custom"), key
    if isinstance(key, str):
        if key in GROUP_KEYS:
            return key, GROUP_KEYS[key]
        head, _, field = key.partition(".")
        if field and head == "scenario":
            return key, _scenario_field(field)
        if field and head == "metadata":
            return key, lambda s: s.sample.metadata.get(field)
        if field and head == "prompt":
            return key, lambda s: s.prompt.metadata.get(field)
        raise InputError(
            f"unknown grouping key '{key}'; known: {', '.join(sorted(GROUP_KEYS))}, "
            "scenario.FIELD, metadata.FIELD, prompt.FIELD",
            field="by",
        )
    parts = [key_function(k) for k in key]
    return "×".join(n for n, _ in parts), lambda s: "|".join(str(g(s)) for _, g in parts)


def group(items: Sequence[Scored], key: GroupKey) -> tuple[str, dict[str, list[Scored]]]:
    name, fn = key_function(key)
    groups: dict[str, list[Scored]] = {}
    for it in items:
        groups.setdefault(str(fn(it)), []).append(it)
    return name, dict(sorted(groups.items()))


def clusters_of(items: Iterable[Scored]) -> np.ndarray:
    """Bootstrap clusters: the sample's question id."""
    return np.array([it.sample.question_id or it.sample.id for it in items], dtype=object)


def outcome_counts(items: Iterable[Scored]) -> dict[str, int]:
    from mmrag.schema import OUTCOMES

    counts = {o: 0 for o in OUTCOMES}
    for it in items:
        counts[it.verdict.outcome] += 1
    return counts
