"""ViQuAE (Lerner et al., 2022) -> DeflectionBench.

Input: the Hugging Face dataset ``PaulLerner/viquae_dataset`` — a ``save_to_disk`` folder (option
``split=validation`` picks a split of a DatasetDict), its parquet files, or JSONL — with ``id``,
``image`` (file name), ``input`` (the question), ``output`` (``original_answer`` and the alias list
``answer``; KILT's list-of-outputs form is accepted too), ``wikidata_id`` and ``kilt_id``.
``--images``: the ``viquae_images`` folder.  ``--kb``: the KILT-format Wikipedia
(``PaulLerner/viquae_wikipedia``: ``kilt_id``/``wikipedia_id``, ``wikipedia_title``,
``text.paragraph`` list, ``wikidata_info.wikidata_id``), in the same table forms.

* Answer: ``output.original_answer`` (else the first alias); ``output.answer`` entries are aliases.
* Gold: the entity's article paragraphs (KILT paragraph 0 is the title and ``Section::::``
  paragraphs are headings; neither becomes a passage; doc ids keep KILT's paragraph index).  When
  the output carries KILT ``provenance`` (``start_paragraph_id``..``end_paragraph_id``) those
  paragraphs are gold; otherwise the answer-matching policy of
  :mod:`mmrag.benchmarks.sources.text` picks them.  Every paragraph of the article goes to the KB
  with the Wikidata id as entity id.
"""

from __future__ import annotations

from typing import Any, Iterator

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields, dedupe
from mmrag.benchmarks.sources.tables import iter_table
from mmrag.benchmarks.sources.text import GoldPolicy
from mmrag.benchmarks.sources.wiki import Passage, emit_page


class ViQuAEOptions(SourceOptions):
    split: str | None = None
    kb_split: str | None = None
    gold_policy: GoldPolicy = "answer"
    max_gold: int = 3


def _kilt_passages(kilt_id: str, paragraphs: list[str]) -> list[Passage]:
    out = []
    section = ""
    for i, para in enumerate(paragraphs):
        text = " ".join(str(para).split())
        if i == 0 or not text:
            continue
        if text.startswith("Section::::"):
            section = text[len("Section::::"):].rstrip(".").replace(":", " > ")
            continue
        out.append(Passage(f"viquae:{kilt_id}:p{i}", text, section))
    return out


@SOURCES.register("viquae")
class ViQuAEBuilder(SourceBuilder):
    name = "viquae"
    Options = ViQuAEOptions

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:
        opts: ViQuAEOptions = self.options  # type: ignore[assignment]
        rows = []
        for path, n, obj in iter_table(ctx.data, split=opts.split):
            if not ctx.take():
                break
            rows.append(self._parse(Fields(obj, path, line=n)))
        articles = self._load_kb(ctx, {r["kilt_id"] for r in rows if r["kilt_id"]},
                                 {r["entity_id"] for r in rows if r["entity_id"]})
        ctx.image_folder()
        for r in rows:
            art = articles.get(("kilt", r["kilt_id"])) or articles.get(("qid", r["entity_id"]))
            if art is None:
                ctx.skip("entity article not in KB")
                continue
            rel, why = ctx.stored_image(r["image"])
            if rel is None:
                ctx.skip(f"query {why}")
                continue
            passages = _kilt_passages(art["kilt_id"], art["paragraphs"])
            if not passages:
                ctx.skip("entity article is empty")
                continue
            gold, how = emit_page(ctx, passages, title=art["title"], entity_id=r["entity_id"] or art["qid"],
                                  url=art["url"], answers=[r["answer"], *r["aliases"]], ranges=[],
                                  policy=opts.gold_policy, max_gold=opts.max_gold)
            prov = [f"viquae:{art['kilt_id']}:p{i}" for i in r["provenance"]]
            prov = [d for d in prov if ctx.has_doc(d)]
            if prov:
                gold, how = prov, "provenance"
            yield DeflectionRecord(
                sample_id=f"viquae:{r['id']}:0", question_id=f"viquae:{r['id']}", question=r["question"],
                query_images=[rel], answer=r["answer"], aliases=r["aliases"],
                gold_contexts=[GoldContext(doc_id=d, modality="text") for d in gold], source="viquae",
                entity_id=r["entity_id"] or art["qid"],
                metadata={"id": r["id"], "kilt_id": art["kilt_id"], "image": r["image"], "gold_match": how,
                          "original_question": r["original_question"]})

    @staticmethod
    def _parse(f: Fields) -> dict[str, Any]:
        raw_out = f.raw("output")
        if isinstance(raw_out, list):
            if not raw_out:
                raise f.error("empty output list", field="output")
            raw_out = raw_out[0]
        out = f.sub("output", value=raw_out)
        aliases = out.str_list("answer", default=[])
        original = out.str("original_answer", default=None) or next((a for a in aliases if a), None)
        if not original:
            raise out.error("needs 'original_answer' or a non-empty 'answer' list", field="output.original_answer")
        provenance: list[int] = []
        for i, p in enumerate(out.list("provenance", default=[])):
            sub = out.sub("provenance", index=i, value=p)
            start = sub.int("start_paragraph_id", default=None)
            end = sub.int("end_paragraph_id", default=start)
            if start is not None:
                provenance.extend(range(start, (end if end is not None else start) + 1))
        kilt = f.raw("kilt_id", default=None)
        return {"id": f.str("id"), "question": f.str("input"), "image": f.str("image"), "answer": original,
                "aliases": dedupe(aliases, exclude=(original,)), "entity_id": f.str("wikidata_id", default=None),
                "kilt_id": str(kilt).strip() if kilt is not None else None, "provenance": provenance,
                "original_question": f.str("original_question", default=None)}

    def _load_kb(self, ctx: BuildContext, kilt_ids: set[str], qids: set[str]) -> dict[tuple[str, str], dict]:
        opts: ViQuAEOptions = self.options  # type: ignore[assignment]
        found: dict[tuple[str, str], dict] = {}
        for path, n, obj in iter_table(ctx.require_kb(), split=opts.kb_split):
            f = Fields(obj, path, line=n)
            kid = f.str("kilt_id", default=None) or f.str("wikipedia_id", default=None)
            info = f.raw("wikidata_info", default={}) or {}
            qid = str(info.get("wikidata_id") or "").strip() if isinstance(info, dict) else ""
            if kid not in kilt_ids and qid not in qids:
                continue
            if kid is None:
                raise f.error("missing required field", field="kilt_id")
            text = f.sub("text")
            art = {"kilt_id": kid, "qid": qid or None, "title": f.str("wikipedia_title", default=""),
                   "url": f.str("url", default=""), "paragraphs": text.str_list("paragraph")}
            found[("kilt", kid)] = art
            if qid:
                found.setdefault(("qid", qid), art)
        return found
