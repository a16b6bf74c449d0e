"""Wikipedia pages keyed by Wikidata id: the knowledge base of InfoSeek (and the shape ViQuAE's
KILT pages are turned into), cut into passages and written as KB documents.

Accepted InfoSeek KB formats (see docs/sources.md):

* JSONL, plain or ``.jsonl.gz``, one page per line: ``{"wikidata_id", "wikipedia_title",
  "wikipedia_content", "wikipedia_image_url", "wikipedia_summary"}`` — OVEN's
  ``Wiki6M_ver_1_0.jsonl`` as released (an empty ``wikipedia_content`` falls back to the summary).
  Lines may instead carry ``section_titles``/``section_texts`` lists.
* JSON dict in the Encyclopedic-VQA KB format (``{key: {"title", "section_titles",
  "section_texts", "url", ...}}``, e.g. EchoSight's 100K subset).  Each entry is matched to an
  InfoSeek entity by its ``wikidata_id`` field when present, else by its key when the key is a
  Wikidata id (``Q123``); entries with neither are ignored because no InfoSeek question can
  point at them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mmrag.benchmarks.formats import KBRecord
from mmrag.benchmarks.sources.base import BuildContext
from mmrag.benchmarks.sources.fields import Fields
from mmrag.benchmarks.sources.tables import iter_jsonl_any
from mmrag.benchmarks.sources.text import GoldPolicy, select_gold, split_passages
from mmrag.mapping_files import read_json_mapping

_QID = re.compile(r"^Q\d+$")


@dataclass
class WikiPage:
    entity_id: str
    title: str
    url: str = ""
    sections: list[tuple[str, str]] = field(default_factory=list)  # (section title, text)


@dataclass
class Passage:
    doc_id: str
    text: str
    section: str = ""


def page_passages(prefix: str, page: WikiPage, max_words: int) -> list[Passage]:
    """Passages of a page in reading order, ids ``<prefix>:p<n>`` (stable for a given KB file)."""
    out: list[Passage] = []
    for sec_title, text in page.sections:
        for chunk in split_passages(text, max_words):
            out.append(Passage(f"{prefix}:p{len(out)}", chunk, sec_title))
    return out


def emit_page(
    ctx: BuildContext,
    passages: list[Passage],
    *,
    title: str,
    entity_id: str,
    url: str,
    answers: list[str],
    ranges: list[tuple[float, float]],
    policy: GoldPolicy,
    max_gold: int,
) -> tuple[list[str], str]:
    """Write every passage as a text document and return (gold doc ids, how they were chosen)."""
    for p in passages:
        meta = {"section": p.section} if p.section else {}
        if url:
            meta["url"] = url
        ctx.add_doc(
            KBRecord(
                id=p.doc_id,
                modality="text",
                text=p.text,
                title=title,
                source=ctx.source,
                entity_id=entity_id,
                metadata=meta,
            )
        )
    idx, how = select_gold([p.text for p in passages], answers, ranges, policy, max_gold)
    return [passages[i].doc_id for i in idx], how


def load_wikidata_kb(path: Path, needed: Iterable[str]) -> dict[str, WikiPage]:
    """Pages for the ``needed`` Wikidata ids only (the full KBs hold millions of pages)."""
    needed = set(needed)
    pages: dict[str, WikiPage] = {}
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        for ln, obj in iter_jsonl_any(path):
            qid = obj.get("wikidata_id")
            if qid is None:  # every Wiki6M line has one: a line without it is a wrong file
                Fields(obj, path, line=ln).str("wikidata_id")
            if str(qid).strip() in needed:
                qid = str(qid).strip()
                pages[qid] = _page_from(Fields(obj, path, line=ln), qid)
        return pages
    data = read_json_mapping(path, "a JSON object keyed by URL or Wikidata id")
    for key, entry in data.items():
        f = Fields(entry, path, key=key)
        qid = f.str("wikidata_id", default=key if _QID.match(str(key)) else None)
        if qid in needed:
            pages[qid] = _page_from(f, qid, url_default=key if not _QID.match(str(key)) else "")
    return pages


def _page_from(f: Fields, qid: str, url_default: str = "") -> WikiPage:
    title = f.str("wikipedia_title", default=None) or f.str("title", default="")
    url = f.str("url", default=url_default)
    if "section_texts" in f.obj:
        texts = f.str_list("section_texts")
        titles = f.str_list("section_titles", default=[])
        sections = [(titles[i] if i < len(titles) else "", t) for i, t in enumerate(texts)]
    else:
        content = f.str("wikipedia_content", default="", allow_empty=True)
        sections = [("", content or f.str("wikipedia_summary", default="", allow_empty=True))]
    return WikiPage(entity_id=qid, title=title, url=url, sections=sections)
