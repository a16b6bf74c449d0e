"""MMDocRAG (Dong et al., 2025) -> DeflectionBench.

Input: ``dev_15.jsonl`` / ``dev_20.jsonl`` / ``evaluation_{15,20}.jsonl``: one question per line
with ``q_id``, ``doc_name``, ``domain``, ``question``, ``evidence_modality_type``,
``question_type``, ``text_quotes`` and ``img_quotes`` (each quote: ``quote_id``, ``type``,
``text``, ``img_path``, ``img_description``, ``page_id``, ``layout_id``), ``gold_quotes`` (quote
ids) and ``answer_short``.  ``--images``: the folder ``images.zip`` unpacks to; an ``img_path`` is
looked up exactly: as given under ``--images``, else its file name directly in ``--images``.
No ``--kb``: each question carries its own 15 or 20 candidate quotes.

* The query is text only; ``answer_short`` is the answer (no aliases are published).
* Gold = the ``gold_quotes``: text quotes as ``text`` documents, image quotes as ``multimodal``
  documents (the page crop + ``img_description``, the pair MMDocRAG's own multimodal mode shows);
  option ``image_quote_modality=image`` keeps the crop alone.  A quote without a description is an
  ``image`` document either way.
* Negatives = every other candidate quote: MMDocRAG picked them from the same document as hard
  distractors.  Quote ids are only unique within a question, so documents are
  ``mmdocrag:<q_id>:<quote_id>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext, KBRecord
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields
from mmrag.benchmarks.sources.images import BadImage
from mmrag.util import iter_jsonl


class MMDocRAGOptions(SourceOptions):
    image_quote_modality: Literal["multimodal", "image"] = "multimodal"


@SOURCES.register("mmdocrag")
class MMDocRAGBuilder(SourceBuilder):
    name = "mmdocrag"
    Options = MMDocRAGOptions

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:
        for ln, obj in iter_jsonl(ctx.data):
            if not ctx.take():
                break
            f = Fields(obj, ctx.data, line=ln)
            r = self._parse(f)
            docs: dict[str, KBRecord | None] = {}
            for q in r["quotes"]:
                docs[q["quote_id"]] = self._doc(ctx, r, q)
            if any(docs[g] is None for g in r["gold"]):
                ctx.skip("gold image not found")
                continue
            gold = []
            for g in r["gold"]:
                doc = docs[g]
                assert doc is not None
                gold.append(GoldContext(doc_id=ctx.add_doc(doc), modality=doc.modality))
            negs = []
            for qid, doc in docs.items():
                if qid in r["gold"]:
                    continue
                if doc is None:
                    ctx.drop("negative image not found")
                    continue
                negs.append(ctx.add_doc(doc))
            yield DeflectionRecord(
                sample_id=f"mmdocrag:{r['q_id']}:0",
                question_id=f"mmdocrag:{r['q_id']}",
                question=r["question"],
                answer=r["answer"],
                gold_contexts=gold,
                negative_doc_ids=negs,
                source="mmdocrag",
                question_type=r["question_type"],
                metadata={
                    "q_id": r["q_id"],
                    "doc_name": r["doc_name"],
                    "domain": r["domain"],
                    "evidence_modality_type": r["evidence_modality_type"],
                    "line": ln,
                },
            )

    @staticmethod
    def _parse(f: Fields) -> dict[str, Any]:
        quotes = []
        for list_name, kind in (("text_quotes", "text"), ("img_quotes", "image")):
            for i, item in enumerate(f.list(list_name, default=[])):
                q = f.sub(list_name, index=i, value=item)
                quote = {
                    "quote_id": q.str("quote_id"),
                    "type": q.str("type", default=kind),
                    "page_id": q.raw("page_id", default=None),
                    "layout_id": q.raw("layout_id", default=None),
                }
                if quote["type"] not in ("text", "image"):
                    raise q.error(f"expected 'text' or 'image', got {quote['type']!r}", field=q.prefix + "type")
                if quote["type"] == "text":
                    quote["text"] = q.str("text")
                else:
                    quote["img_path"] = q.str("img_path")
                    quote["description"] = q.str("img_description", default="", allow_empty=True)
                quotes.append(quote)
        ids = [q["quote_id"] for q in quotes]
        if len(set(ids)) != len(ids):
            raise f.error("duplicate quote_id among text_quotes/img_quotes", field="quote_id")
        gold = f.str_list("gold_quotes", nonempty=True)
        unknown = [g for g in gold if g not in ids]
        if unknown:
            raise f.error(f"names quote(s) not in text_quotes/img_quotes: {', '.join(unknown)}", field="gold_quotes")
        return {
            "q_id": f.str("q_id"),
            "question": f.str("question"),
            "answer": f.str("answer_short"),
            "quotes": quotes,
            "gold": list(dict.fromkeys(gold)),
            "doc_name": f.str("doc_name", default=None),
            "domain": f.str("domain", default=None),
            "question_type": f.str("question_type", default=None),
            "evidence_modality_type": f.raw("evidence_modality_type", default=None),
        }

    def _doc(self, ctx: BuildContext, r: dict[str, Any], q: dict[str, Any]) -> KBRecord | None:
        doc_id = f"mmdocrag:{r['q_id']}:{q['quote_id']}"
        meta = {"doc_name": r["doc_name"], "page_id": q["page_id"], "layout_id": q["layout_id"]}
        if q["type"] == "text":
            return KBRecord(
                id=doc_id, modality="text", text=q["text"], title=r["doc_name"] or "", source="mmdocrag", metadata=meta
            )
        rel = self._image(ctx, q["img_path"])
        if rel is None:
            return None
        modality = self.options.image_quote_modality  # type: ignore[attr-defined]
        if not q["description"]:
            modality = "image"
        return KBRecord(
            id=doc_id,
            modality=modality,
            image=rel,
            text=q["description"] if modality == "multimodal" else "",
            title=r["doc_name"] or "",
            source="mmdocrag",
            metadata={**meta, "img_description": q["description"]},
        )

    @staticmethod
    def _image(ctx: BuildContext, img_path: str) -> str | None:
        p = Path(img_path)
        if p.is_absolute() and p.is_file():
            found: Path | None = p
        else:
            folder = ctx.image_folder()
            found = folder.find(img_path, p.name)  # as given, or inside the unpacked images/ folder
        if found is None:
            return None
        try:
            return ctx.store.put_file(found)
        except BadImage:
            return None
