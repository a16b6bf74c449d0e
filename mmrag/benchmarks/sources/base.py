"""The source-builder protocol, its registry, and the driver that writes a DeflectionBench build.

A *source builder* reads one of VLM-DeflectionBench's six source datasets in its published format
and yields :class:`~mmrag.benchmarks.formats.DeflectionRecord` samples, adding the knowledge-base
documents they need (:class:`~mmrag.benchmarks.formats.KBRecord`) through the
:class:`BuildContext`.  The driver :func:`build_deflection` owns everything around it, once for all
sources:

* output layout — ``FILE.jsonl`` (samples), ``FILE.kb.jsonl`` beside it (documents; the name is
  :func:`kb_path_for`), and ``FILE.images/`` (content-addressed images, referenced by paths
  relative to the folder of ``FILE.jsonl``);
* atomicity — both JSONL files are streamed to temporary files and renamed only when the whole
  build succeeded, and the images a failed build stored are removed again, so a failed build
  leaves no half-written benchmark (and an earlier build at the same path stays intact);
* integrity — every gold and negative doc id of a sample must already be in the KB, sample ids must
  be unique (a repeated one is skipped and counted);
* accounting — :class:`BuildStats` counts records read, samples written and every skip by reason.

Builders register by name in :data:`SOURCES` (third-party ones through the entry-point group
``mmrag.deflection_sources``); nothing dispatches on the name with if/elif.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mmrag.benchmarks.formats import DeflectionRecord, KBRecord
from mmrag.benchmarks.sources.images import BadImage, FolderImages, ImageStore
from mmrag.errors import InputError, pydantic_field, pydantic_message
from mmrag.registry import Registry


class SourceOptions(BaseModel):
    """Per-source knobs (``--option key=value`` on the command line); unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class BuildStats(BaseModel):
    source: str
    records_read: int = 0
    samples_written: int = 0
    kb_docs_written: int = 0
    images_written: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    dropped: dict[str, int] = Field(default_factory=dict)
    #: samples written by a fallback rule worth counting (e.g. ViQuAE gold from the entity's article)
    noted: dict[str, int] = Field(default_factory=dict)
    out: str = ""
    kb_out: str = ""
    images_dir: str = ""


class BuildContext:
    """What a builder sees: its inputs, the image store, and the KB/skip bookkeeping."""

    def __init__(
        self,
        source: str,
        data: Path,
        kb: Path | None,
        images: Path | None,
        limit: int | None,
        store: ImageStore,
        kb_writer: _AtomicJsonl,
    ) -> None:
        self.source = source
        self.data = data
        self.kb = kb
        self.images = images
        self.limit = limit
        self.store = store
        self._kb_writer = kb_writer
        self._doc_ids: set[str] = set()
        self.read = 0
        self.skipped: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.noted: Counter[str] = Counter()
        self._folder: FolderImages | None = None

    # -- inputs -------------------------------------------------------------------------------
    def take(self) -> bool:
        """Count one source record read; False once ``limit`` records have been taken."""
        if self.limit is not None and self.read >= self.limit:
            return False
        self.read += 1
        return True

    def require_kb(self) -> Path:
        if self.kb is None:
            raise InputError(f"source '{self.source}' needs its knowledge base: pass --kb PATH", field="kb")
        if not self.kb.exists():
            raise InputError("knowledge base not found", path=self.kb, field="kb")
        return self.kb

    def image_folder(self) -> FolderImages:
        if self.images is None:
            raise InputError(f"source '{self.source}' needs its images: pass --images DIR", field="images")
        if not self.images.is_dir():
            raise InputError("images folder not found", path=self.images, field="images")
        if self._folder is None:
            self._folder = FolderImages(self.images)
        return self._folder

    def stored_image(self, *relpaths: str) -> tuple[str | None, str]:
        """Find an image in ``--images`` by its exact relative path(s) and store it."""
        return self.store_found(self.image_folder().find(*relpaths))

    def store_found(self, found: Path | None) -> tuple[str | None, str]:
        """Store a found image file: ``(relative path, "")`` or ``(None, reason)`` for the caller
        to count as a skip or a drop."""
        if found is None:
            return None, "image not found"
        try:
            return self.store.put_file(found), ""
        except BadImage:
            return None, "undecodable image"

    # -- outputs ------------------------------------------------------------------------------
    def add_doc(self, doc: KBRecord) -> str:
        """Write a KB document once (later calls with the same id are no-ops); returns its id."""
        if doc.id not in self._doc_ids:
            self._doc_ids.add(doc.id)
            self._kb_writer.write(doc.model_dump(mode="json", exclude_none=True))
        return doc.id

    def has_doc(self, doc_id: str) -> bool:
        return doc_id in self._doc_ids

    @property
    def docs_written(self) -> int:
        return len(self._doc_ids)

    def skip(self, reason: str) -> None:
        """A source record (or one of its samples) produced no sample, for ``reason``."""
        self.skipped[reason] += 1

    def note(self, reason: str) -> None:
        """A sample was written by a fallback rule (counted in ``BuildStats.noted``)."""
        self.noted[reason] += 1

    def drop(self, reason: str) -> None:
        """A sample was written without one of its optional parts (e.g. a negative image)."""
        self.dropped[reason] += 1


class SourceBuilder:
    """Base class of the six builders.  Subclasses set ``name`` and ``Options`` and implement
    :meth:`records`; construction takes the validated options."""

    name: ClassVar[str] = ""
    Options: ClassVar[type[SourceOptions]] = SourceOptions

    def __init__(self, options: SourceOptions | None = None) -> None:
        self.options = options if options is not None else self.Options()

    def records(self, ctx: BuildContext) -> Iterator[DeflectionRecord]:  # pragma: no cover - abstract
        raise NotImplementedError


#: ``SOURCES.get(name) -> type[SourceBuilder]``; third parties register through the entry-point
#: group ``mmrag.deflection_sources``.
SOURCES: Registry[SourceBuilder] = Registry("deflection source", group="mmrag.deflection_sources")


def kb_path_for(out: Path) -> Path:
    """``FILE.jsonl`` -> ``FILE.kb.jsonl`` (the deflection loader looks for it there)."""
    out = Path(out)
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.stem
    return out.with_name(f"{stem}.kb.jsonl")


def images_dir_for(out: Path) -> Path:
    out = Path(out)
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.stem
    return out.with_name(f"{stem}.images")


def parse_options(builder: type[SourceBuilder], options: dict[str, Any] | None) -> SourceOptions:
    try:
        return builder.Options.model_validate(options or {})
    except ValidationError as exc:
        raise InputError(pydantic_message(exc), field=f"option {pydantic_field(exc)}") from None


def build_deflection(
    source: str,
    data: str | Path,
    out: str | Path,
    *,
    kb: str | Path | None = None,
    images: str | Path | None = None,
    limit: int | None = None,
    options: dict[str, Any] | None = None,
) -> BuildStats:
    """Build ``out`` (+ ``<stem>.kb.jsonl`` and ``<stem>.images/``) from one source dataset.

    ``limit`` caps the number of *source records* read (an E-VQA question with five images still
    yields five samples).  Raises :class:`InputError` for bad input, and also when records were
    read but every one was skipped (almost always a wrong ``--images`` or ``--kb``); in both cases
    nothing is written."""
    builder_cls = cast("type[SourceBuilder]", SOURCES.get(source))  # sources register their classes
    builder = builder_cls(parse_options(builder_cls, options))
    data, out = Path(data), Path(out)
    if not data.exists():
        raise InputError("data file not found", path=data, field="data")
    if limit is not None and limit < 1:
        raise InputError("must be at least 1", field="limit")
    kb_out, img_dir = kb_path_for(out), images_dir_for(out)
    store = ImageStore(img_dir, out.parent)
    kb_writer, sample_writer = _AtomicJsonl(kb_out), _AtomicJsonl(out)
    ctx = BuildContext(
        source, data, Path(kb) if kb else None, Path(images) if images else None, limit, store, kb_writer
    )
    written = 0
    sample_ids: set[str] = set()
    try:
        for rec in builder.records(ctx):
            if rec.sample_id in sample_ids:
                ctx.skip("duplicate sample_id")
                continue
            missing = [g.doc_id for g in rec.gold_contexts if not ctx.has_doc(g.doc_id)]
            missing += [d for d in rec.negative_doc_ids if not ctx.has_doc(d)]
            if missing:
                raise RuntimeError(f"builder '{source}' emitted {rec.sample_id} before its documents {missing}")
            sample_ids.add(rec.sample_id)
            sample_writer.write(rec.model_dump(mode="json", exclude_none=True))
            written += 1
        if ctx.read and not written:
            reasons = ", ".join(f"{r}: {n}" for r, n in ctx.skipped.most_common()) or "none"
            raise InputError(f"no sample could be built from {ctx.read} records (skipped: {reasons})", path=data)
        kb_writer.commit()
        sample_writer.commit()
    except BaseException:
        kb_writer.abort()
        sample_writer.abort()
        store.rollback()
        raise
    return BuildStats(
        source=source,
        records_read=ctx.read,
        samples_written=written,
        kb_docs_written=ctx.docs_written,
        images_written=store.written,
        skipped=dict(ctx.skipped),
        dropped=dict(ctx.dropped),
        noted=dict(ctx.noted),
        out=str(out),
        kb_out=str(kb_out),
        images_dir=str(img_dir),
    )


class _AtomicJsonl:
    """Stream JSON lines to a temp file beside ``path``; ``commit`` fsyncs and renames it."""

    def __init__(self, path: Path) -> None:
        import json

        self._dumps = lambda obj: json.dumps(obj, ensure_ascii=False)
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        self._fh: IO[str] | None = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, obj: dict[str, Any]) -> None:
        assert self._fh is not None
        self._fh.write(self._dumps(obj) + "\n")

    def commit(self) -> None:
        assert self._fh is not None
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        self._fh = None
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            try:
                os.unlink(self._tmp)
            except FileNotFoundError:
                pass
