"""InfoSeek (Chen et al., 2023) -> DeflectionBench.

Input: ``infoseek_{split}_withkb.jsonl`` — one line per (image, question) with ``data_id``,
``image_id``, ``question``, ``answer`` (list), ``answer_eval``, ``data_split``, ``entity_id``
(Wikidata id) and ``entity_text``.  Lines without ``entity_id`` (the plain ``infoseek_{split}.jsonl``
files) have no gold page and are skipped with a counted reason.  ``--images``: the OVEN image
folder (files named by ``image_id``).  ``--kb``: a Wikidata-keyed page collection (formats in
:mod:`mmrag.benchmarks.sources.wiki`).  Option ``qtype=PATH`` reads ``infoseek_val_qtype.jsonl``
(``data_id`` -> ``question_type`` in time | numerical | string).

Answers, as InfoSeek's scorer uses them:

* string/time questions: ``answer[0]`` is the canonical answer; the other ``answer`` entries and
  every ``answer_eval`` string are aliases (the scorer takes the max EM over ``answer_eval``).
* numerical questions: ``answer_eval`` is ``[{"wikidata": v, "range": [lo, hi]}]`` (or the bare
  dict); each range becomes a ``numeric_ranges`` entry.  A dict with no range gets the official
  ±10% tolerance around ``wikidata``.  The judge scores a number inside a range as correct.

``question_id`` groups the samples that ask the same question about the same entity with
different images (``infoseek:q:<hash of normalised question + entity>``): the bootstrap clusters
on it, as the paper's 2,775 samples from 1,246 questions imply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields, dedupe
from mmrag.benchmarks.sources.text import GoldPolicy
from mmrag.benchmarks.sources.wiki import emit_page, load_wikidata_kb, page_passages
from mmrag.schema import stable_id
from mmrag.util import iter_jsonl

NUMERIC_TOLERANCE = 0.1  # infoseek_eval.metric_numerical_range's default


class InfoSeekOptions(SourceOptions):
    qtype: Path | None = None
    gold_policy: GoldPolicy = "answer"
    passage_words: int = 100
    max_gold: int = 3


def _fmt_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def parse_answer_eval(f: Fields) -> tuple[list[str], list[tuple[float, float]]]:
    """``answer_eval`` -> (string aliases, numeric ranges)."""
    raw: Any = f.raw("answer_eval")
    items = raw if isinstance(raw, list) else [raw]
    strings: list[str] = []
    ranges: list[tuple[float, float]] = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            sub = f.sub("answer_eval", index=i if isinstance(raw, list) else None, value=item)
            rng = item.get("range")
            try:
                if rng is not None:
                    if not isinstance(rng, (list, tuple)) or len(rng) < 2:
                        raise ValueError
                    lo, hi = sorted((float(rng[0]), float(rng[1])))
                else:
                    v = float(sub.raw("wikidata"))
                    lo, hi = sorted((v * (1 - NUMERIC_TOLERANCE), v * (1 + NUMERIC_TOLERANCE)))
            except (TypeError, ValueError):
                raise sub.error("expected 'range': [lo, hi] of numbers", field=sub.prefix + "range") from None
            ranges.append((lo, hi))
            if item.get("wikidata") is not None:
                try:
                    strings.append(_fmt_number(float(item["wikidata"])))
                except (TypeError, ValueError):
                    raise sub.error("expected a number", field=sub.prefix + "wikidata") from None
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
            strings.append(str(item))
        else:
            raise f.error(f"expected a string or a {{wikidata, range}} object, got {type(item).__name__}",
                          field=f"answer_eval[{i}]")
    return strings, ranges


@SOURCES.register("infoseek")
class InfoSeekBuilder(SourceBuilder):
    name = "infoseek"
    Options = InfoSeekOptions

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:
        opts: InfoSeekOptions = self.options  # type: ignore[assignment]
        qtypes = self._qtypes(opts.qtype)
        rows = []
        for ln, obj in iter_jsonl(ctx.data):
            if not ctx.take():
                break
            f = Fields(obj, ctx.data, line=ln)
            rows.append((f, self._parse(f)))
        pages = load_wikidata_kb(ctx.require_kb(), {r["entity_id"] for _, r in rows if r["entity_id"]})
        folder_checked = False
        for f, r in rows:
            if not r["entity_id"]:
                ctx.skip("no entity_id (use the *_withkb.jsonl file)")
                continue
            page = pages.get(r["entity_id"])
            if page is None:
                ctx.skip("entity not in KB")
                continue
            if not folder_checked:
                ctx.image_folder()
                folder_checked = True
            rel, why = ctx.stored_image(r["image_id"])
            if rel is None:
                ctx.skip(f"query {why}")
                continue
            passages = page_passages(f"infoseek:{page.entity_id}", page, opts.passage_words)
            if not passages:
                ctx.skip("entity page is empty")
                continue
            gold, how = emit_page(ctx, passages, title=page.title, entity_id=page.entity_id, url=page.url,
                                  answers=[r["answer"], *r["aliases"]], ranges=r["ranges"],
                                  policy=opts.gold_policy, max_gold=opts.max_gold)
            qtype = qtypes.get(r["data_id"]) or r["question_type"] or ("numerical" if r["ranges"] else None)
            qkey = stable_id(" ".join(r["question"].lower().split()), r["entity_id"], length=12)
            yield DeflectionRecord(
                sample_id=f"infoseek:{r['data_id']}:0", question_id=f"infoseek:q:{qkey}",
                question=r["question"], query_images=[rel], answer=r["answer"], aliases=r["aliases"],
                numeric_ranges=r["ranges"], gold_contexts=[GoldContext(doc_id=d, modality="text") for d in gold],
                source="infoseek", question_type=qtype, entity_id=r["entity_id"],
                metadata={"data_id": r["data_id"], "image_id": r["image_id"], "data_split": r["data_split"],
                          "entity_text": r["entity_text"], "gold_match": how, "line": f.line})

    @staticmethod
    def _parse(f: Fields) -> dict[str, Any]:
        answers = f.str_list("answer", nonempty=True)
        strings, ranges = parse_answer_eval(f)
        canonical = next(a for a in answers if a)
        return {
            "data_id": f.str("data_id"), "image_id": f.str("image_id"), "question": f.str("question"),
            "answer": canonical, "aliases": dedupe(answers + strings, exclude=(canonical,)), "ranges": ranges,
            "data_split": f.str("data_split", default=None), "entity_id": f.str("entity_id", default=None),
            "entity_text": f.str("entity_text", default=None),
            "question_type": f.str("question_type", default=None),
        }

    @staticmethod
    def _qtypes(path: Path | None) -> dict[str, str]:
        if path is None:
            return {}
        out = {}
        for ln, obj in iter_jsonl(path):
            f = Fields(obj, path, line=ln)
            out[f.str("data_id")] = f.str("question_type").lower()
        return out
