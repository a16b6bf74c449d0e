"""The index manifest (``manifest.json``) and the knowledge-base content hash.

A manifest says what an index *is* — encoder fingerprint and spec, kind, FAISS factory string and
parameters, the content hash of the knowledge base it was built from, count, dimension, and the
size + sha256 of every file — so that :func:`mmrag.indices.load_index` can refuse a mismatched
encoder, a changed knowledge base, or a truncated / corrupt file with one clear message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mmrag.errors import InputError
from mmrag.schema import Document, canonical_json, sha256_file

IndexKind = Literal["text", "visual", "multimodal"]
INDEX_KINDS: tuple[IndexKind, ...] = ("text", "visual", "multimodal")
FORMAT_VERSION = 1
_MOD = 1 << 256


def index_kind(kind: str) -> IndexKind:
    """``kind`` as an :data:`IndexKind`, or an InputError on ``kind`` naming the three: checked before
    anything is encoded, not by the manifest after the whole index is built."""
    for known in INDEX_KINDS:
        if kind == known:
            return known
    raise InputError(f"unknown index kind '{kind}' (text | visual | multimodal)", field="kind")


class FileInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    bytes: int
    sha256: str
    count: int = 0


class IndexManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format_version: int = FORMAT_VERSION
    mmrag_version: str
    kind: IndexKind
    encoder_fingerprint: str
    encoder_spec: dict[str, Any] | None = None
    dim: int
    factory: str
    metric: Literal["inner_product"] = "inner_product"
    #: build and search parameters (search ones, e.g. efSearch / nprobe, are applied at load)
    params: dict[str, Any] = Field(default_factory=dict)
    search_params: dict[str, Any] = Field(default_factory=dict)
    kb_content_hash: str
    count: int
    shards: list[FileInfo]
    doc_ids: FileInfo
    created_at: str = ""

    @model_validator(mode="after")
    def _shards_hold_the_count(self) -> IndexManifest:
        """An index of N vectors in no shards (or shards that do not add up to N) is damaged, not
        empty: refused at load rather than answering every query with nothing."""
        held = sum(s.count for s in self.shards)
        if self.count < 1 or not self.shards or held != self.count:
            raise ValueError(f"manifest claims {self.count} vectors in {len(self.shards)} shard(s) holding {held}")
        return self

    @property
    def fingerprint(self) -> str:
        """What a retriever over this index answers from (cache keys use it)."""
        return hashlib.sha256(
            canonical_json(
                [
                    self.kind,
                    self.encoder_fingerprint,
                    self.factory,
                    self.search_params,
                    self.kb_content_hash,
                    self.count,
                    [s.sha256 for s in self.shards],
                ]
            ).encode()
        ).hexdigest()[:16]


def document_hash(doc: Document) -> str:
    """Content hash of one document.  An image counts by its sha256 when the record carries one,
    else by its path (hashing every image of a 6 M-entity KB on each build would cost more than the
    build; give ``ImageRef.sha256`` to make the KB hash catch edited image files)."""
    d = doc.model_dump(mode="json")
    if doc.image is not None:
        d["image"] = {"sha256": doc.image.sha256} if doc.image.sha256 else {"path": doc.image.path}
    return hashlib.sha256(canonical_json(d).encode()).hexdigest()


class KBHasher:
    """Order-independent multiset hash of a knowledge base, in O(1) memory: the sum modulo 2^256 of
    the documents' hashes.  Reordering kb.jsonl keeps the hash; adding, dropping or editing any
    document changes it."""

    def __init__(self) -> None:
        self._acc = 0
        self.count = 0

    def add(self, doc: Document) -> None:
        self._acc = (self._acc + int(document_hash(doc), 16)) % _MOD
        self.count += 1

    def merge(self, other: KBHasher) -> None:
        """Add the documents another hasher saw (one per KB block, hashed on Ray workers): the sum
        is order-independent, so merging partial hashers gives the whole KB's hash."""
        self._acc = (self._acc + other._acc) % _MOD
        self.count += other.count

    def hexdigest(self) -> str:
        return hashlib.sha256(f"{self.count}:{self._acc:064x}".encode()).hexdigest()


def kb_content_hash(documents: Iterable[Document]) -> str:
    h = KBHasher()
    for d in documents:
        h.add(d)
    return h.hexdigest()


def file_info(path, count: int = 0) -> FileInfo:
    return FileInfo(file=path.name, bytes=path.stat().st_size, sha256=sha256_file(path), count=count)
