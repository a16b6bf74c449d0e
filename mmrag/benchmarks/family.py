"""Benchmark families as registered objects: which scenario kinds, which judge, which metrics.

A benchmark (a loader registered in :data:`~mmrag.benchmarks.base.BENCHMARKS`) names its family by
id in ``Benchmark.kind``.  The family says everything the run layer needs to score it, so nothing
dispatches on a family's name: the scenario kinds its samples can be composed under (in paper
order; the defaults when a run names none that fit), the registered judge that scores it (``None``
= the run's ``--judge`` mode, for open answers) and the registered metric function (a name in
:data:`mmrag.metrics.METRICS` or a dotted path).

Built-ins: ``deflection`` (VLM-DeflectionBench), ``humblebench``, ``knowhal``.  A third-party
package adds a family through the entry-point group ``mmrag.benchmark_families`` (an entry point
naming a :class:`BenchmarkFamily` instance) next to its loader in ``mmrag.benchmarks`` — two groups
because a record read back months later names its family, not its loader, and must still find the
family's metrics.  This mirrors inspect_ai's ``@scorer(metrics=[...])``: the scoring contract is
declared where the benchmark is, in a few lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmrag.registry import Registry
from mmrag.scenarios import kinds as _kinds


@dataclass(frozen=True)
class BenchmarkFamily:
    id: str
    label: str
    #: scenario kind ids its samples can be shown under, in the order a run lists them
    scenario_kinds: tuple[str, ...]
    #: a name in METRICS (or ``pkg.module:function``): ``items -> dict``, resolved by
    #: :func:`mmrag.metrics.family_metric` (benchmarks do not import metrics)
    metrics: str
    #: a registered judge name (``mcq``, ``knowhal`` …); None = the run's judge mode
    judge: str | None = None
    description: str = ""

    def judge_name(self, run_mode: str) -> str:
        """The judge to build: the family's own, else the run's mode (rule | llm | rule+llm)."""
        return self.judge or run_mode

    def default_specs(self, n_distractors: int = 2, seed: int = 0) -> list:
        """One spec per scenario kind of the family (distractor kinds at ``n_distractors``)."""
        from mmrag.scenarios.kinds import get_kind
        from mmrag.scenarios.spec import ScenarioSpec

        specs = []
        for k in self.scenario_kinds:
            kind = get_kind(k)
            n = max(n_distractors, kind.min_distractors) if "n_distractors" in kind.knobs else 0
            specs.append(ScenarioSpec(kind=k, n_distractors=n, seed=seed))
        return specs


#: ``BENCHMARK_FAMILIES.get(id) -> BenchmarkFamily``; entry-point group ``mmrag.benchmark_families``.
BENCHMARK_FAMILIES: Registry[BenchmarkFamily] = Registry("benchmark family", group="mmrag.benchmark_families")


def register_family(family: BenchmarkFamily) -> BenchmarkFamily:
    return BENCHMARK_FAMILIES.add(family)


def get_family(family_id: str) -> BenchmarkFamily:
    """The registered family ``family_id``; InputError naming the known ones."""
    return BENCHMARK_FAMILIES.get_instance(family_id, BenchmarkFamily, "benchmark kind")


DEFLECTION = register_family(
    BenchmarkFamily(
        id="deflection",
        label="VLM-DeflectionBench",
        scenario_kinds=tuple(k.id for k in (_kinds.PARAMETRIC, _kinds.ORACLE, _kinds.REALISTIC, _kinds.ADVERSARIAL)),
        metrics="deflection",
        judge=None,
        description="open answers judged correct / deflection / hallucination under retrieval scenarios",
    )
)
HUMBLEBENCH = register_family(
    BenchmarkFamily(
        id="humblebench",
        label="HumbleBench",
        scenario_kinds=(_kinds.HUMBLEBENCH.id,),
        metrics="humblebench",
        judge="mcq",
        description="five-option MCQ with a none-of-the-above option, scored by option matching",
    )
)
KNOWHAL = register_family(
    BenchmarkFamily(
        id="knowhal",
        label="KnowHal",
        scenario_kinds=(_kinds.KNOWHAL.id,),
        metrics="knowhal",
        judge="knowhal",
        description="paired positive / false-premise questions over Entity, Attribute, Relation, Knowledge",
    )
)
