"""Which negatives a realistic / adversarial prompt shows: the sample's curated ones, or mined ones.

VLM-DeflectionBench's negatives are *curated*: Stage III keeps only distractors with which no gating
model answers, and several sources ship their own hard negatives (WebQA's ``negFacts``, MMDocRAG's
distractor quotes, MRAG-Bench's retrieved images).  A sample carries them as
``metadata["negative_doc_ids"]``.  With ``spec.negatives == "curated"`` (the default) those are the
negatives: ``n`` are drawn from them, seeded by (spec.seed, sample.id), restricted to the spec's
negative modality; for ``any`` the draw goes round-robin over the modalities present, starting at a
seeded one, so that text, image and image+caption negatives all appear across samples.  The miner
only fills a shortfall (fewer curated negatives than asked), and ``metadata["mining"]`` says how
many came from where (``from_curated``, ``from_miner``, ``filled``).  A sample without curated
negatives is mined as before.  ``negatives: regenerate`` always mines from the indices — how users
test their own retriever; ``mmrag curate`` re-applies Stage III to such negatives.
"""

from __future__ import annotations

from typing import Any

from mmrag.errors import InputError
from mmrag.retrieval.base import DocStore, NegativeMiner
from mmrag.scenarios.base import seeded_rng
from mmrag.scenarios.spec import ScenarioSpec
from mmrag.schema import Document, Sample


def curated_ids(sample: Sample) -> list[str]:
    ids = sample.metadata.get("negative_doc_ids") or []
    return [str(i) for i in ids] if isinstance(ids, list) else []


def _modality_ok(doc: Document, modality: str) -> bool:
    return modality == "any" or doc.modality == modality


def draw_curated(sample: Sample, spec: ScenarioSpec, store: DocStore | None, n: int) -> tuple[list[Document], int]:
    """Up to ``n`` curated negatives of the spec's modality, seeded; and how many curated ids are
    not in the store (counted, never shown)."""
    gold = set(sample.gold_doc_ids)
    pool: list[Document] = []
    missing = 0
    for doc_id in dict.fromkeys(curated_ids(sample)):
        if store is None or doc_id not in store:
            missing += 1
            continue
        doc = store.get(doc_id)
        if doc_id not in gold and _modality_ok(doc, spec.negative_modality):
            pool.append(doc)
    rng = seeded_rng(spec, sample, "curated_negatives")
    by_mod: dict[str, list[Document]] = {}
    for doc in pool:
        by_mod.setdefault(doc.modality, []).append(doc)
    mods = sorted(by_mod)
    for m in mods:
        rng.shuffle(by_mod[m])
    start = rng.randrange(len(mods)) if mods else 0
    order = mods[start:] + mods[:start]
    picked: list[Document] = []
    while len(picked) < n and any(by_mod[m] for m in order):
        for m in order:
            if by_mod[m] and len(picked) < n:
                picked.append(by_mod[m].pop(0))
    return picked, missing


def choose_negatives(
    sample: Sample, spec: ScenarioSpec, miner: NegativeMiner | None, store: DocStore | None
) -> tuple[list[Document], dict[str, Any]]:
    """The negatives to show and the ``metadata["mining"]`` record of where they came from."""
    if not spec.uses_negatives:
        return [], {"requested": 0, "found": 0, "shortfall": 0, "dropped_leaks": 0}
    n = spec.n_distractors
    info: dict[str, Any] = {"requested": n, "negatives": spec.negatives}
    docs: list[Document] = []
    if spec.negatives == "curated" and curated_ids(sample):
        docs, missing = draw_curated(sample, spec, store, n)
        info["curated_available"] = len(curated_ids(sample))
        if missing:
            info["curated_missing"] = missing
    info["from_curated"] = len(docs)
    need = n - len(docs)
    leaks = guard = 0
    if need and miner is None and not docs:
        raise InputError(
            f"scenario '{spec.kind}' with n_distractors={n} needs a negative miner "
            f"(sample '{sample.id}' has no curated negatives)",
            field="miner",
        )
    mined: list[Document] = []
    if need and miner is not None:
        res = miner.negatives(sample, need + len(docs), spec.negative_modality, seed=spec.seed)
        taken = {d.id for d in docs} | set(sample.gold_doc_ids)
        guard = sum(1 for d in res.documents if d.id in sample.gold_doc_ids)
        mined = [d for d in res.documents if d.id not in taken][:need]
        leaks = res.dropped_leaks
    info["from_miner"] = len(mined)
    info["filled"] = bool(docs) and bool(mined)
    docs = docs + mined
    info.update(found=len(docs), shortfall=max(0, n - len(docs)), dropped_leaks=leaks)
    if guard:
        info["dropped_gold"] = guard  # a miner that returned gold: dropped here, and counted
    return docs, info
