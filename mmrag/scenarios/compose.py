"""``compose(sample, spec, miner, store) -> Prompt``: the one entry point from a sample to a prompt.

Pure and seeded: the same (sample, spec, miner state) always gives the same prompt, the sample is
never mutated, and every random choice draws from an RNG derived from (spec.seed, sample.id).

The four VLM-DeflectionBench retrieval scenarios are built here:

- ``parametric``: no contexts.
- ``oracle``: the gold documents only, in the sample's order.
- ``realistic``: gold + N negatives; ``gold_position`` = ``random`` shuffles all contexts (seeded),
  ``first`` / ``last`` put the gold block before / after the negatives, an integer inserts the gold
  block at that index among the negatives (clamped to the end, and the clamp is recorded).
- ``adversarial``: the N negatives only, in the miner's rank order.

``positive_modality`` keeps only the gold documents of that modality (``any`` keeps all; ``image``
keeps every gold that carries an image, image+caption included — :func:`gold_matches`); when none
is left the sample does not fit the spec and :class:`ScenarioNotApplicable` is raised rather than
showing an "oracle" without gold.  Negatives are the sample's curated ones (``negatives: curated``,
the default where a sample has them) with the miner filling a shortfall, or
``miner.negatives(sample, n, modality, seed)`` (``negatives: regenerate``); see
:mod:`mmrag.scenarios.negatives`.  A remaining shortfall is recorded in ``metadata["mining"]``, never
padded.  The budget (see
:mod:`mmrag.scenarios.budget`) then drops documents, negatives first, and records each drop.

Each :class:`~mmrag.scenarios.kinds.ScenarioKind` names its builder and applicability rule; the
four retrieval kinds share :func:`build_retrieval_prompt` and :func:`gold_applicable`, HumbleBench
and KnowHal builders live in their own modules.
"""

from __future__ import annotations

import copy
from typing import Any

from mmrag.errors import InputError
from mmrag.retrieval.base import DocStore, NegativeMiner
from mmrag.scenarios.base import ScenarioNotApplicable, copy_choices, finish_prompt, option_lines, seeded_rng
from mmrag.scenarios.budget import apply_budget
from mmrag.scenarios.negatives import choose_negatives
from mmrag.scenarios.render import build_messages
from mmrag.scenarios.spec import ScenarioSpec
from mmrag.scenarios.templates import get_template
from mmrag.schema import Context, Document, Prompt, Sample


def compose(
    sample: Sample, spec: ScenarioSpec, miner: NegativeMiner | None = None, store: DocStore | None = None
) -> Prompt:
    """The prompt a model sees for ``sample`` under ``spec``.

    ``store`` defaults to ``miner.store``.  Raises :class:`ScenarioNotApplicable` when the sample
    cannot be shown under the spec, and InputError when a needed input is missing (no store for
    gold documents, a gold id absent from the store, no miner for negatives).
    """
    return spec.kind_def.build(sample, spec, miner, store)


def applicable(sample: Sample, spec: ScenarioSpec, store: DocStore | None = None) -> str | None:
    """``None`` when ``sample`` fits ``spec``, else the reason it does not (the kind's own rule)."""
    return spec.kind_def.applicable(sample, spec, store)


def gold_applicable(sample: Sample, spec: ScenarioSpec, store: DocStore | None = None) -> str | None:
    """The rule of kinds that show gold evidence: the sample has gold of the asked modality."""
    if not sample.gold_doc_ids:
        return "the sample has no gold documents"
    if spec.positive_modality != "any" and store is not None:
        if not any(i in store and gold_matches(store.get(i), spec.positive_modality) for i in sample.gold_doc_ids):
            return f"no gold document of modality '{spec.positive_modality}'"
    return None


def gold_matches(doc: Document, positive: str) -> bool:
    """Whether a gold document belongs to the ``positive_modality`` row.  ``image`` is the paper's
    "visual positive" row of Table 5: every gold that carries an image, an image with its caption
    (WebQA image facts, MMDocRAG image quotes) included — otherwise those sources would fall out of
    both the textual and the visual row.  ``multimodal`` keeps only image+caption gold."""
    if positive == "any":
        return True
    if positive == "image":
        return doc.image is not None and doc.modality in ("image", "multimodal")
    return doc.modality == positive


def _gold_documents(sample: Sample, spec: ScenarioSpec, store: DocStore | None) -> tuple[list[Document], int]:
    if store is None:
        raise InputError(
            f"scenario '{spec.kind}' shows gold documents and needs a document store "
            "(pass store= or a miner with .store)",
            field="store",
        )
    docs = []
    for doc_id in sample.gold_doc_ids:
        if doc_id not in store:
            raise InputError(
                f"gold document '{doc_id}' of sample '{sample.id}' is not in the knowledge base", field="gold_doc_ids"
            )
        docs.append(store.get(doc_id))
    matching = [d for d in docs if gold_matches(d, spec.positive_modality)]
    if not matching:
        reason = (
            "the sample has no gold documents"
            if not docs
            else f"no gold document of modality '{spec.positive_modality}' "
            f"(gold modalities: {', '.join(sorted({d.modality for d in docs}))})"
        )
        raise ScenarioNotApplicable(sample.id, spec.id, reason)
    return matching, len(docs)


def own_copy(doc: Document) -> Document:
    """A copy of a store document that shares nothing mutable with it, as ``model_copy(deep=True)``
    gives, for a fraction of its cost (the strings need no copy): a prompt's documents are its own,
    so hashing an image of the prompt (:meth:`ImageRef.content_hash` fills ``sha256``) never
    changes the knowledge base the miner keys on."""
    image = doc.image.model_copy() if doc.image is not None else None
    return doc.model_copy(update={"image": image, "metadata": copy.deepcopy(doc.metadata)})


def _arrange(
    spec: ScenarioSpec, sample: Sample, gold: list[Context], negs: list[Context], meta: dict[str, Any]
) -> list[Context]:
    if "gold_position" not in spec.kind_def.knobs:
        return gold + negs  # oracle: gold only; adversarial: negatives only; parametric: nothing
    pos = spec.gold_position
    if pos == "random":
        shown = gold + negs
        seeded_rng(spec, sample, "gold_position").shuffle(shown)
        return shown
    if pos == "first":
        return gold + negs
    if pos == "last":
        return negs + gold
    at = min(int(pos), len(negs))
    if at != pos:
        meta["gold_position_clamped_to"] = at
    return negs[:at] + gold + negs[at:]


def build_retrieval_prompt(
    sample: Sample, spec: ScenarioSpec, miner: NegativeMiner | None = None, store: DocStore | None = None
) -> Prompt:
    """VLM-DeflectionBench's parametric / oracle / realistic / adversarial prompt."""
    store = store if store is not None else getattr(miner, "store", None)
    meta: dict[str, Any] = {}
    gold_docs: list[Document] = []
    if spec.uses_gold:
        gold_docs, n_all = _gold_documents(sample, spec, store)
        meta["positive"] = {"modality": spec.positive_modality, "gold_total": n_all, "gold_matching": len(gold_docs)}
    neg_docs, meta["mining"] = choose_negatives(sample, spec, miner, store)

    candidates = [Context(document=own_copy(d), role="gold") for d in gold_docs] + [
        Context(document=own_copy(d), role="negative") for d in neg_docs
    ]
    budget = apply_budget(
        candidates, max_tokens=spec.max_context_tokens, max_images=spec.max_images, query_images=len(sample.images)
    )
    meta["budget"] = budget.report(spec.max_context_tokens, spec.max_images)
    gold = [c for c in budget.kept if c.role == "gold"]
    negs = [c for c in budget.kept if c.role == "negative"]
    contexts = _arrange(spec, sample, gold, negs, meta)
    meta["gold_positions"] = [i for i, c in enumerate(contexts) if c.role == "gold"]

    tpl = get_template(spec.template or f"strictness-{spec.strictness}")
    body = tpl.fill("question", question=sample.question)
    if sample.choices:
        body += "\n" + option_lines(sample.choices)
    instruction = tpl.fill("text")
    if instruction:
        body += "\n" + instruction
    messages = build_messages(
        system=tpl.fill("system") or None,
        query_images=list(sample.images),
        body=body,
        evidence_header=tpl.evidence_header,
        contexts=contexts,
    )
    return finish_prompt(
        sample,
        spec,
        messages,
        [tpl],
        contexts=contexts,
        choices=copy_choices(sample.choices),
        label=sample.label,
        metadata=meta,
    )
