"""From a RunConfig to per-benchmark plans: samples, the scenario specs that fit, and a composer
bound to the benchmark's document store and negative miner.

The miner (its indices loaded, or built, and its encoder) can be left to be built when first
needed (``prepare_benchmarks(..., lazy=True)``): a resumed run whose remaining cells show no
negatives, a finished run above all, then never loads an index or an encoder.  The engine builds
it before anything is written when the remaining cells need it (:meth:`BenchmarkPlan.ensure_miner`),
so a miner that cannot be built still fails the command before the run directory is touched."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrag.benchmarks import get_family, load_benchmark
from mmrag.errors import InputError
from mmrag.indices.progress import status
from mmrag.runs.config import BenchmarkRef, RunConfig
from mmrag.scenarios.spec import ScenarioSpec
from mmrag.schema import Prompt, Sample
from mmrag.util import mmrag_home


def default_specs(kind: str, n_distractors: int = 2, seed: int = 0) -> list[ScenarioSpec]:
    """One spec per scenario kind of the benchmark family ``kind`` (its registered defaults)."""
    from mmrag.benchmarks.family import get_family

    return get_family(kind).default_specs(n_distractors=n_distractors, seed=seed)


def all_specs(config: RunConfig) -> list[ScenarioSpec]:
    from mmrag.scenarios import load_sweep

    specs = list(config.scenarios)
    for path in config.sweeps:
        specs.extend(load_sweep(path).expand())
    seen, out = set(), []
    for s in specs:
        if s.id not in seen:
            seen.add(s.id)
            out.append(s)
    return out


@dataclass
class BenchmarkPlan:
    ref: BenchmarkRef
    kind: str
    samples: list[Sample]
    specs: list[ScenarioSpec]
    fingerprint: str
    miner: Any = None
    store: Any = None
    index_hashes: dict[str, str] = field(default_factory=dict)
    #: builds the miner when it was left for later (``lazy``); None once built or when none is needed
    build: Callable[[], Any] | None = None

    def ensure_miner(self) -> Any:
        """The miner, built now if it was left for later."""
        if self.build is not None:
            build, self.build = self.build, None
            self.miner = build()
            self.index_hashes = index_hashes(self.miner)
        return self.miner

    @property
    def miner_built(self) -> bool:
        return self.build is None

    def prefetch(self, cells: list[tuple[Sample, ScenarioSpec]]) -> None:
        """Embed the mining queries of the cells about to be composed in one encoder call per
        index kind (not one per sample); cells already done on a resume cost nothing."""
        todo = [(sm, sp) for sm, sp in cells if sp.uses_negatives]
        if todo:
            self.ensure_miner()
        if self.miner is not None and todo and hasattr(self.miner, "prefetch"):
            self.miner.prefetch(list({sm.id: sm for sm, _ in todo}.values()), _modalities([sp for _, sp in todo]))

    def fits(self, sample: Sample, spec: ScenarioSpec) -> bool:
        from mmrag.scenarios import applicable

        return applicable(sample, spec, self.store) is None

    def compose(self, sample: Sample, spec: ScenarioSpec) -> Prompt | None:
        """The prompt, or None when the sample turns out not to fit the spec (counted by the engine)."""
        from mmrag.scenarios import ScenarioNotApplicable, compose

        try:
            miner = self.ensure_miner() if spec.uses_negatives else self.miner
            return compose(sample, spec, miner=miner, store=self.store)
        except ScenarioNotApplicable:
            return None


def _retrieval_for(
    bench, specs: list[ScenarioSpec], config: RunConfig, progress: Any, lazy: bool = False
) -> tuple[Any, Any, dict, Callable[[], Any] | None]:
    """(miner, document store, index hashes, miner builder left for later)."""
    needs_neg = any(s.uses_negatives for s in specs)
    needs_gold = any(s.uses_gold for s in specs)
    if not (needs_neg or needs_gold):
        return None, None, {}, None
    docs = list(bench.documents())
    if not docs:
        raise InputError(f"benchmark '{bench.name}' has no knowledge base, but scenarios need contexts")
    from mmrag.retrieval import InMemoryDocStore

    store = InMemoryDocStore(docs)
    if not needs_neg:
        return None, store, {}, None
    if lazy:
        return None, store, {}, lambda: build_miner(docs, config, progress=progress is not None, store=store)
    miner = build_miner(docs, config, progress=progress is not None, store=store)
    return miner, miner.store, index_hashes(miner), None


def _modalities(specs: list[ScenarioSpec]) -> list[str]:
    mods = {s.negative_modality for s in specs if s.uses_negatives}
    return ["any"] if "any" in mods else sorted(mods)


def build_miner(docs: list, config: RunConfig, progress: bool | None = None, store: Any = None):
    """The world miner over ``docs`` (and ``store``, their document store, when already built),
    with any retriever the config names swapped in."""
    from mmrag.retrieval import IndexMiner, build_world_miner, create_retriever

    cache_dir = Path(config.retrieval.cache_dir) if config.retrieval.cache_dir else mmrag_home() / "indices"
    miner = build_world_miner(docs, cache_dir, factory=config.retrieval.factory, progress=progress, store=store)
    if not config.retrieval.retrievers:
        return miner
    retrievers = dict(miner.retrievers)
    for kind, spec in config.retrieval.retrievers.items():
        status(
            f"loading the {kind} retriever {spec if isinstance(spec, str) else spec.get('name', '')} over {len(docs):,} documents"
        )
        retrievers[kind] = create_retriever(spec, documents=docs, store=miner.store)
    if any(s.negatives == "curated" for s in all_specs(config)):  # the precedence, said where it applies
        status(
            "negatives: each sample's curated negatives come first; the retrievers above fill only a "
            "shortfall (scenarios with negatives: regenerate ask them for every negative)"
        )
    return IndexMiner(miner.store, retrievers, vector_cache=miner.vector_cache)


def index_hashes(miner) -> dict[str, str]:
    """kind -> hash of the index manifest (or the retriever fingerprint for custom retrievers)."""
    from mmrag.schema import stable_id

    out = {}
    for kind, r in getattr(miner, "retrievers", {}).items():
        index = getattr(r, "index", None)
        manifest = getattr(index, "manifest", None)
        out[kind] = (
            stable_id(manifest.model_dump(mode="json")) if manifest is not None else f"retriever:{r.fingerprint}"
        )
    return out


def prepare_benchmarks(config: RunConfig, progress: Any = None, lazy: bool = False) -> list[BenchmarkPlan]:
    """One plan per benchmark; ``lazy`` leaves each miner to be built when first needed."""
    specs = all_specs(config)
    plans = []
    for ref in config.benchmarks:
        status(f"loading benchmark {ref.name}" + (f" from {ref.source}" if ref.source else ""))
        bench = load_benchmark(ref.name, ref.source, **ref.options)
        fitting = [s for s in specs if s.kind in get_family(bench.kind).scenario_kinds]
        if not fitting:
            fitting = default_specs(bench.kind, seed=config.seed)
        samples = list(bench.samples())
        if config.limit is not None:
            samples = samples[: config.limit]
        miner, store, hashes, build = _retrieval_for(bench, fitting, config, progress, lazy)
        plans.append(
            BenchmarkPlan(
                ref=ref,
                kind=bench.kind,
                samples=samples,
                specs=fitting,
                fingerprint=bench.fingerprint(),
                miner=miner,
                store=store,
                index_hashes=hashes,
                build=build,
            )
        )
    return plans
