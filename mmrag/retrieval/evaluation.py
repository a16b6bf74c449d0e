"""Retrieval quality of gold documents: recall@k and MRR, overall and per gold modality.

Definitions (chosen here; the papers give none for the indices themselves):

* a sample counts only if at least one of its gold documents is in the retriever's index
  (``index_ids``; a visual index cannot find a gold text passage) and its query has a part the
  retriever embeds; others are counted as ``skipped``;
* recall@k = |gold ∩ top-k| / |gold in index|, averaged over samples;
* MRR = mean of 1 / rank of the first gold document in the top max(ks), 0 when absent;
* per modality: the same numbers over the samples whose (indexed) gold documents include that
  modality, so a sample with a text and an image gold counts in both groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mmrag.errors import InputError
from mmrag.retrieval.base import Hit, Query, Retriever
from mmrag.schema import Sample


def evaluate_retrieval(
    retriever: Retriever,
    samples: Iterable[Sample],
    modality_of: Mapping[str, str],
    ks: Sequence[int] = (1, 5, 10),
    batch_size: int = 64,
    use_images: bool = True,
) -> dict[str, Any]:
    """``modality_of``: doc id -> modality for every document the retriever can return."""
    ks = sorted(set(int(k) for k in ks))
    kmax = ks[-1]
    todo: list[tuple[Sample, list[str]]] = []
    skipped = 0
    for s in samples:
        gold = [g for g in s.gold_doc_ids if g in modality_of]
        if gold:
            todo.append((s, gold))
        else:
            skipped += 1
    groups: dict[str, dict[str, list[float]]] = {}

    def add(group: str, name: str, v: float) -> None:
        groups.setdefault(group, {}).setdefault(name, []).append(v)

    for i in range(0, len(todo), batch_size):
        part = todo[i : i + batch_size]
        queries = [Query(text=s.question, images=list(s.images) if use_images else []) for s, _ in part]
        results: Sequence[list[Hit] | None]
        try:
            results = retriever.retrieve(queries, kmax)
        except InputError:
            one_by_one: list[list[Hit] | None] = []
            for q in queries:
                try:
                    one_by_one.append(retriever.retrieve([q], kmax)[0])
                except InputError:
                    one_by_one.append(None)
            results = one_by_one
        for (_, gold), hits in zip(part, results):
            if hits is None:
                skipped += 1
                continue
            ranked = [h.doc_id for h in hits]
            first = next((r for r, d in enumerate(ranked, start=1) if d in gold), None)
            for group in ["all", *sorted({modality_of[g] for g in gold})]:
                for k in ks:
                    add(group, f"recall@{k}", len(set(ranked[:k]) & set(gold)) / len(gold))
                add(group, "mrr", 1.0 / first if first else 0.0)
    out: dict[str, Any] = {"skipped": skipped, "groups": {}}
    for group, metrics in groups.items():
        n = len(metrics["mrr"])
        out["groups"][group] = {"n": n, **{m: sum(v) / n for m, v in metrics.items()}}
    return out
