"""Encyclopedic-VQA (Mensink et al., 2023) -> DeflectionBench.

Input: the published ``{train,val,test}.csv`` (one row per textual question); ``--kb``: the
``encyclopedic_kb_wiki.json`` dict keyed by ``wikipedia_url`` (``title``, ``section_titles``,
``section_texts``, ``image_urls``, ...); ``--images``: the folder holding the images in their
releases' layouts — GLDv2 landmarks as ``a/b/c/<id>.jpg`` (the id's first three characters), and
iNaturalist 2021 by the ``file_name`` that the iNaturalist annotation JSON given with
``--option inat_annotations=PATH`` (``{"images": [{"id", "file_name"}, ...]}``) maps each id to, as
EchoSight's ``iNat_id2name`` does (iNaturalist ids are not file names).  Lookup is exact.

* Samples: a row lists up to five image ids (``|``-separated); each image gives one sample, all
  sharing one ``question_id`` (``evqa:<hash of question, answer, urls, image ids>`` — the CSV has
  no id column, so the id is derived from the row's content and stays stable if rows are
  reordered).  An image that is missing is a counted skip for that sample only.
* Answers: ``|`` separates the answers of different annotators — the first is ``answer``, the
  others are ``aliases``.  For ``multi_answer`` questions ``&&`` separates the parts of one
  answer: each annotator's answer is written with its parts joined by ", " (as the official BEM
  scorer rewrites ``&&`` to ","), and ``metadata.answer_parts`` keeps the part lists so a judge can
  apply the official list IoU >= 0.5 rule.
* Gold: the KB section ``evidence_section_id`` of the page ``wikipedia_url``; for ``2_hop``
  questions both fields hold two ``|``-separated values and both sections are gold.  Every
  non-empty section of each referenced page is written to the KB (entity id = page URL), so other
  sections of the gold page are never mined as negatives.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext, KBRecord
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields, dedupe
from mmrag.errors import InputError
from mmrag.mapping_files import read_json_mapping
from mmrag.schema import stable_id

REQUIRED_COLUMNS = ("question", "answer", "dataset_image_ids", "question_type", "wikipedia_url", "evidence_section_id")


def parse_answers(answer: str, question_type: str) -> tuple[str, list[str], list[list[str]]]:
    """E-VQA ``answer`` -> (answer, aliases, parts per annotator for multi_answer else [])."""
    refs = [r.strip() for r in answer.split("|") if r.strip()]
    if question_type != "multi_answer":
        return refs[0], dedupe(refs[1:], exclude=(refs[0],)), []
    parts = [[p.strip() for p in r.split("&&") if p.strip()] for r in refs]
    shown = [", ".join(p) for p in parts]
    return shown[0], dedupe(shown[1:], exclude=(shown[0],)), parts


def page_doc_id(url: str, section: int) -> str:
    return f"evqa:{stable_id(url, length=12)}:s{section}"


def iter_csv(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """Rows with the line on which each starts (quoted fields may span lines)."""
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"missing CSV column(s): {', '.join(missing)}", path=path, line=1, field=missing[0])
        start = reader.line_num + 1
        for row in reader:
            yield start, row
            start = reader.line_num + 1


def load_kb(path: Path, needed: set[str]) -> dict[str, Fields]:
    data = read_json_mapping(path, "a JSON object keyed by wikipedia_url")
    return {url: Fields(data[url], path, key=url) for url in needed if url in data}


class EVQAOptions(SourceOptions):
    inat_annotations: Path | None = None


def load_inat_names(path: Path) -> dict[str, str]:
    """iNaturalist 2021 annotation JSON -> ``{image id: file_name}``."""
    if not path.is_file():
        raise InputError("iNaturalist annotation file not found", path=path, field="option inat_annotations")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        raise InputError(
            "expected the iNaturalist 2021 annotation JSON with an 'images' list of {id, file_name}",
            path=path,
            field="images",
        )
    out = {}
    for i, im in enumerate(images):
        if not isinstance(im, dict) or "id" not in im or not im.get("file_name"):
            raise InputError("each image needs 'id' and 'file_name'", path=path, field=f"images[{i}]")
        out[str(im["id"])] = str(im["file_name"])
    return out


def landmark_path(image_id: str) -> str:
    """GLDv2's ``a/b/c/<id>.jpg``."""
    return f"{image_id[0]}/{image_id[1]}/{image_id[2]}/{image_id}.jpg" if len(image_id) >= 3 else f"{image_id}.jpg"


@SOURCES.register("evqa")
class EVQABuilder(SourceBuilder):
    name = "evqa"
    Options = EVQAOptions

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:
        rows = []
        for ln, raw in iter_csv(ctx.data):
            if not ctx.take():
                break
            rows.append(self._parse(Fields(raw, ctx.data, line=ln)))
        kb = load_kb(ctx.require_kb(), {u for r in rows for u in r["urls"]})
        ctx.image_folder()  # fail early when --images is missing
        inat = self._inat(rows)
        for r in rows:
            gold = self._emit_pages(ctx, r, kb)
            if gold is None:
                continue
            for i, image_id in enumerate(r["image_ids"]):
                if r["inat"]:
                    name = inat.get(image_id)
                    rel, why = ctx.stored_image(name) if name else (None, "id not in the iNaturalist annotations")
                else:
                    rel, why = ctx.stored_image(landmark_path(image_id))
                if rel is None:
                    ctx.skip(f"query {why}")
                    continue
                meta = {
                    "dataset_name": r["dataset_name"],
                    "dataset_image_id": image_id,
                    "encyclopedic_vqa_split": r["split"],
                    "wikipedia_url": r["raw_url"],
                    "evidence_section_title": r["section_title"],
                    "line": r["line"],
                }
                if r["parts"]:
                    meta["answer_parts"] = r["parts"]
                yield DeflectionRecord(
                    sample_id=f"evqa:{r['qkey']}:{i}",
                    question_id=f"evqa:{r['qkey']}",
                    question=r["question"],
                    query_images=[rel],
                    answer=r["answer"],
                    aliases=r["aliases"],
                    gold_contexts=[GoldContext(doc_id=d, modality="text") for d in gold],
                    source="evqa",
                    question_type=r["question_type"],
                    entity_id=r["urls"][0],
                    metadata=meta,
                )

    def _inat(self, rows: list[dict[str, Any]]) -> dict[str, str]:
        path = self.options.inat_annotations  # type: ignore[attr-defined]
        if path is not None:
            return load_inat_names(Path(path))
        first = next((r for r in rows if r["inat"]), None)
        if first is not None:
            raise InputError(
                "iNaturalist rows name images by iNaturalist id, not by file: pass the iNaturalist "
                "2021 annotation JSON with --option inat_annotations=PATH",
                path=first["path"],
                line=first["line"],
                field="dataset_name",
            )
        return {}

    @staticmethod
    def _parse(f: Fields) -> dict[str, Any]:
        qtype = f.str("question_type")
        answer, aliases, parts = parse_answers(f.str("answer"), qtype)
        raw_url = f.str("wikipedia_url")
        urls = [u.strip() for u in raw_url.split("|")]
        raw_sec = f.str("evidence_section_id")
        try:
            sections = [int(float(s)) for s in raw_sec.split("|")]
        except ValueError:
            raise f.error(f"expected integer section ids, got {raw_sec!r}", field="evidence_section_id") from None
        if len(sections) != len(urls):
            raise f.error(
                f"{len(sections)} section id(s) for {len(urls)} wikipedia_url(s)", field="evidence_section_id"
            )
        image_ids = [s.strip() for s in f.str("dataset_image_ids").split("|") if s.strip()]
        if not image_ids:
            raise f.error("no image id", field="dataset_image_ids")
        question = f.str("question")
        return {
            "question": question,
            "answer": answer,
            "aliases": aliases,
            "parts": parts,
            "question_type": qtype,
            "urls": urls,
            "raw_url": raw_url,
            "sections": sections,
            "image_ids": image_ids,
            "dataset_name": f.str("dataset_name", default=None),
            "split": f.str("encyclopedic_vqa_split", default=None),
            "section_title": f.str("evidence_section_title", default=None),
            "line": f.line,
            "path": f.path,
            "inat": (f.str("dataset_name", default="") or "").lower() == "inaturalist",
            "qkey": stable_id(question, f.str("answer"), raw_url, image_ids, length=12),
        }

    @staticmethod
    def _emit_pages(ctx: BuildContext, r: dict[str, Any], kb: dict[str, Fields]) -> list[str] | None:
        gold: list[str] = []
        for url, sec in zip(r["urls"], r["sections"]):
            entry = kb.get(url)
            if entry is None:
                ctx.skip("page not in KB")
                return None
            texts = entry.str_list("section_texts")
            titles = entry.str_list("section_titles", default=[])
            if not 0 <= sec < len(texts) or not texts[sec]:
                ctx.skip("evidence section missing or empty")
                return None
            title = entry.str("title", default="")
            for i, text in enumerate(texts):
                if text:
                    sec_title = titles[i] if i < len(titles) else ""
                    ctx.add_doc(
                        KBRecord(
                            id=page_doc_id(url, i),
                            modality="text",
                            text=text,
                            title=title,
                            source="evqa",
                            entity_id=url,
                            metadata={"url": url, "section": sec_title, "section_id": i},
                        )
                    )
            gold.append(page_doc_id(url, sec))
        return gold
