"""VLM-DeflectionBench in mmrag's JSONL format (docs/formats.md): samples plus a knowledge base.

The paper's data is not public; :class:`~mmrag.benchmarks.formats.DeflectionRecord` mirrors it
(several samples per question, query images, answers with aliases, gold contexts with modality,
source dataset).  The knowledge base is the ``kb=`` option, else ``FILE.kb.jsonl`` beside ``FILE.jsonl`` (what
``mmrag benchmark build-deflection`` writes), else ``kb.jsonl`` in the same folder (the demo world).

``positive_modality`` (text | image | multimodal, the axis of the paper's Table 5) is derived from
the gold contexts' modalities: all text -> text, all image -> image, anything else -> multimodal.
Loading checks every gold doc id against the knowledge base when there is one, so a broken
reference fails at load time with file, line and field instead of silently becoming an
unanswerable "oracle" prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mmrag.benchmarks._loading import choices_from_options, fingerprint_files, resolve_image, take_options
from mmrag.benchmarks.base import BENCHMARKS
from mmrag.benchmarks.formats import DeflectionRecord, KBRecord
from mmrag.errors import InputError
from mmrag.schema import Document, Sample
from mmrag.util import iter_jsonl, parse_record


def positive_modality(modalities: Iterable[str]) -> str:
    kinds = set(modalities)
    if kinds == {"text"}:
        return "text"
    if kinds == {"image"}:
        return "image"
    return "multimodal"


def default_kb_path(samples: Path) -> Path | None:
    """The knowledge base beside a samples file: ``FILE.kb.jsonl`` (what the source builders
    write), else ``kb.jsonl`` in the same folder (the demo world's layout), else none."""
    stem = samples.name[: -len(".jsonl")] if samples.name.endswith(".jsonl") else samples.stem
    for cand in (samples.with_name(f"{stem}.kb.jsonl"), samples.parent / "kb.jsonl"):
        if cand.is_file() and cand != samples:
            return cand
    return None


def load_kb(path: Path) -> list[Document]:
    """Read a ``kb.jsonl`` into Documents; duplicate ids and missing images are InputErrors."""
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for ln, obj in iter_jsonl(path):
        rec = parse_record(KBRecord, obj, path=path, line=ln)
        if rec.id in seen:
            raise InputError(
                f"duplicate document id '{rec.id}' (first on line {seen[rec.id]})", path=path, line=ln, field="id"
            )
        seen[rec.id] = ln
        image = (
            resolve_image(rec.image, path.parent, file=path, line=ln, field="image", record=rec.id)
            if rec.image
            else None
        )
        docs.append(rec.to_document(image))
    return docs


class DeflectionBenchmark:
    """Samples from a DeflectionBench JSONL file and documents from its knowledge base.

    ``name`` becomes ``Sample.benchmark`` (the demo world loads through this class as "demo")."""

    kind = "deflection"

    def __init__(
        self, path: str | Path, kb: str | Path | None = None, *, name: str = "deflection", check_gold: bool = True
    ) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError("DeflectionBench samples file not found", path=self.path)
        self.kb_path = Path(kb) if kb is not None else default_kb_path(self.path)
        if self.kb_path is not None and not self.kb_path.is_file():
            raise InputError("knowledge-base file not found", path=self.kb_path)
        self.name = name
        self.check_gold = check_gold
        self._samples: list[Sample] | None = None
        self._docs: list[Document] | None = None

    def documents(self) -> list[Document]:
        if self._docs is None:
            self._docs = load_kb(self.kb_path) if self.kb_path else []
        return self._docs

    def _to_sample(self, rec: DeflectionRecord, ln: int) -> Sample:
        images = [
            resolve_image(p, self.path.parent, file=self.path, line=ln, field=f"query_images.{i}", record=rec.sample_id)
            for i, p in enumerate(rec.query_images)
        ]
        answers = list(dict.fromkeys([rec.answer, *rec.aliases]))
        gold_mods = [g.modality for g in rec.gold_contexts]
        meta: dict[str, Any] = {
            **rec.metadata,
            "positive_modality": positive_modality(gold_mods),
            "gold_modalities": gold_mods,
            "negative_doc_ids": list(rec.negative_doc_ids),
        }
        if rec.question_type is not None:
            meta["question_type"] = rec.question_type
        return Sample(
            id=rec.sample_id,
            benchmark=self.name,
            question_id=rec.question_id,
            question=rec.question,
            images=images,
            answers=answers,
            numeric_ranges=[(lo, hi) for lo, hi in rec.numeric_ranges],
            choices=choices_from_options(rec.options),
            label=rec.label,
            gold_doc_ids=[g.doc_id for g in rec.gold_contexts],
            source=rec.source,
            entity_id=rec.entity_id,
            metadata=meta,
        )

    def samples(self) -> list[Sample]:
        if self._samples is None:
            known = {d.id for d in self.documents()} if (self.check_gold and self.kb_path) else None
            out: list[Sample] = []
            seen: dict[str, int] = {}
            for ln, obj in iter_jsonl(self.path):
                rec = parse_record(DeflectionRecord, obj, path=self.path, line=ln)
                if rec.sample_id in seen:
                    raise InputError(
                        f"duplicate sample_id '{rec.sample_id}' (first on line {seen[rec.sample_id]})",
                        path=self.path,
                        line=ln,
                        field="sample_id",
                    )
                seen[rec.sample_id] = ln
                if known is not None:
                    for i, g in enumerate(rec.gold_contexts):
                        if g.doc_id not in known:
                            raise InputError(
                                f"gold document '{g.doc_id}' is not in {self.kb_path}",
                                path=self.path,
                                line=ln,
                                field=f"gold_contexts.{i}.doc_id",
                            )
                out.append(self._to_sample(rec, ln))
            if not out:
                raise InputError(
                    "no samples in this file (an empty benchmark would be a 'complete' run of 0 records)",
                    path=self.path,
                )
            self._samples = out
        return self._samples

    def fingerprint(self) -> str:
        files = [self.path] + ([self.kb_path] if self.kb_path else [])
        return fingerprint_files(files, extra=f"deflection:{self.name}")


@BENCHMARKS.register("deflection")
def deflection_benchmark(source: str | None = None, **options: Any) -> DeflectionBenchmark:
    """``deflection`` benchmark: ``source`` = a DeflectionBench JSONL file; option ``kb`` = its
    knowledge base (default: :func:`default_kb_path`)."""
    if source is None:
        raise InputError(
            "the 'deflection' benchmark needs a source: a DeflectionBench JSONL file "
            "(see docs/formats.md), e.g. one written by `mmrag benchmark build-deflection`"
        )
    opts = take_options("deflection", options, {"kb": None, "name": "deflection", "check_gold": True})
    return DeflectionBenchmark(source, **opts)
