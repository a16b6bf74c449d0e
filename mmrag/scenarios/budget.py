"""The context budget: at most ``max_context_tokens`` evidence tokens and ``max_images`` images.

Tokens are approximate on purpose (no model's tokenizer is assumed): the number of
whitespace-separated words of what the renderer shows for each document — title and text of a
passage, title and caption of an image-with-caption document, the title of an image.  The
question, the instruction and the ``[n]`` numbering are not counted.  Images count every image
part, the query image(s) included, because that is the limit a model imposes.

When over budget, documents are dropped whole, lowest priority first: negatives before gold, and
among each the last-ranked first (candidates arrive gold first, then negatives in the miner's
order).  Only a document that holds the exceeded resource is dropped (a text passage is never
dropped to save an image).  Nothing is dropped silently: every drop is returned with its reason,
and a budget that cannot be met even with no evidence (too many query images) is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mmrag.schema import Context, Document


def doc_tokens(doc: Document) -> int:
    shown = doc.title if doc.modality == "image" else f"{doc.title} {doc.text}"
    return len(shown.split())


def doc_images(doc: Document) -> int:
    return 1 if doc.modality in ("image", "multimodal") else 0


@dataclass
class BudgetResult:
    kept: list[Context]
    dropped: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    images: int = 0
    over_budget: bool = False

    def report(self, max_tokens: int | None, max_images: int | None) -> dict[str, Any]:
        return {
            "max_context_tokens": max_tokens,
            "max_images": max_images,
            "context_tokens": self.tokens,
            "images": self.images,
            "dropped": self.dropped,
            "over_budget": self.over_budget,
        }


def apply_budget(
    candidates: list[Context], *, max_tokens: int | None, max_images: int | None, query_images: int = 0
) -> BudgetResult:
    """Keep ``candidates`` (in priority order) within the budget; see the module docstring."""
    kept = list(candidates)
    dropped: list[dict[str, Any]] = []

    def totals() -> tuple[int, int]:
        return (sum(doc_tokens(c.document) for c in kept), query_images + sum(doc_images(c.document) for c in kept))

    while True:
        tokens, images = totals()
        over_tok = max_tokens is not None and tokens > max_tokens
        over_img = max_images is not None and images > max_images
        if not (over_tok or over_img):
            return BudgetResult(kept, dropped, tokens, images, False)
        reason, cost = ("max_context_tokens", doc_tokens) if over_tok else ("max_images", doc_images)
        victim = None
        for role in ("negative", "gold"):
            for i in range(len(kept) - 1, -1, -1):
                if kept[i].role == role and cost(kept[i].document) > 0:
                    victim = i
                    break
            if victim is not None:
                break
        if victim is None:  # only the query images are left and they alone exceed the limit
            return BudgetResult(kept, dropped, tokens, images, True)
        ctx = kept.pop(victim)
        dropped.append(
            {"doc_id": ctx.document.id, "role": ctx.role, "modality": ctx.document.modality, "reason": reason}
        )
