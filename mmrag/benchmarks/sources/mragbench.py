"""MRAG-Bench (Hu et al., 2024) -> DeflectionBench.

Input: the Hugging Face dataset ``uclanlp/MRAG-Bench`` (split ``test``) as parquet, a folder of
parquet files, or a ``save_to_disk`` folder; rows hold ``id``, ``aspect``, ``scenario``,
``question``, options ``A``-``D``, ``answer_choice`` (the gold letter), ``answer`` (its text), and
the image columns ``image`` (query), ``gt_images`` and ``retrieved_images`` (lists) as Hugging Face
``Image`` structs.  No ``--kb`` or ``--images``: the pixels are in the table.

* Multiple choice, scored as MRAG-Bench scores it — by option letter: ``options`` = {A..D},
  ``label`` = ``answer_choice``, ``answer`` = the gold option's text.
* Gold = the ``gt_images`` as ``image`` documents; for scenario ``Incomplete`` only the first one,
  as the official loader does.  Their entity id is ``mragbench:<normalised answer>``, so that the
  negative miner never offers a picture of the answer's own class as a distractor.
* Negatives = the ``retrieved_images`` (the benchmark's CLIP-retrieved examples; the first only for
  ``Incomplete``, again as the official loader) that are not byte-identical to a gold image.
* Image documents are keyed by content hash (``mragbench:img:<sha256[:16]>``): the same picture
  used by several questions is one document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext, KBRecord
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields
from mmrag.benchmarks.sources.images import BadImage, image_bytes
from mmrag.benchmarks.sources.tables import iter_table
from mmrag.benchmarks.sources.text import normalize

LETTERS = ("A", "B", "C", "D")


class MRAGBenchOptions(SourceOptions):
    split: str | None = None


@SOURCES.register("mragbench")
class MRAGBenchBuilder(SourceBuilder):
    name = "mragbench"
    Options = MRAGBenchOptions

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:
        split = self.options.split  # type: ignore[attr-defined]
        for path, n, obj in iter_table(ctx.data, split=split):
            if not ctx.take():
                break
            f = Fields(obj, path, line=n)
            r = self._parse(f)
            try:
                query = ctx.store.put_bytes(self._bytes(f, "image", obj.get("image"), ctx))
            except BadImage:
                ctx.skip("query undecodable image")
                continue
            entity = f"mragbench:{normalize(r['answer'])}"
            gold, gold_sha = [], set()
            try:
                for i, img in enumerate(r["gt_images"]):
                    doc_id, sha = self._image_doc(ctx, self._bytes(f, f"gt_images[{i}]", img, ctx), entity)
                    gold.append(doc_id)
                    gold_sha.add(sha)
            except BadImage:
                ctx.skip("gold undecodable image")
                continue
            negs = []
            for i, img in enumerate(r["retrieved"]):
                try:
                    data = self._bytes(f, f"retrieved_images[{i}]", img, ctx)
                    rel = ctx.store.put_bytes(data)
                except BadImage:
                    ctx.drop("negative undecodable image")
                    continue
                if ctx.store.sha_of(rel) not in gold_sha:
                    negs.append(self._image_doc(ctx, data, None)[0])
            yield DeflectionRecord(
                sample_id=f"mragbench:{r['id']}:0",
                question_id=f"mragbench:{r['id']}",
                question=r["question"],
                query_images=[query],
                answer=r["answer"],
                options=r["options"],
                label=r["label"],
                gold_contexts=[GoldContext(doc_id=d, modality="image") for d in dict.fromkeys(gold)],
                negative_doc_ids=list(dict.fromkeys(negs)),
                source="mragbench",
                question_type=r["scenario"],
                entity_id=entity,
                metadata={"id": r["id"], "aspect": r["aspect"], "scenario": r["scenario"]},
            )

    @staticmethod
    def _parse(f: Fields) -> dict[str, Any]:
        options = {k: f.str(k) for k in LETTERS}
        label = f.str("answer_choice").upper()
        if label not in options:
            raise f.error(f"must be one of A, B, C, D, got {label!r}", field="answer_choice")
        scenario = f.str("scenario")
        gt = f.list("gt_images", nonempty=True)
        retrieved = f.list("retrieved_images", default=[])
        if scenario == "Incomplete":
            gt, retrieved = gt[:1], retrieved[:1]
        f.raw("image")
        return {
            "id": f.str("id"),
            "question": f.str("question"),
            "options": options,
            "label": label,
            "answer": f.str("answer", default=options[label]),
            "scenario": scenario,
            "aspect": f.str("aspect", default=None),
            "gt_images": gt,
            "retrieved": retrieved,
        }

    @staticmethod
    def _bytes(f: Fields, field: str, value: Any, ctx: BuildContext) -> bytes:
        try:
            data = image_bytes(value, base_dir=ctx.data.parent if ctx.data.is_file() else ctx.data)
        except TypeError as exc:
            raise f.error(str(exc), field=field) from None
        if data is None:
            raise f.error("image has neither bytes nor a readable path", field=field)
        return data

    @staticmethod
    def _image_doc(ctx: BuildContext, data: bytes, entity: str | None) -> tuple[str, str]:
        rel = ctx.store.put_bytes(data)
        sha = ctx.store.sha_of(rel)
        doc_id = ctx.add_doc(
            KBRecord(id=f"mragbench:img:{sha[:16]}", modality="image", image=rel, source="mragbench", entity_id=entity)
        )
        return doc_id, sha
