"""On-disk record formats for the benchmarks whose data is not public yet.

VLM-DeflectionBench and KnowHal have no released files, so mmrag defines JSONL formats that mirror
the papers (documented in docs/formats.md).  The demo world writes them, the source builders
(InfoSeek, E-VQA, WebQA, ViQuAE, MRAG-Bench, MMDocRAG) produce them, and ``mmrag benchmark validate``
checks them line by line.  Image paths are relative to the JSONL file's folder unless absolute.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mmrag.schema import Document, DocumentFields, ImageRef, Modality

DeflectionSource = Literal["infoseek", "evqa", "webqa", "viquae", "mragbench", "mmdocrag", "demo"]
DEFLECTION_SOURCES: tuple[DeflectionSource, ...] = get_args(DeflectionSource)


class _Rec(BaseModel):
    #: NaN/Infinity (also as the strings "nan", "inf") are refused: written back they become null
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class KBRecord(DocumentFields):
    """One knowledge-base document (``kb.jsonl``): text passage, image, or image + caption.  The
    fields and the content rule are :class:`~mmrag.schema.DocumentFields`' (shared with
    :class:`~mmrag.schema.Document`); on disk the image is a path relative to the file."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    image: str | None = None

    @model_validator(mode="after")
    def _check(self) -> KBRecord:
        problem = self.content_problem()
        if problem:
            raise ValueError(problem)
        return self

    def to_document(self, image: ImageRef | None) -> Document:
        """The in-memory Document, with the image already resolved by the caller."""
        return Document(**self.model_dump(exclude={"image"}), image=image)


class GoldContext(_Rec):
    doc_id: str = Field(min_length=1)
    modality: Modality


class DeflectionRecord(_Rec):
    """One VLM-DeflectionBench sample.  Several samples may share ``question_id`` (the paper's
    2,775 samples come from 1,246 questions), e.g. one per query image."""

    sample_id: str = Field(min_length=1)
    question_id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    query_images: list[str] = Field(default_factory=list)
    answer: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    numeric_ranges: list[tuple[float, float]] = Field(default_factory=list)
    gold_contexts: list[GoldContext] = Field(min_length=1)
    negative_doc_ids: list[str] = Field(default_factory=list)
    source: DeflectionSource
    question_type: str | None = None
    entity_id: str | None = None
    options: dict[str, str] | None = None
    label: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> DeflectionRecord:
        if self.options is not None and (self.label is None or self.label not in self.options):
            raise ValueError("'label' must name one of 'options' for a multiple-choice record")
        for lo, hi in self.numeric_ranges:
            if lo > hi:
                raise ValueError(f"numeric range [{lo}, {hi}] has lo > hi")
        return self


Dimension = Literal["E", "A", "R", "K"]
DIMENSION_NAMES = {"E": "Entity", "A": "Attribute", "R": "Relation", "K": "Knowledge"}


class KnowHalRecord(_Rec):
    """One KnowHal question.  A pair shares ``pair_id``: one ``positive`` question about a true fact
    and one ``negative`` (false-premise) question.  Relation (R) questions are multiple choice
    (``options`` + ``label``); the others are open-ended with ``answers`` (positives) — a negative's
    ``answers`` may hold reference rejections, and ``false_premise`` states what is false."""

    id: str = Field(min_length=1)
    pair_id: str = Field(min_length=1)
    entity_id: str = Field(min_length=1)
    image: str = Field(min_length=1)
    domain: str = ""
    category: str = ""
    dimension: Dimension
    polarity: Literal["positive", "negative"]
    question: str = Field(min_length=1)
    answers: list[str] = Field(default_factory=list)
    options: dict[str, str] | None = None
    label: str | None = None
    false_premise: str | None = None
    strategy: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> KnowHalRecord:
        if self.polarity == "positive":
            if self.dimension == "R":
                if not self.options or self.label not in (self.options or {}):
                    raise ValueError("a positive Relation question needs 'options' and a 'label' among them")
            elif not self.answers:
                raise ValueError("a positive open question needs at least one entry in 'answers'")
        elif not self.false_premise:
            raise ValueError("a negative (false-premise) question needs 'false_premise'")
        return self


class HumbleBenchRecord(_Rec):
    """HumbleBench as published (``metadata.jsonl`` of the HF imagefolder, or the JSONL the official
    code writes): the options live inside ``question``, one line each after the stem."""

    question_id: int
    question: str = Field(min_length=1)
    label: Literal["A", "B", "C", "D", "E"]
    type: Literal["Object", "Relation", "Attribute"]
    file_name: str | None = None
    image: Any = None
    prediction: str | None = None
