"""The demo knowledge base (kb.jsonl) and knowledge questions (deflection.jsonl).

Per entity the knowledge base holds three text passages, two images (flag, emblem) and two image +
caption documents.  The questions come in four shapes, so every positive modality of
VLM-DeflectionBench's Table 5 occurs:

* ``text``: the entity is named in words and the answer is in one passage.
* ``image``: the entity is named and the answer is visible only in its flag or emblem image
  (the image document's title names the entity, as a Wikipedia file page would).
* ``multimodal``: the entity appears only in the query image (a photographed view that is NOT in
  the knowledge base); the image + caption document links that picture to the name and a passage
  holds the fact.  Asked twice, once per view (flag, emblem): two samples share one question_id.
* ``multimodal`` (image + image): the flag is shown, the question asks the colour of the emblem.

Every record names its gold documents and, as ``negative_doc_ids``, a few ready-made hard negatives
(same-template passages of other entities, look-alike images of the same family).
"""

from __future__ import annotations

import random
from typing import Any

from mmrag.benchmarks.demo.entities import NUMERIC_SLOTS, PASSAGES, SLOTS, display_name, fact_text, passages

UNNAMED = {
    "country": "the country represented in the image",
    "city": "the city represented in the image",
    "guild": "the guild represented in the image",
}
QUESTION: dict[str, str | dict[str, str]] = {
    "capital": "What is the capital of {ref}?",
    "river": {"country": "What is the longest river of {ref}?", "city": "On which river does {ref} lie?"},
    "population": "What is the population of {ref}?",
    "members": "How many members does {ref} have?",
    "founder": "Who founded {ref}?",
    "founded": "In which year was {ref} founded?",
    "export": {"guild": "What does {ref} trade in?", "*": "What is the chief export of {ref}?"},
    "anthem": {
        "country": "What is the national anthem of {ref}?",
        "city": "What is the city song of {ref}?",
        "guild": "What is the motto of {ref}?",
    },
    "country": "In which country does {ref} lie?",
    "seat": "In which city does {ref} have its seat?",
}
SHAPE_ADJ = {
    "circle": "circular",
    "triangle": "triangular",
    "square": "square-shaped",
    "diamond": "diamond-shaped",
    "pentagon": "pentagonal",
    "hexagon": "hexagonal",
    "octagon": "octagonal",
}


def image_path(eid: str, view: str) -> str:
    return f"images/entities/{eid}_{view}.png"


def doc_ids(entity: dict[str, Any]) -> dict[str, str]:
    eid = entity["id"]
    ids = {f"text-{s}": f"{eid}-text-{s}" for s, _, _ in PASSAGES[entity["kind"]]}
    for v in ("flag", "emblem"):
        ids[f"image-{v}"] = f"{eid}-image-{v}"
        ids[f"mm-{v}"] = f"{eid}-mm-{v}"
    return ids


def kb_records(entities: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for e in entities:
        ids = doc_ids(e)
        for section, text, slots in passages(e):
            rows.append(
                {
                    "id": ids[f"text-{section}"],
                    "modality": "text",
                    "text": text,
                    "title": f"{e['name']} ({section})",
                    "source": "demo",
                    "entity_id": e["id"],
                    "metadata": {"kind": e["kind"], "section": section, "slots": list(slots)},
                }
            )
        ref = f"the {e['name']} Guild" if e["kind"] == "guild" else f"the {e['kind']} of {e['name']}"
        for view in ("flag", "emblem"):
            rows.append(
                {
                    "id": ids[f"image-{view}"],
                    "modality": "image",
                    "image": image_path(e["id"], view),
                    "title": f"{view.capitalize()} of {display_name(e)}",
                    "source": "demo",
                    "entity_id": e["id"],
                    "metadata": {"kind": e["kind"], "view": view},
                }
            )
        for view in ("flag", "emblem"):
            rows.append(
                {
                    "id": ids[f"mm-{view}"],
                    "modality": "multimodal",
                    "image": image_path(e["id"], view),
                    "text": f"The {view} of {ref}.",
                    "title": f"{view.capitalize()} of {display_name(e)}",
                    "source": "demo",
                    "entity_id": e["id"],
                    "metadata": {"kind": e["kind"], "view": view},
                }
            )
    return rows


def _question(slot: str, kind: str, ref: str) -> str:
    entry = QUESTION[slot]
    t = entry if isinstance(entry, str) else entry.get(kind) or entry["*"]
    q = t.format(ref=ref)
    return q[0].upper() + q[1:]


def _answer(entity: dict[str, Any], slot: str) -> dict[str, Any]:
    """Canonical answer, aliases, numeric ranges (InfoSeek's +-10 %) and the answer's kind."""
    text = fact_text(entity, slot)
    out: dict[str, Any] = {"answer": text, "aliases": [], "numeric_ranges": [], "question_type": "string"}
    if slot == "founded":
        out.update(aliases=[f"the year {text}", f"in {text}"], question_type="time")
    elif slot in NUMERIC_SLOTS:
        v = entity["facts"][slot]
        out.update(aliases=[str(v)], numeric_ranges=[[round(v * 0.9, 1), round(v * 1.1, 1)]], question_type="numerical")
    elif slot == "river":
        out.update(aliases=[f"the {text}", f"{text} River", f"the {text} River"])
    elif slot == "founder":
        out.update(aliases=[text.split()[-1]])
    elif slot in ("capital", "seat"):
        out.update(aliases=[f"the city of {text}"])
    return out


def _all(ans: dict[str, Any]) -> list[str]:
    return [ans["answer"], *ans["aliases"]]


def _slot_section(kind: str, slot: str) -> str:
    return next(s for s, _, slots in PASSAGES[kind] if slot in slots)


class _Negatives:
    """Ready-made hard negatives: same-section passages of other entities of the same kind, and the
    look-alike (same family) images.  A negative that states or shows the answer (another entity
    with the same export, or a look-alike emblem of the same colour) is left out: it would leak the
    answer into the adversarial scenario.  Mining proper is the retrieval stage's job; these are a
    deterministic starting point recorded with each sample."""

    def __init__(self, entities: list[dict[str, Any]], rng: random.Random) -> None:
        self.rng = rng
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        self.by_family: dict[int, list[dict[str, Any]]] = {}
        self.text_of: dict[str, str] = {}
        for e in entities:
            self.by_kind.setdefault(e["kind"], []).append(e)
            self.by_family.setdefault(e["family"], []).append(e)
            for section, text, _ in passages(e):
                self.text_of[f"{e['id']}-text-{section}"] = text

    def text(self, e: dict[str, Any], section: str, answers: list[str], k: int = 3) -> list[str]:
        others = [f"{o['id']}-text-{section}" for o in self.by_kind[e["kind"]] if o["id"] != e["id"]]
        clean = [d for d in others if not any(a.lower() in self.text_of[d].lower() for a in answers)]
        return self.rng.sample(clean, min(k, len(clean)))

    def images(self, e: dict[str, Any], prefix: str, view: str, attr: str | None = None) -> list[str]:
        """Look-alikes of the same family; with ``attr`` ("emblem.fill"), only those that differ in it."""

        def value(o: dict[str, Any]) -> Any:
            part, key = attr.split(".")  # type: ignore[union-attr]
            return o[part][key]

        return [
            f"{o['id']}-{prefix}-{view}"
            for o in self.by_family[e["family"]]
            if o["id"] != e["id"] and (attr is None or value(o) != value(e))
        ]


def _record(
    sample_id: str,
    question_id: str,
    question: str,
    ans: dict[str, Any],
    gold: list[tuple[str, str]],
    negatives: list[str],
    e: dict[str, Any],
    query_images: list[str],
    meta: dict[str, Any],
) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "question_id": question_id,
        "question": question,
        "query_images": query_images,
        "answer": ans["answer"],
        "aliases": ans["aliases"],
        "numeric_ranges": ans["numeric_ranges"],
        "gold_contexts": [{"doc_id": d, "modality": m} for d, m in gold],
        "negative_doc_ids": negatives,
        "source": "demo",
        "question_type": ans["question_type"],
        "entity_id": e["id"],
        "metadata": meta,
    }


def _visual_question(e: dict[str, Any], variant: str, ref: str) -> tuple[str, dict[str, Any], str, str]:
    """(question, answer, image view, attribute path) for a question answered by looking at an image."""
    em, fl = e["emblem"], e["flag"]
    if variant == "emblem_colour":
        return (
            f"What is the main colour of the emblem of {ref}?",
            {"answer": em["fill"], "aliases": [], "numeric_ranges": [], "question_type": "string"},
            "emblem",
            "emblem.fill",
        )
    if variant == "emblem_shape":
        return (
            f"What shape is the outline of the emblem of {ref}?",
            {
                "answer": em["shape"],
                "aliases": [f"a {em['shape']}", SHAPE_ADJ[em["shape"]]],
                "numeric_ranges": [],
                "question_type": "string",
            },
            "emblem",
            "emblem.shape",
        )
    return (
        f"What colour is the {fl['charge']} on the flag of {ref}?",
        {"answer": fl["charge_colour"], "aliases": [], "numeric_ranges": [], "question_type": "string"},
        "flag",
        "flag.charge_colour",
    )


def deflection_records(entities: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Knowledge questions over the world; see the module docstring for the four shapes."""
    rng = random.Random(f"mmrag-demo:{seed}:questions")
    neg = _Negatives(entities, random.Random(f"mmrag-demo:{seed}:negatives"))
    rows: list[dict[str, Any]] = []
    for i, e in enumerate(entities):
        ids, kind, eid = doc_ids(e), e["kind"], e["id"]
        named = display_name(e)
        # 1. text, entity named in words
        slot = rng.choice(SLOTS[kind])
        section = _slot_section(kind, slot)
        ans = _answer(e, slot)
        rows.append(
            _record(
                f"{eid}-t-{slot}",
                f"{eid}-t-{slot}",
                _question(slot, kind, named),
                ans,
                [(ids[f"text-{section}"], "text")],
                neg.text(e, section, _all(ans)),
                e,
                [],
                {
                    "positive_modality": "text",
                    "needs": ["text"],
                    "entity_in_question": True,
                    "slot": slot,
                    "answer_kind": ans["question_type"],
                },
            )
        )
        if i % 2 == 0:
            # 2. image, entity named: the answer is only visible in the entity's own image
            variants = ["emblem_colour", "emblem_shape"]
            if e["flag"]["charge"] != "none":
                variants.append("flag_charge_colour")
            variant = rng.choice(variants)
            q, vans, view, attr = _visual_question(e, variant, named)
            rows.append(
                _record(
                    f"{eid}-i-{variant}",
                    f"{eid}-i-{variant}",
                    q,
                    vans,
                    [(ids[f"image-{view}"], "image")],
                    neg.images(e, "image", view, attr),
                    e,
                    [],
                    {
                        "positive_modality": "image",
                        "needs": ["image"],
                        "entity_in_question": True,
                        "slot": variant,
                        "answer_kind": "visual",
                        "visual_attribute": attr,
                        "answer_image": image_path(eid, view),
                    },
                )
            )
        else:
            # 3. multimodal: entity shown only in a query view; asked once per view (shared question_id)
            slot = rng.choice([s for s in SLOTS[kind] if s != slot] or SLOTS[kind])
            section = _slot_section(kind, slot)
            ans = _answer(e, slot)
            qid = f"{eid}-m-{slot}"
            text_negs = neg.text(e, section, _all(ans), k=2)
            for view in ("flag", "emblem"):
                rows.append(
                    _record(
                        f"{qid}-{view}",
                        qid,
                        _question(slot, kind, UNNAMED[kind]),
                        ans,
                        [(ids[f"mm-{view}"], "multimodal"), (ids[f"text-{section}"], "text")],
                        neg.images(e, "mm", view) + text_negs,
                        e,
                        [image_path(eid, f"{view}_view")],
                        {
                            "positive_modality": "multimodal",
                            "needs": ["multimodal", "text"],
                            "entity_in_question": False,
                            "slot": slot,
                            "answer_kind": ans["question_type"],
                            "query_view": f"{view}_view",
                        },
                    )
                )
        if i % 5 == 2:
            # 4. multimodal, image + image: flag shown, emblem colour asked
            shown = UNNAMED[kind].replace("represented in", "whose flag is shown in")
            q = f"What is the main colour of the emblem of {shown}?"
            vans = {"answer": e["emblem"]["fill"], "aliases": [], "numeric_ranges": [], "question_type": "string"}
            rows.append(
                _record(
                    f"{eid}-x-emblem_colour",
                    f"{eid}-x-emblem_colour",
                    q,
                    vans,
                    [(ids["mm-flag"], "multimodal"), (ids["image-emblem"], "image")],
                    neg.images(e, "mm", "flag") + neg.images(e, "image", "emblem", "emblem.fill"),
                    e,
                    [image_path(eid, "flag_view")],
                    {
                        "positive_modality": "multimodal",
                        "needs": ["multimodal", "image"],
                        "entity_in_question": False,
                        "slot": "emblem_colour",
                        "answer_kind": "visual",
                        "visual_attribute": "emblem.fill",
                        "answer_image": image_path(eid, "emblem"),
                        "query_view": "flag_view",
                    },
                )
            )
    return rows
