"""Rendering: from question, images and evidence to chat messages with interleaved parts.

Layout of the user message (one message; a system message first when the template has one):

1. the query image(s), as image parts;
2. the evidence, when there is any: the template's header line, then each document numbered in the
   order shown — a text passage as ``[1] Title: text``, an image as ``[2] Title`` + the image part, an
   image-with-caption document as ``[3] Title`` + the image part + the caption;
3. the question block and the instruction.

Adjacent text is merged into one text part, so a text-only prompt is a single part.  The model
layer turns these messages into OpenAI-style content or a processor's chat template.
"""

from __future__ import annotations

from mmrag.errors import InputError
from mmrag.schema import ContentPart, Context, Document, ImageRef, Message


class PartsBuilder:
    """Accumulates content parts, merging consecutive text with a separator."""

    def __init__(self) -> None:
        self.parts: list[ContentPart] = []

    def text(self, s: str, sep: str = "\n") -> None:
        if not s:
            return
        if self.parts and self.parts[-1].type == "text":
            last = self.parts[-1]
            self.parts[-1] = ContentPart(type="text", text=f"{last.text}{sep}{s}")
        else:
            self.parts.append(ContentPart(type="text", text=s))

    def image(self, ref: ImageRef) -> None:
        # a fresh ImageRef: computing the prompt's content hash caches it on the ref, and that must
        # not write into the sample's (or the knowledge base's) objects
        self.parts.append(ContentPart(type="image", image=ImageRef(path=ref.path, sha256=ref.sha256)))


def _doc_image(doc: Document) -> ImageRef:
    if doc.image is None:
        raise InputError(f"document '{doc.id}' has modality '{doc.modality}' but no image", field="image")
    return doc.image


def render_evidence(b: PartsBuilder, header: str, contexts: list[Context]) -> None:
    """Number every document 1..n in display order, whatever its modality."""
    if not contexts:
        return
    b.text(header, sep="\n\n")
    for i, ctx in enumerate(contexts, start=1):
        doc = ctx.document
        label = f"[{i}]" + (f" {doc.title}" if doc.title else "")
        if doc.modality == "text":
            b.text(f"[{i}] {doc.title}: {doc.text}" if doc.title else f"[{i}] {doc.text}")
        elif doc.modality == "image":
            b.text(label)
            b.image(_doc_image(doc))
        else:  # multimodal: image + caption
            b.text(label)
            b.image(_doc_image(doc))
            b.text(doc.text)


def build_messages(
    *,
    system: str | None,
    query_images: list[ImageRef],
    body: str,
    evidence_header: str = "",
    contexts: list[Context] | None = None,
) -> list[Message]:
    b = PartsBuilder()
    for ref in query_images:
        b.image(ref)
    render_evidence(b, evidence_header, contexts or [])
    b.text(body, sep="\n\n")
    messages = []
    if system:
        messages.append(Message(role="system", content=[ContentPart(type="text", text=system)]))
    messages.append(Message(role="user", content=b.parts))
    return messages
