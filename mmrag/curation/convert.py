"""Sample/Document -> the DeflectionBench on-disk records, so curated survivors are a benchmark."""

from __future__ import annotations

from mmrag.benchmarks.formats import DEFLECTION_SOURCES, DeflectionRecord, GoldContext, KBRecord
from mmrag.schema import Document, Sample


def sample_to_record(sample: Sample, store, negative_doc_ids: list[str]) -> DeflectionRecord:
    options = {c.letter: c.text for c in sample.choices} or None
    return DeflectionRecord(
        sample_id=sample.id,
        question_id=sample.question_id,
        question=sample.question,
        query_images=[img.path for img in sample.images],
        answer=sample.answers[0] if sample.answers else sample.label or "",
        aliases=list(sample.answers[1:]),
        numeric_ranges=list(sample.numeric_ranges),
        gold_contexts=[GoldContext(doc_id=d, modality=store.get(d).modality) for d in sample.gold_doc_ids],
        negative_doc_ids=list(negative_doc_ids),
        source=next((s for s in DEFLECTION_SOURCES if s == sample.source), "demo"),
        question_type=sample.metadata.get("question_type"),
        entity_id=sample.entity_id,
        options=options,
        label=sample.label if options else None,
        metadata={k: v for k, v in sample.metadata.items() if k != "question_type"},
    )


def document_to_kb(doc: Document) -> KBRecord:
    return KBRecord(
        id=doc.id,
        modality=doc.modality,
        text=doc.text,
        image=doc.image.path if doc.image else None,
        title=doc.title,
        source=doc.source,
        entity_id=doc.entity_id,
        metadata=doc.metadata,
    )
