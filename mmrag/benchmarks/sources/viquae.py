"""ViQuAE (Lerner et al., 2022) -> DeflectionBench, from the files as released.

``--data``: the KILT-shaped ``validation.jsonl`` (or ``train``/``test``) at the root of the dataset
repository, or the same as a saved Hugging Face dataset / parquet (``--option split=validation`` picks a
split of a DatasetDict).  A line holds ``id``, ``input`` (the question), ``kilt_id`` (the KILT
*question* id, kept in metadata), ``image`` (file name), ``wikidata_id`` (the depicted entity),
``original_question`` and ``output``, a dict of lists as ``datasets`` stores KILT:
``output.original_answer``, ``output.answer`` (the aliases; entries that only carry evidence are
``""``) and ``output.provenance``, a list of dicts whose fields are lists
(``{"wikipedia_id": ["159013"], "title": ["Braveheart"], ...}``).  KILT's list-of-outputs form is
read too.  ``--images``: the extracted ``images/`` folder (exact file name).  ``--kb``: the folder
of the three ``*.jsonl.gz`` parts of ``viquae_wikipedia`` (``humans_with_faces``,
``humans_without_faces``, ``non_humans``), a saved HF dataset, parquet or one JSONL file; each
article has ``kilt_id`` (= ``wikipedia_id``), ``wikipedia_title``, ``text.paragraph``,
``wikidata_info`` and ``url``.

* Answer: ``output.original_answer``; the non-empty ``output.answer`` entries are aliases.
* Gold, as ViQuAE's ``ir/metrics.find_relevant_item``: passages of the **provenance articles**
  (``wikipedia_id``, else ``title``; they may differ from the depicted entity's article) that
  contain the original answer or an alias (word-boundary match after normalisation).  A question
  whose provenance articles are not in the KB, or hold no answer-bearing passage, is skipped and
  counted.
* A question **without provenance** takes its gold from the depicted entity's own article (the
  KB article whose ``wikidata_info.wikidata_id`` is the question's ``wikidata_id``): its passages
  that contain the answer or an alias, as ViQuAE defines relevant passages.  Such samples carry
  ``metadata.gold_match = "entity_article"`` and are counted in the build's ``noted`` (skipped
  when the article is missing or holds no such passage).  KILT paragraph 0 (the title) and ``Section::::`` headings are not passages; doc ids keep
  KILT's paragraph index.  Every passage of a provenance article goes to the KB with the article's
  Wikidata id (else ``kilt:<id>``) as entity id, so the miner never offers its other passages as
  negatives.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from typing import Any

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields, dedupe
from mmrag.benchmarks.sources.tables import iter_table
from mmrag.benchmarks.sources.wiki import Passage, emit_page


class ViQuAEOptions(SourceOptions):
    split: str | None = None
    kb_split: str | None = None
    max_gold: int = 3


def _kilt_passages(kilt_id: str, paragraphs: list[str]) -> list[Passage]:
    out = []
    section = ""
    for i, para in enumerate(paragraphs):
        text = " ".join(str(para).split())
        if i == 0 or not text:
            continue
        if text.startswith("Section::::"):
            section = text[len("Section::::") :].rstrip(".").replace(":", " > ")
            continue
        out.append(Passage(f"viquae:{kilt_id}:p{i}", text, section))
    return out


def _first(v: Any) -> str | None:
    """A KILT provenance field: a list (``datasets``' dict-of-lists form) or a scalar."""
    if isinstance(v, (list, tuple)):
        v = next((x for x in v if x not in (None, "")), None)
    return None if v is None or str(v).strip() == "" else str(v).strip()


def _provenance(out: Fields) -> list[tuple[str | None, str | None]]:
    """``(wikipedia_id, title)`` of every provenance entry, in order, de-duplicated."""
    refs: list[tuple[str | None, str | None]] = []
    for i, p in enumerate(out.list("provenance", default=[])):
        entries = p if isinstance(p, list) else [p]  # KILT's list-of-outputs form nests one level more
        for e in entries:
            sub = out.sub("provenance", index=i, value=e)
            ref = (_first(sub.obj.get("wikipedia_id")), _first(sub.obj.get("title")))
            if ref != (None, None) and ref not in refs:  # an all-empty entry carries no evidence
                refs.append(ref)
    return refs


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
        articles = self._load_kb(
            ctx,
            {w for r in rows for w, _ in r["provenance"] if w},
            {t for r in rows for _, t in r["provenance"] if t},
            {r["entity_id"] for r in rows if not r["provenance"] and r["entity_id"]},
        )
        ctx.image_folder()
        for r in rows:
            if r["provenance"]:
                arts = [
                    a for a in (articles.get(("id", w)) or articles.get(("title", t)) for w, t in r["provenance"]) if a
                ]
                match, missing = "provenance", "provenance article not in KB"
            else:  # ViQuAE's relevant passages: the depicted entity's article, answer-bearing passages
                arts = [a for a in [articles.get(("qid", r["entity_id"] or ""))] if a]
                match, missing = "entity_article", "no provenance and the entity's article is not in KB"
            arts = list({a["kilt_id"]: a for a in arts}.values())
            if not arts:
                ctx.skip(missing)
                continue
            rel, why = ctx.stored_image(r["image"])
            if rel is None:
                ctx.skip(f"query {why}")
                continue
            gold: list[str] = []
            answers = [r["answer"], *r["aliases"]]
            for art in arts:
                passages = _kilt_passages(art["kilt_id"], art["paragraphs"])
                if passages:
                    ids, how = emit_page(
                        ctx,
                        passages,
                        title=art["title"],
                        entity_id=art["entity"],
                        url=art["url"],
                        answers=answers,
                        ranges=[],
                        policy="answer",
                        max_gold=opts.max_gold,
                    )
                    gold += ids if how == "answer" else []
            if not gold:
                ctx.skip(
                    "no provenance passage contains the answer"
                    if match == "provenance"
                    else "no passage of the entity's article contains the answer"
                )
                continue
            if match == "entity_article":
                ctx.note("gold from the entity's own article (no provenance)")
            yield DeflectionRecord(
                sample_id=f"viquae:{r['id']}:0",
                question_id=f"viquae:{r['id']}",
                question=r["question"],
                query_images=[rel],
                answer=r["answer"],
                aliases=r["aliases"],
                gold_contexts=[GoldContext(doc_id=d, modality="text") for d in gold[: opts.max_gold]],
                source="viquae",
                entity_id=r["entity_id"] or arts[0]["entity"],
                metadata={
                    "id": r["id"],
                    "kilt_id": r["kilt_id"],
                    "image": r["image"],
                    "gold_match": match,
                    "provenance_articles": [a["kilt_id"] for a in arts],
                    "original_question": r["original_question"],
                },
            )

    @staticmethod
    def _parse(f: Fields) -> dict[str, Any]:
        raw_out = f.raw("output")
        if isinstance(raw_out, list):  # KILT's list of outputs -> the dict-of-lists form
            raw_out = {
                "answer": [o.get("answer", "") for o in raw_out if isinstance(o, dict)],
                "original_answer": next(
                    (o["original_answer"] for o in raw_out if isinstance(o, dict) and o.get("original_answer")), None
                ),
                "provenance": [o.get("provenance", []) for o in raw_out if isinstance(o, dict)],
            }
        out = f.sub("output", value=raw_out)
        aliases = [a for a in out.str_list("answer", default=[]) if a]
        original = _first(out.obj.get("original_answer")) or next(iter(aliases), None)
        if not original:
            raise out.error("needs 'original_answer' or a non-empty 'answer' list", field="output.original_answer")
        return {
            "id": f.str("id"),
            "question": f.str("input"),
            "image": f.str("image"),
            "answer": original,
            "aliases": dedupe(aliases, exclude=(original,)),
            "entity_id": f.str("wikidata_id", default=None),
            "kilt_id": f.str("kilt_id", default=None),
            "provenance": _provenance(out),
            "original_question": f.str("original_question", default=None),
        }

    def _load_kb(
        self, ctx: BuildContext, ids: set[str], titles: set[str], qids: AbstractSet[str] = frozenset()
    ) -> dict[tuple[str, str], dict]:
        """The KB articles named by kilt id, title or (for questions without provenance) Wikidata id."""
        opts: ViQuAEOptions = self.options  # type: ignore[assignment]
        found: dict[tuple[str, str], dict] = {}
        for path, n, obj in iter_table(ctx.require_kb(), split=opts.kb_split):
            kid = str(obj.get("kilt_id") or obj.get("wikipedia_id") or "").strip()
            title = str(obj.get("wikipedia_title") or "").strip()
            info = obj.get("wikidata_info")
            info = info if isinstance(info, dict) else {}
            qid = str(info.get("wikidata_id") or "").strip()
            if kid not in ids and title not in titles and qid not in qids:
                continue
            f = Fields(obj, path, line=n)
            if not kid:
                raise f.error("missing required field", field="kilt_id")
            art = {
                "kilt_id": kid,
                "entity": qid or f"kilt:{kid}",
                "title": title,
                "url": f.str("url", default=""),
                "paragraphs": f.sub("text").str_list("paragraph"),
            }
            found[("id", kid)] = art
            if qid:
                found.setdefault(("qid", qid), art)
            if title:
                found.setdefault(("title", title), art)
        return found
