"""The shared data types that flow between mmrag's stages.

Every arrow of the pipeline (Benchmark -> Composer -> Model -> Judge -> Metrics) carries one of
these pydantic v2 objects.  They are serialisable (``model_dump(mode="json")``), carry stable ids
derived from their content, and reference images by path plus content hash so that no object ever
holds a dataset's pixels in memory.  This module imports no other part of mmrag on purpose: it is
the vocabulary every stage shares, and must stay importable from anywhere.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Modality = Literal["text", "image", "multimodal"]
DOCUMENT_MODALITIES: tuple[Modality, ...] = ("text", "image", "multimodal")
Outcome = Literal["correct", "deflection", "hallucination", "unparseable"]
OUTCOMES: tuple[str, ...] = ("correct", "deflection", "hallucination", "unparseable")
#: why a request failed.  ``connection`` (refused, unreachable, dropped before a reply) is kept apart
#: from ``server_error`` (the server answered 5xx): one says nothing was measured, the other that the
#: server broke.  ``deadline``: the request's overall deadline passed (retries included);
#: ``reply_too_large``: the body exceeded the backend's maximum reply size.
ErrorClass = Literal[
    "timeout",
    "rate_limit",
    "server_error",
    "connection",
    "deadline",
    "reply_too_large",
    "bad_response",
    "context_overflow",
    "other",
]
#: finish reasons that mean the text is not a complete answer: recorded, never scored, never cached
INCOMPLETE_FINISH = ("length", "content_filter")
ContextRole = Literal["gold", "negative"]

NOTA_TEXTS: tuple[str, ...] = ("none of the above", "none of above")

#: The phrase the prompt templates ask a model to use when it deflects (VLM-DeflectionBench's
#: "Sorry, I cannot answer..."); the always-deflect baseline says it and the deflection detector
#: recognises it among its other refusal patterns.
DEFLECTION_PHRASE = "Sorry, I cannot answer this question based on the available information."


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Content hash of a file, streamed so large images never sit whole in memory twice."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def canonical_json(obj: Any) -> str:
    """Key-sorted, whitespace-free JSON: the form every content hash in mmrag is taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def stable_id(*parts: Any, length: int = 16) -> str:
    return hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()[:length]


def as_modality(value: object) -> Modality | None:
    """``value`` when it names a modality, else None: metadata from a foreign store may carry anything."""
    for known in DOCUMENT_MODALITIES:
        if value == known:
            return known
    return None


def is_nota_text(text: str) -> bool:
    """HumbleBench writes NOTA as "None of the above" or "None of above"; match either by text."""
    t = " ".join(text.strip().lower().rstrip(".").split())
    return t in NOTA_TEXTS


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class ImageRef(_Model):
    """A reference to an image on disk.  Pixels are loaded lazily with :meth:`load`.

    ``sha256`` is the content hash; caches key on it (never on the path) so that moving a dataset
    does not invalidate cached model responses, and a changed file cannot hit a stale entry.
    """

    path: str
    sha256: str | None = None

    def load(self):  # -> PIL.Image.Image
        from PIL import Image

        with Image.open(self.path) as im:
            im.load()
            return im.convert("RGB") if im.mode not in ("RGB", "L") else im.copy()

    def content_hash(self) -> str:
        if self.sha256 is None:
            self.sha256 = sha256_file(self.path)
        return self.sha256


class DocumentFields(_Model):
    """What every knowledge-base entry has, on disk (``kb.jsonl``:
    :class:`~mmrag.benchmarks.formats.KBRecord`, image as a path string) and in memory
    (:class:`Document`, image as an :class:`ImageRef`): one definition of the fields and the rule."""

    id: str
    modality: Modality
    text: str = ""
    title: str = ""
    source: str = ""
    entity_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _nonempty_id(cls, v: str) -> str:
        if not v:
            raise ValueError("document id must be non-empty")
        return v

    def content_problem(self) -> str | None:
        """Why this entry cannot be indexed as its modality (None when it can): image and
        multimodal entries need an image, text and multimodal entries non-empty text."""
        image = getattr(self, "image", None)
        if self.modality in ("image", "multimodal") and not image:
            return f"a {self.modality} document needs 'image'"
        if self.modality in ("text", "multimodal") and not self.text.strip():
            return f"a {self.modality} document needs non-empty 'text'"
        return None


class Document(DocumentFields):
    """One knowledge-base entry: a text passage, an image, or an image with its caption."""

    image: ImageRef | None = None


class Choice(_Model):
    """One option of a multiple-choice question; ``is_nota`` marks "None of the above"."""

    letter: str
    text: str
    is_nota: bool = False


class Sample(_Model):
    """One evaluation item.

    ``question_id`` groups samples that share a question (VLM-DeflectionBench has several samples per
    question; HumbleBench stress settings derive several samples from one record).  Bootstrap
    intervals are clustered on it.  ``answers`` lists every accepted string (first = canonical,
    then aliases); ``numeric_ranges`` carries InfoSeek-style [lo, hi] ranges.  For MCQ, ``choices``
    and ``label`` (the gold letter) are set.
    """

    id: str
    benchmark: str
    question_id: str = ""
    question: str
    images: list[ImageRef] = Field(default_factory=list)
    answers: list[str] = Field(default_factory=list)
    numeric_ranges: list[tuple[float, float]] = Field(default_factory=list)
    choices: list[Choice] = Field(default_factory=list)
    label: str | None = None
    gold_doc_ids: list[str] = Field(default_factory=list)
    source: str = ""
    entity_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def model_post_init(self, __context: Any) -> None:
        if not self.question_id:
            self.question_id = self.id

    @property
    def is_mcq(self) -> bool:
        return bool(self.choices)

    def nota_letter(self) -> str | None:
        for c in self.choices:
            if c.is_nota:
                return c.letter
        return None


class Context(_Model):
    """A document placed in a prompt, with why it is there (gold or negative) and its hit score."""

    document: Document
    role: ContextRole
    score: float | None = None


class ContentPart(_Model):
    type: Literal["text", "image"]
    text: str | None = None
    image: ImageRef | None = None


class Message(_Model):
    role: Literal["system", "user", "assistant"]
    content: list[ContentPart]

    def text(self) -> str:
        return "".join(p.text or "" for p in self.content if p.type == "text")


class Prompt(_Model):
    """Exactly what a model sees, plus the provenance needed to reproduce and judge it.

    ``choices`` / ``label`` are the *effective* options and gold letter after stress transforms
    (NOTA-only removes an option, shuffling relabels): judges read these, not the sample's.
    """

    id: str = ""
    sample_id: str
    messages: list[Message]
    scenario: dict[str, Any] = Field(default_factory=dict)
    scenario_id: str = ""
    template_id: str = ""
    template_version: str = ""
    template_hash: str = ""
    contexts: list[Context] = Field(default_factory=list)
    choices: list[Choice] = Field(default_factory=list)
    label: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def model_post_init(self, __context: Any) -> None:
        if not self.id:
            self.id = stable_id(self.canonical())

    def canonical(self) -> dict[str, Any]:
        """The prompt as a model sees it, with images as content hashes (never paths)."""
        msgs = []
        for m in self.messages:
            parts = []
            for p in m.content:
                if p.type == "image" and p.image is not None:
                    parts.append({"type": "image", "sha256": p.image.content_hash()})
                else:
                    parts.append({"type": "text", "text": p.text or ""})
            msgs.append({"role": m.role, "content": parts})
        return {"messages": msgs}

    def images(self) -> list[ImageRef]:
        return [p.image for m in self.messages for p in m.content if p.type == "image" and p.image]


class Usage(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class Response(_Model):
    """A model's answer to one prompt.  A failed request is data: ``error`` names its class and
    ``text`` is empty; it is never turned into an answer or dropped."""

    prompt_id: str
    text: str = ""
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    error: ErrorClass | None = None
    error_detail: str = ""
    #: the server's ``finish_reason`` when it sent one (``stop``, ``length``, ``content_filter``)
    finish_reason: str | None = None
    cached: bool = False

    @property
    def incomplete(self) -> bool:
        """Cut off (``length``) or withheld (``content_filter``): not an answer to score or cache."""
        return self.finish_reason in INCOMPLETE_FINISH


class Evidence(_Model):
    """What a decided verdict rests on, named so that a reader can check it without the judge.

    ``step`` is the registered scorer that decided; ``span`` (with ``start``/``end`` offsets into
    the reply) is the text it read; ``reference`` is the reference answer, option or rival value it
    matched or conflicted with; ``rule`` says in words what was checked.  An undecided verdict has
    no evidence, only a reason.
    """

    step: str
    span: str = ""
    start: int | None = None
    end: int | None = None
    reference: str | None = None
    rule: str = ""


class Verdict(_Model):
    outcome: Outcome
    extracted: str | None = None
    judge_id: str = ""
    reason: str = ""
    score: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    #: the evidence a decided verdict rests on (None: undecided, failed, or a judge that names none)
    evidence: Evidence | None = None
