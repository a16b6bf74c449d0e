"""KnowHal (arXiv 2608.03782) in mmrag's JSONL format (docs/formats.md).

KnowHal's data is not public; :class:`~mmrag.benchmarks.formats.KnowHalRecord` mirrors the paper:
entity-image samples with one positive and one negative (false-premise) question per dimension
(Entity, Attribute, Relation, Knowledge), a domain and a category.  Relation questions are multiple
choice (options A-D + label), the others open-ended (scored by the VQA protocol on positives, by a
judge on negatives, per the paper).

Mapping choices (the paper is silent on them):
* ``question_id`` = the record id (positive and negative are different questions); the pair is in
  ``metadata["pair_id"]`` for paired metrics such as HPS.
* A negative's ``answers`` are reference rejections, not answers to match: they go to
  ``metadata["reference_answers"]`` and ``Sample.answers`` stays empty, so no string-matching judge
  can mistake them for gold answers.
* The loader checks that every pair is complete (exactly one positive and one negative, same
  dimension, entity and image); an incomplete pair is an InputError naming its line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmrag.benchmarks._loading import choices_from_options, fingerprint_files, resolve_image, take_options
from mmrag.benchmarks.base import BENCHMARKS
from mmrag.benchmarks.formats import DIMENSION_NAMES, KnowHalRecord
from mmrag.errors import InputError
from mmrag.schema import Sample
from mmrag.util import iter_jsonl, parse_record


def _check_pairs(records: list[tuple[int, KnowHalRecord]], path: Path) -> None:
    pairs: dict[str, list[tuple[int, KnowHalRecord]]] = {}
    for ln, r in records:
        pairs.setdefault(r.pair_id, []).append((ln, r))
    for pid, members in pairs.items():
        ln0 = members[0][0]
        pols = sorted(r.polarity for _, r in members)
        if pols != ["negative", "positive"]:
            raise InputError(
                f"pair '{pid}' must have exactly one positive and one negative question, found {pols}",
                path=path,
                line=ln0,
                field="polarity",
            )
        (_, a), (lnb, b) = members
        for f in ("entity_id", "image", "dimension"):
            if getattr(a, f) != getattr(b, f):
                raise InputError(
                    f"pair '{pid}': positive and negative differ in '{f}' ({getattr(a, f)!r} vs {getattr(b, f)!r})",
                    path=path,
                    line=lnb,
                    field=f,
                )


class KnowHalBenchmark:
    kind = "knowhal"

    def __init__(
        self, path: str | Path, *, name: str = "knowhal", check_pairs: bool = True, source: str = "knowhal"
    ) -> None:
        self.path = Path(path)
        self.source = source
        if not self.path.is_file():
            raise InputError("KnowHal JSONL file not found", path=self.path)
        self.name = name
        self.check_pairs = check_pairs
        self._samples: list[Sample] | None = None

    def _to_sample(self, rec: KnowHalRecord, ln: int) -> Sample:
        image = resolve_image(rec.image, self.path.parent, file=self.path, line=ln, field="image", record=rec.id)
        meta: dict[str, Any] = {
            **rec.metadata,
            "pair_id": rec.pair_id,
            "dimension": rec.dimension,
            "dimension_name": DIMENSION_NAMES[rec.dimension],
            "polarity": rec.polarity,
            "domain": rec.domain,
            "category": rec.category,
            "false_premise": rec.false_premise,
            "strategy": rec.strategy,
        }
        answers = list(rec.answers)
        if rec.polarity == "negative":
            meta["reference_answers"], answers = answers, []
        return Sample(
            id=rec.id,
            benchmark=self.name,
            question_id=rec.id,
            question=rec.question,
            images=[image],
            answers=answers,
            choices=choices_from_options(rec.options),
            label=rec.label,
            source=self.source,
            entity_id=rec.entity_id,
            metadata=meta,
        )

    def samples(self) -> list[Sample]:
        if self._samples is None:
            records: list[tuple[int, KnowHalRecord]] = []
            seen: dict[str, int] = {}
            for ln, obj in iter_jsonl(self.path):
                rec = parse_record(KnowHalRecord, obj, path=self.path, line=ln)
                if rec.id in seen:
                    raise InputError(
                        f"duplicate id '{rec.id}' (first on line {seen[rec.id]})", path=self.path, line=ln, field="id"
                    )
                seen[rec.id] = ln
                records.append((ln, rec))
            if not records:
                raise InputError("no questions in this file", path=self.path)
            if self.check_pairs:
                _check_pairs(records, self.path)
            self._samples = [self._to_sample(r, ln) for ln, r in records]
        return self._samples

    def documents(self) -> list:
        return []  # KnowHal is a no-context benchmark

    def fingerprint(self) -> str:
        return fingerprint_files([self.path], extra=f"knowhal:{self.name}")


@BENCHMARKS.register("knowhal")
def knowhal_benchmark(source: str | None = None, **options: Any) -> KnowHalBenchmark:
    """``knowhal`` benchmark: ``source`` = a JSONL file of KnowHalRecord lines (docs/formats.md)."""
    if source is None:
        raise InputError(
            "the 'knowhal' benchmark needs a source: a JSONL file in the KnowHal format of "
            "docs/formats.md (KnowHal's own data is not public yet)"
        )
    return KnowHalBenchmark(source, **take_options("knowhal", options, {"name": "knowhal", "check_pairs": True}))
