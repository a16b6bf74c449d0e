"""InfoSeek (Chen et al., 2023) -> DeflectionBench, from the files as released.

``--data``: the question file ``infoseek_{split}.jsonl`` (``data_id``, ``image_id``, ``question``,
``answer`` list, ``answer_eval``, ``data_split``).  Its entity comes from the separate with-KB
mapping ``infoseek_{split}_withkb.jsonl`` (only ``data_id``, ``entity_id``, ``entity_text``),
found beside the question file or given with ``--option withkb=PATH``, and joined on ``data_id``.
Passing the mapping itself as ``--data`` is an error that says so.  ``--kb``: ``Wiki6M_ver_1_0.jsonl``
or ``.jsonl.gz`` as released (other KB shapes in :mod:`mmrag.benchmarks.sources.wiki`).
``--images``: the OVEN image folder, ``<two digits>/<image_id><original ext>`` (the digits are the
first two of the id's number, as ``merge_oven_images.py`` shards; ImageNet images keep ``.JPEG``),
or the same files flat in one folder.  ``--option qtype=infoseek_val_qtype.jsonl`` gives the question
types (``String | Numerical | Time``, lower-cased as the official evaluator compares them).

Items with no with-KB entry, whose entity is not in the KB, or whose image is missing are
skipped and counted by reason, as UniIR's and infoseek_eval's pipelines skip them.

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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmrag.benchmarks.formats import DeflectionRecord, GoldContext
from mmrag.benchmarks.sources.base import SOURCES, BuildContext, SourceBuilder, SourceOptions
from mmrag.benchmarks.sources.fields import Fields, dedupe
from mmrag.benchmarks.sources.images import FolderImages
from mmrag.benchmarks.sources.text import GoldPolicy
from mmrag.benchmarks.sources.wiki import emit_page, load_wikidata_kb, page_passages
from mmrag.errors import InputError
from mmrag.schema import stable_id
from mmrag.util import iter_jsonl

NUMERIC_TOLERANCE = 0.1  # infoseek_eval.metric_numerical_range's default


class InfoSeekOptions(SourceOptions):
    withkb: Path | None = None
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
            raise f.error(
                f"expected a string or a {{wikidata, range}} object, got {type(item).__name__}",
                field=f"answer_eval[{i}]",
            )
    return strings, ranges


def oven_image(folder: FolderImages | None, image_id: str) -> Path | None:
    """OVEN's ``<two digits>/<image_id><ext>`` (digits: the first two of the number after the last
    ``_``, as ``merge_oven_images.py`` shards), else the same file flat in the folder; exact id,
    any original extension (``.JPEG`` included)."""
    if folder is None:
        return None
    shard = image_id.rsplit("_", 1)[-1][:2]
    return folder.find_stem(shard, image_id) or folder.find_stem("", image_id)


@SOURCES.register("infoseek")
class InfoSeekBuilder(SourceBuilder):
    name = "infoseek"
    Options = InfoSeekOptions

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:
        opts: InfoSeekOptions = self.options  # type: ignore[assignment]
        qtypes = self._qtypes(opts.qtype)
        rows: list[Any] = []
        for ln, obj in iter_jsonl(ctx.data):
            if not ctx.take():
                break
            if not rows and "question" not in obj and "entity_id" in obj:
                raise InputError(
                    "this is InfoSeek's with-KB mapping (data_id, entity_id, entity_text), not the "
                    "question file: pass --data infoseek_<split>.jsonl (the mapping is found beside it "
                    "or given with --option withkb=PATH)",
                    path=ctx.data,
                    line=ln,
                )
            f = Fields(obj, ctx.data, line=ln)
            rows.append((f, self._parse(f)))
        entities = self._withkb(ctx.data, opts.withkb, {r["data_id"] for _, r in rows})
        pages = load_wikidata_kb(ctx.require_kb(), {e[0] for e in entities.values()})
        folder = ctx.image_folder() if rows else None
        for f, r in rows:
            if r["data_id"] not in entities:
                ctx.skip("no with-KB entry for data_id")
                continue
            r["entity_id"], r["entity_text"] = entities[r["data_id"]]
            page = pages.get(r["entity_id"])
            if page is None:
                ctx.skip("entity not in KB")
                continue
            rel, why = ctx.store_found(oven_image(folder, r["image_id"]))
            if rel is None:
                ctx.skip(f"query {why}")
                continue
            passages = page_passages(f"infoseek:{page.entity_id}", page, opts.passage_words)
            if not passages:
                ctx.skip("entity page is empty")
                continue
            gold, how = emit_page(
                ctx,
                passages,
                title=page.title,
                entity_id=page.entity_id,
                url=page.url,
                answers=[r["answer"], *r["aliases"]],
                ranges=r["ranges"],
                policy=opts.gold_policy,
                max_gold=opts.max_gold,
            )
            qtype = qtypes.get(r["data_id"]) or ("numerical" if r["ranges"] else None)
            qkey = stable_id(" ".join(r["question"].lower().split()), r["entity_id"], length=12)
            yield DeflectionRecord(
                sample_id=f"infoseek:{r['data_id']}:0",
                question_id=f"infoseek:q:{qkey}",
                question=r["question"],
                query_images=[rel],
                answer=r["answer"],
                aliases=r["aliases"],
                numeric_ranges=r["ranges"],
                gold_contexts=[GoldContext(doc_id=d, modality="text") for d in gold],
                source="infoseek",
                question_type=qtype,
                entity_id=r["entity_id"],
                metadata={
                    "data_id": r["data_id"],
                    "image_id": r["image_id"],
                    "data_split": r["data_split"],
                    "entity_text": r["entity_text"],
                    "gold_match": how,
                    "line": f.line,
                },
            )

    @staticmethod
    def _withkb(data: Path, given: Path | None, wanted: set[str]) -> dict[str, tuple[str, str | None]]:
        """``data_id -> (entity_id, entity_text)`` from the with-KB mapping (only ``wanted`` ids)."""
        path = given
        if path is None:
            stem = data.name[: -len(".jsonl")] if data.name.endswith(".jsonl") else data.stem
            path = data.with_name(f"{stem}_withkb.jsonl")
            if not path.is_file():
                raise InputError(
                    f"InfoSeek's with-KB mapping not found beside the question file (looked for "
                    f"{path.name}); pass it with --option withkb=PATH",
                    path=data,
                    field="withkb",
                )
        elif not path.is_file():
            raise InputError("with-KB mapping not found", path=path, field="option withkb")
        out: dict[str, tuple[str, str | None]] = {}
        for ln, obj in iter_jsonl(path):
            f = Fields(obj, path, line=ln)
            data_id = f.str("data_id")
            if data_id in wanted:
                out[data_id] = (f.str("entity_id"), f.str("entity_text", default=None))
        return out

    @staticmethod
    def _parse(f: Fields) -> dict[str, Any]:
        answers = f.str_list("answer", nonempty=True)
        strings, ranges = parse_answer_eval(f)
        canonical = next(a for a in answers if a)
        return {
            "data_id": f.str("data_id"),
            "image_id": f.str("image_id"),
            "question": f.str("question"),
            "answer": canonical,
            "aliases": dedupe(answers + strings, exclude=(canonical,)),
            "ranges": ranges,
            "data_split": f.str("data_split", default=None),
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
