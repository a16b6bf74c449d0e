"""WebQA (Chang et al., 2022) -> DeflectionBench.

Input: ``WebQA_train_val.json`` (or any file of that shape): a JSON object keyed by guid, each
record with ``Q``, ``A`` (list), ``Qcate``, ``split``, ``topic``, ``txt_posFacts`` /
``txt_negFacts`` (``snippet_id``, ``title``, ``fact``, ``url``) and ``img_posFacts`` /
``img_negFacts`` (``image_id``, ``title``, ``caption``, ``url``).  ``--images``: a folder of files
named ``<image_id><ext>`` (exact id), the release's ``imgs.tsv`` (``image_id<TAB>base64``), or a folder holding
``imgs.tsv`` (used for ids not found as files).  No ``--kb``: WebQA has no global KB, each question
carries its own candidate pool.

* The query is text only (the paper's Table 2: WebQA queries are textual, contexts multimodal).
  WebQA wraps ``Q`` and ``A`` in literal double quotes; one surrounding pair is removed.
  ``A[0]`` is the answer, further entries aliases.  ``Qcate`` is kept as ``question_type`` (the
  official accuracy is category-aware).
* Gold = the positive facts: text facts as ``text`` documents, image facts as ``multimodal``
  documents (image + caption; option ``image_fact_modality=image`` drops the caption).
* Negatives = the negative facts, written to the KB and listed in ``negative_doc_ids``: they are
  WebQA's own hard distractors, mined by the dataset's authors for this very question.
* Records with no positive fact (the unlabeled test split) are skipped; a missing gold image skips
  the sample, a missing negative image only drops that negative.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext, KBRecord
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields, dedupe
from mmrag.benchmarks.sources.images import BadImage, FolderImages, ingest_webqa_tsv
from mmrag.errors import InputError
from mmrag.schema import Modality


class WebQAOptions(SourceOptions):
    image_fact_modality: Literal["multimodal", "image"] = "multimodal"


def unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1].strip()
    return s


@SOURCES.register("webqa")
class WebQABuilder(SourceBuilder):
    name = "webqa"
    Options = WebQAOptions

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:
        try:
            with open(ctx.data, encoding="utf-8") as fh:
                data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc.msg})", path=ctx.data, line=exc.lineno) from None
        if not isinstance(data, dict):
            raise InputError("expected a JSON object keyed by guid", path=ctx.data)
        recs = []
        for guid, obj in data.items():
            if not ctx.take():
                break
            recs.append(self._parse(Fields(obj, ctx.data, key=str(guid)), str(guid)))
        wanted = {fact["image_id"] for r in recs for fact in r["img_pos"] + r["img_neg"]}
        images = self._images(ctx, wanted) if wanted else {}
        for r in recs:
            if not r["txt_pos"] and not r["img_pos"]:
                ctx.skip("no positive facts (unlabeled test split)")
                continue
            if any(f["image_id"] not in images for f in r["img_pos"]):
                ctx.skip("gold image not found")
                continue
            gold = [GoldContext(doc_id=self._txt(ctx, f), modality="text") for f in r["txt_pos"]]
            gold += [GoldContext(doc_id=d, modality=m) for d, m in (self._img(ctx, f, images) for f in r["img_pos"])]
            negs = [self._txt(ctx, f) for f in r["txt_neg"]]
            for f in r["img_neg"]:
                if f["image_id"] in images:
                    negs.append(self._img(ctx, f, images)[0])
                else:
                    ctx.drop("negative image not found")
            gold_ids = {g.doc_id for g in gold}
            yield DeflectionRecord(
                sample_id=f"webqa:{r['guid']}:0",
                question_id=f"webqa:{r['guid']}",
                question=r["question"],
                answer=r["answer"],
                aliases=r["aliases"],
                gold_contexts=gold,
                negative_doc_ids=dedupe([n for n in negs if n not in gold_ids]),
                source="webqa",
                question_type=r["qcate"],
                metadata={"guid": r["guid"], "split": r["split"], "topic": r["topic"]},
            )

    @staticmethod
    def _parse(f: Fields, guid: str) -> dict[str, Any]:
        def facts(name: str, id_field: str, text_field: str) -> list[dict[str, str]]:
            out = []
            for i, item in enumerate(f.list(name, default=[])):
                sub = f.sub(name, index=i, value=item)
                text = (
                    sub.str(text_field) if name.startswith("txt") else sub.str(text_field, default="", allow_empty=True)
                )
                out.append(
                    {
                        "id": sub.str(id_field),
                        "image_id": sub.str(id_field),
                        "title": sub.str("title", default=""),
                        "text": text,
                        "url": sub.str("url", default=""),
                    }
                )
            return out

        txt_pos, img_pos = facts("txt_posFacts", "snippet_id", "fact"), facts("img_posFacts", "image_id", "caption")
        if not txt_pos and not img_pos:  # the unlabeled test split: no answer, no gold to check
            return {"guid": guid, "txt_pos": [], "img_pos": [], "txt_neg": [], "img_neg": []}
        answers = [a for a in (unquote(a) for a in f.str_list("A", nonempty=True)) if a]
        if not answers:
            raise f.error("every answer is empty", field="A")
        return {
            "guid": guid,
            "question": unquote(f.str("Q")),
            "answer": answers[0],
            "aliases": dedupe(answers[1:], exclude=(answers[0],)),
            "qcate": f.str("Qcate", default=None),
            "split": f.str("split", default=None),
            "topic": f.str("topic", default=None),
            "txt_pos": txt_pos,
            "txt_neg": facts("txt_negFacts", "snippet_id", "fact"),
            "img_pos": img_pos,
            "img_neg": facts("img_negFacts", "image_id", "caption"),
        }

    @staticmethod
    def _txt(ctx: BuildContext, fact: dict[str, str]) -> str:
        return ctx.add_doc(
            KBRecord(
                id=f"webqa:txt:{fact['id']}",
                modality="text",
                text=fact["text"],
                title=fact["title"],
                source="webqa",
                metadata={"url": fact["url"]},
            )
        )

    def _img(self, ctx: BuildContext, fact: dict[str, str], images: dict[str, str]) -> tuple[str, Modality]:
        modality = self.options.image_fact_modality  # type: ignore[attr-defined]
        if not fact["text"]:
            modality = "image"
        doc = KBRecord(
            id=f"webqa:img:{fact['image_id']}",
            modality=modality,
            image=images[fact["image_id"]],
            text=fact["text"] if modality == "multimodal" else "",
            title=fact["title"],
            source="webqa",
            metadata={"url": fact["url"], "caption": fact["text"]},
        )
        return ctx.add_doc(doc), modality

    @staticmethod
    def _images(ctx: BuildContext, wanted: set[str]) -> dict[str, str]:
        """image id -> stored relative path, for the ids found (files first, then ``imgs.tsv``)."""
        if ctx.images is None:
            raise InputError("source 'webqa' needs its images: pass --images DIR or imgs.tsv", field="images")
        if not ctx.images.exists():
            raise InputError("images not found", path=ctx.images, field="images")
        found: dict[str, str] = {}
        tsv: Path | None = ctx.images if ctx.images.is_file() else None
        if ctx.images.is_dir():
            folder = FolderImages(ctx.images)
            for image_id in sorted(wanted):
                p = folder.find_stem("", image_id)  # <image_id><ext> in the folder, exactly
                if p is not None:
                    try:
                        found[image_id] = ctx.store.put_file(p)
                    except BadImage:
                        continue
            cand = ctx.images / "imgs.tsv"
            tsv = cand if cand.is_file() else None
        if tsv is not None and wanted - found.keys():
            found.update(ingest_webqa_tsv(tsv, wanted - found.keys(), ctx.store))
        return found
