"""A tiny knowledge base, a DocStore and a NegativeMiner for the scenario-composer tests.

These are legitimate implementations of the retrieval protocols over a handful of documents (the
composer is tested against the protocols; the real FAISS miner gets its own integration test).
The miner ranks candidate negatives by word overlap with the question, excludes gold documents and
every document of the gold entity, drops documents that contain an answer (leaks, counted), and
breaks ties with the seed, so the seed really changes its output.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
from PIL import Image

from mmrag.retrieval.base import MiningResult
from mmrag.schema import Choice, Document, ImageRef, Sample


class DictStore:
    def __init__(self, docs: list[Document]) -> None:
        self._docs = {d.id: d for d in docs}

    def get(self, doc_id: str) -> Document:
        return self._docs[doc_id]

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._docs

    def __iter__(self):
        return iter(list(self._docs.values()))


class OverlapMiner:
    def __init__(self, store: DictStore, leak_gold: bool = False) -> None:
        self.store = store
        self.calls = 0
        self.leak_gold = leak_gold  # misbehave on purpose: return a gold document first

    def negatives(self, sample: Sample, n: int, modality: str, seed: int = 0) -> MiningResult:
        self.calls += 1
        gold = set(sample.gold_doc_ids)
        cands = [
            d
            for d in self.store
            if d.id not in gold and d.entity_id != sample.entity_id and modality in ("any", d.modality)
        ]
        answers = [a.lower() for a in sample.answers]
        leaks = [d for d in cands if any(a in d.text.lower() for a in answers)]
        cands = [d for d in cands if d not in leaks]
        rng = random.Random(seed)
        rng.shuffle(cands)  # tie-break by seed, then a stable sort by overlap
        q = set(sample.question.lower().split())
        cands.sort(key=lambda d: -len(q & set(f"{d.title} {d.text}".lower().split())))
        docs = cands[:n]
        if self.leak_gold:
            docs = [self.store.get(sample.gold_doc_ids[0])] + docs
        return MiningResult(documents=docs, requested=n, shortfall=max(0, n - len(cands)), dropped_leaks=len(leaks))


def _ref(root: Path | None, name: str, shade: int) -> ImageRef:
    """A real PNG when ``root`` is given; otherwise a reference with a fixed content hash (snapshot
    tests: the hash must not depend on the PNG encoder's version)."""
    if root is None:
        return ImageRef(path=f"images/{name}.png", sha256=hashlib.sha256(name.encode()).hexdigest())
    path = root / f"{name}.png"
    if not path.exists():
        arr = (np.arange(24 * 32, dtype=np.uint16).reshape(24, 32) * 7 + shade) % 256
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(arr.astype(np.uint8)).convert("RGB").save(path)
    return ImageRef(path=str(path))


def make_world(root: Path | None = None) -> tuple[Sample, DictStore, OverlapMiner]:
    """One question about a fictional tower, its gold evidence in all three modalities, and eleven
    candidate negatives (three per modality from other entities, one same-entity doc, one leak)."""
    img = lambda name, shade: _ref(root, name, shade)  # noqa: E731
    docs = [
        Document(
            id="g-text",
            modality="text",
            title="Varnholt Tower",
            entity_id="varnholt",
            text="Varnholt Tower is a stone lighthouse finished in 1887 on the cliffs of Ossel.",
        ),
        Document(id="g-img", modality="image", title="Varnholt Tower", entity_id="varnholt", image=img("g-img", 10)),
        Document(
            id="g-mm",
            modality="multimodal",
            entity_id="varnholt",
            image=img("g-mm", 20),
            text="The lighthouse of Ossel, whose construction ended in 1887.",
        ),
        Document(
            id="same-entity",
            modality="text",
            entity_id="varnholt",
            title="Varnholt Tower",
            text="Varnholt Tower keepers' logbook.",
        ),
        Document(
            id="n-text-1",
            modality="text",
            title="Quill Spire",
            entity_id="quill",
            text="Quill Spire is a lighthouse on the cliffs of Marrow, finished in 1902.",
        ),
        Document(
            id="n-text-2",
            modality="text",
            title="Brenn Light",
            entity_id="brenn",
            text="Brenn Light was a lighthouse built of brick.",
        ),
        Document(
            id="n-text-3", modality="text", title="Halde Mill", entity_id="halde", text="A windmill by the river Halde."
        ),
        Document(
            id="n-leak",
            modality="text",
            title="Old Records",
            entity_id="records",
            text="Many towers were finished in 1887 in that region.",
        ),
        Document(id="n-img-1", modality="image", title="Quill Spire", entity_id="quill", image=img("n-img-1", 30)),
        Document(id="n-img-2", modality="image", title="Brenn Light", entity_id="brenn", image=img("n-img-2", 40)),
        Document(id="n-img-3", modality="image", entity_id="halde", image=img("n-img-3", 50)),
        Document(
            id="n-mm-1",
            modality="multimodal",
            entity_id="quill",
            image=img("n-mm-1", 60),
            text="Quill Spire lighthouse at dusk, finished in 1902.",
        ),
        Document(
            id="n-mm-2",
            modality="multimodal",
            entity_id="brenn",
            image=img("n-mm-2", 70),
            text="Brenn Light seen from the harbour.",
        ),
        Document(
            id="n-mm-3",
            modality="multimodal",
            entity_id="halde",
            image=img("n-mm-3", 80),
            text="The Halde windmill in winter.",
        ),
    ]
    store = DictStore(docs)
    sample = Sample(
        id="varnholt-q1",
        benchmark="demo",
        question="In which year was the lighthouse in the image finished?",
        images=[img("query", 90)],
        answers=["1887"],
        gold_doc_ids=["g-text", "g-img", "g-mm"],
        entity_id="varnholt",
        source="demo",
    )
    return sample, store, OverlapMiner(store)


def mcq_sample(root: Path | None = None) -> Sample:
    sample, _, _ = make_world(root)
    return sample.model_copy(
        update={
            "id": "varnholt-q1-mcq",
            "choices": [
                Choice(letter="A", text="1887"),
                Choice(letter="B", text="1902"),
                Choice(letter="C", text="1850"),
            ],
            "label": "A",
        },
        deep=True,
    )
