"""Bring your own dataset: a Hugging Face ``datasets`` table as a benchmark, by a field mapping.

This is inspect_ai's ``hf_dataset`` + ``record_to_sample`` pattern with mmrag's validation: name
which column holds each field and every row becomes a :class:`~mmrag.schema.Sample`.  Three
spellings, one loader::

    mmrag run --benchmark hf:./my_dataset --field question=q,answer=a,image=img
    benchmarks: [{name: "hf:./my_dataset", options: {fields: {question: q, answer: a, image: img}}}]
    mmrag.benchmarks.from_hf(dataset, {"question": "q", "answer": "a", "image": "img"})

The source is a ``datasets.Dataset`` (or ``DatasetDict``, with ``split``), a folder written by
``save_to_disk``, a local data folder ``datasets.load_dataset`` reads (parquet, CSV, JSON,
imagefolder), or a hub id already in the Hugging Face cache (nothing is downloaded when
``HF_DATASETS_OFFLINE=1``).

Fields (:data:`FIELDS`; a field left out of the mapping is read from the column of its own name
when there is one): ``question`` (required), ``answer`` (a string or a list of accepted answers;
required unless ``choices`` and ``label`` are given), ``image`` (an ``Image`` column, a path, or a
list of either), ``id``, ``question_id``, ``choices`` (a list of option texts, lettered A, B, ...),
``label`` (the right option: a letter or a 0-based index), ``context`` (gold evidence text, a
string or a list; it becomes the knowledge base, so oracle, realistic and adversarial scenarios
can run; without it only ``parametric`` has anything to show) and ``source`` (a tag that picks the
judge's answer rule, default ``hf``).

Errors are :class:`~mmrag.errors.InputError` naming the dataset, the row (as ``line``) and the field:
a mapped column that does not exist, an empty question, a label that names no option, an image
that does not decode, a duplicate id.  The family is VLM-DeflectionBench's (open answers judged
correct / deflection / hallucination).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mmrag.benchmarks._loading import cache_image_bytes, check_image_bytes, resolve_image, take_options
from mmrag.benchmarks.base import BENCHMARKS
from mmrag.errors import InputError
from mmrag.schema import Choice, Document, ImageRef, Sample, is_nota_text

PREFIX = "hf:"
FIELDS = ("question", "answer", "image", "id", "question_id", "choices", "label", "context", "source")
REQUIRED = ("question",)
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parse_fields(text: str | Mapping[str, str] | None, where: str = "--field") -> dict[str, str]:
    """``question=q,answer=a`` (or a mapping) to ``{field: column}``; unknown fields are errors."""
    if text is None:
        return {}
    if isinstance(text, Mapping):
        pairs = list(text.items())
    else:
        pairs = []
        for piece in str(text).split(","):
            if not piece.strip():
                continue
            field, sep, column = piece.partition("=")
            if not sep or not field.strip() or not column.strip():
                raise InputError(f"'{piece.strip()}' is not FIELD=COLUMN (e.g. question=q,answer=a)", field=where)
            pairs.append((field.strip(), column.strip()))
    out: dict[str, str] = {}
    for field, column in pairs:
        if field not in FIELDS:
            raise InputError(f"unknown field '{field}'; known: {', '.join(FIELDS)}", field=where)
        if not isinstance(column, str) or not column:
            raise InputError(f"the column of '{field}' must be a column name, got {column!r}", field=f"{where}.{field}")
        if field in out and out[field] != column:
            raise InputError(f"field '{field}' is mapped twice ({out[field]!r} and {column!r})", field=where)
        out[field] = column
    return out


def _open(source: str, split: str | None) -> tuple[Any, Path | None]:
    """``(Dataset, folder for relative image paths)`` of a saved folder, a local data folder or a
    cached hub id; any failure is one InputError naming the source."""
    import datasets

    path = Path(source).expanduser()
    try:
        if path.is_dir() and any((path / f).is_file() for f in ("state.json", "dataset_dict.json")):
            ds, base = datasets.load_from_disk(str(path)), path
        elif path.exists():
            ds, base = datasets.load_dataset(str(path), split=split), path if path.is_dir() else path.parent
        else:
            ds, base = datasets.load_dataset(source, split=split), None
    except InputError:
        raise
    except Exception as exc:
        first = str(exc).splitlines()[0][:300] if str(exc) else ""
        hint = (
            ""
            if path.exists()
            else (
                " (not a local folder; as a hub id it must already be in the Hugging Face "
                "cache: fetch it once while online)"
            )
        )
        raise InputError(f"cannot load this dataset ({type(exc).__name__}: {first}){hint}", path=source) from None
    return ds, base


def _pick_split(ds: Any, split: str | None, where: str) -> Any:
    import datasets

    if isinstance(ds, (datasets.DatasetDict, dict)):
        names = sorted(ds)
        if split is None:
            if len(names) != 1:
                raise InputError(
                    f"the dataset has splits {', '.join(names)}: choose one with the split option "
                    "(options: {split: NAME})",
                    path=where,
                    field="split",
                )
            split = names[0]
        if split not in ds:
            raise InputError(f"no split '{split}'; the dataset has {', '.join(names)}", path=where, field="split")
        return ds[split]
    if not isinstance(ds, datasets.Dataset):
        raise InputError(f"expected a datasets.Dataset or DatasetDict, got {type(ds).__name__}", path=where)
    if split is not None and ds.split is not None and str(ds.split) != split:
        raise InputError(f"this dataset is the '{ds.split}' split, not '{split}'", path=where, field="split")
    return ds


class HFBenchmark:
    """Samples (and, with a ``context`` column, a knowledge base) from a ``datasets.Dataset``."""

    kind = "deflection"

    def __init__(
        self,
        dataset: Any,
        fields: Mapping[str, str] | str | None = None,
        *,
        name: str = "hf",
        where: str = "dataset",
        base: Path | None = None,
        source: str = "hf",
    ) -> None:
        import datasets

        self.name, self.where, self.base, self.source = name, where, base, source
        self.ds = dataset
        columns = list(dataset.column_names)
        mapping = parse_fields(fields, where="fields")
        for field, column in mapping.items():
            if column not in columns:
                raise InputError(
                    f"the dataset has no column '{column}' (mapped to '{field}'); its columns: {', '.join(columns)}",
                    path=where,
                    field=f"fields.{field}",
                )
        for field in FIELDS:  # a field not mapped is read from the column of its own name, if any
            if field not in mapping and field in columns:
                mapping[field] = field
        for field in REQUIRED:
            if field not in mapping:
                raise InputError(
                    f"no column for '{field}': map one, e.g. --field {field}=COLUMN (columns: {', '.join(columns)})",
                    path=where,
                    field=f"fields.{field}",
                )
        if "answer" not in mapping and not {"choices", "label"} <= set(mapping):
            raise InputError(
                "no column for 'answer' (or 'choices' and 'label'): map one, e.g. --field "
                f"answer=COLUMN (columns: {', '.join(columns)})",
                path=where,
                field="fields.answer",
            )
        self.fields = mapping
        if "image" in mapping:  # image bytes and paths as stored, never decoded pixels in memory
            feature = dataset.features[mapping["image"]]
            inner = getattr(feature, "feature", None)
            if isinstance(feature, datasets.Image):
                self.ds = dataset.cast_column(mapping["image"], datasets.Image(decode=False))
            elif isinstance(inner, datasets.Image) or (
                isinstance(feature, list) and feature and isinstance(feature[0], datasets.Image)
            ):
                self.ds = dataset.cast_column(
                    mapping["image"],
                    type(feature)(datasets.Image(decode=False))
                    if inner is not None
                    else [datasets.Image(decode=False)],
                )
        self._samples: list[Sample] | None = None
        self._docs: list[Document] = []

    # -- rows ------------------------------------------------------------------------------------
    def _err(self, msg: str, row: int, field: str) -> InputError:
        return InputError(f"{msg} (row {row})", path=self.where, line=row, field=self.fields.get(field, field))

    def _text(self, rec: dict, field: str, row: int, required: bool = False) -> str | None:
        if field not in self.fields:
            return None
        v = rec.get(self.fields[field])
        if v is None or (isinstance(v, str) and not v.strip()):
            if required:
                raise self._err(f"'{field}' is empty", row, field)
            return None
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise self._err(f"'{field}' must be text, got {type(v).__name__}", row, field)
        return str(v).strip()

    def _list(self, rec: dict, field: str, row: int) -> list[str]:
        if field not in self.fields:
            return []
        v = rec.get(self.fields[field])
        items = v if isinstance(v, (list, tuple)) else [] if v is None else [v]
        out = []
        for i, x in enumerate(items):
            if isinstance(x, bool) or not isinstance(x, (str, int, float)) or not str(x).strip():
                raise self._err(f"'{field}' item {i} must be non-empty text, got {x!r}", row, field)
            out.append(str(x).strip())
        return out

    def _image(self, value: Any, row: int, rid: str) -> ImageRef:
        column = self.fields["image"]
        if isinstance(value, dict) and value.get("bytes"):
            check_image_bytes(value["bytes"], file=self.where, line=row, field=column, record=rid)
            return cache_image_bytes(value["bytes"], value.get("path"))
        path = value.get("path") if isinstance(value, dict) else value
        if isinstance(path, str) and path:
            return resolve_image(path, self.base or Path.cwd(), file=self.where, line=row, field=column, record=rid)
        raise self._err(f"the image is neither bytes nor a path: {type(value).__name__}", row, "image")

    def _images(self, rec: dict, row: int, rid: str) -> list[ImageRef]:
        if "image" not in self.fields:
            return []
        v = rec.get(self.fields["image"])
        items = v if isinstance(v, (list, tuple)) else [] if v is None else [v]
        return [self._image(x, row, rid) for x in items]

    def _choices(self, rec: dict, row: int) -> tuple[list[Choice], str | None]:
        options = self._list(rec, "choices", row)
        if not options:
            return [], None
        if len(options) > len(LETTERS):
            raise self._err(f"{len(options)} options; at most {len(LETTERS)}", row, "choices")
        choices = [Choice(letter=LETTERS[i], text=t, is_nota=is_nota_text(t)) for i, t in enumerate(options)]
        raw = rec.get(self.fields["label"]) if "label" in self.fields else None
        if raw is None:
            return choices, None
        if isinstance(raw, int) and not isinstance(raw, bool):
            label = LETTERS[raw] if 0 <= raw < len(choices) else None
        else:
            s = str(raw).strip()
            label = (
                s.upper()
                if len(s) == 1 and s.upper() in LETTERS[: len(choices)]
                else (LETTERS[options.index(s)] if s in options else None)
            )
        if label is None:
            raise self._err(f"label {raw!r} names none of the {len(choices)} options", row, "label")
        return choices, label

    def _sample(self, rec: dict, row: int, seen: dict[str, int]) -> Sample:
        rid = self._text(rec, "id", row) or f"row{row - 1}"
        if rid in seen:
            raise self._err(f"duplicate id '{rid}' (first on row {seen[rid]})", row, "id")
        seen[rid] = row
        question = self._text(rec, "question", row, required=True) or ""
        choices, label = self._choices(rec, row)
        answers = self._list(rec, "answer", row)
        if not answers and label is not None:
            answers = [next(c.text for c in choices if c.letter == label)]
        if not answers:
            raise self._err("'answer' is empty", row, "answer")
        gold = []
        for i, text in enumerate(self._list(rec, "context", row)):
            doc = Document(id=f"{rid}#context{i}", modality="text", text=text, source=self.source)
            self._docs.append(doc)
            gold.append(doc.id)
        meta: dict[str, Any] = {"row": row - 1}
        if gold:
            meta.update(positive_modality="text", gold_modalities=["text"] * len(gold), negative_doc_ids=[])
        return Sample(
            id=rid,
            benchmark=self.name,
            question_id=self._text(rec, "question_id", row) or rid,
            question=question,
            images=self._images(rec, row, rid),
            answers=list(dict.fromkeys(answers)),
            choices=choices,
            label=label,
            gold_doc_ids=gold,
            source=self._text(rec, "source", row) or self.source,
            metadata=meta,
        )

    def samples(self) -> list[Sample]:
        if self._samples is None:
            self._docs = []
            seen: dict[str, int] = {}
            wanted = sorted(set(self.fields.values()))
            out = [self._sample(rec, i + 1, seen) for i, rec in enumerate(_rows(self.ds.select_columns(wanted)))]
            if not out:
                raise InputError(
                    "the dataset has no rows (an empty benchmark would be a 'complete' run of 0 records)",
                    path=self.where,
                )
            self._samples = out
        return self._samples

    def documents(self) -> list[Document]:
        self.samples()
        return self._docs

    def fingerprint(self) -> str:
        """datasets' own content fingerprint of the table, plus the mapping and the name."""
        h = hashlib.sha256(f"hf:{self.name}:{sorted(self.fields.items())}:{self.source}".encode())
        h.update(str(getattr(self.ds, "_fingerprint", "")).encode())
        return h.hexdigest()


def _rows(ds: Any) -> Iterable[dict]:
    for batch in ds.iter(batch_size=256):
        keys = list(batch)
        for i in range(len(batch[keys[0]]) if keys else 0):
            yield {k: batch[k][i] for k in keys}


def from_hf(
    dataset: Any,
    mapping: Mapping[str, str] | str | None = None,
    *,
    split: str | None = None,
    name: str | None = None,
    source: str = "hf",
    register: bool = True,
) -> HFBenchmark:
    """A benchmark from a ``datasets.Dataset`` / ``DatasetDict``, a saved folder or a cached hub id.

    ``mapping``: ``{field: column}`` (or ``"question=q,answer=a"``); see the module docstring.  An
    in-memory dataset is also registered under ``name`` (default ``hf-memory``) for this process,
    so a RunConfig can name it: ``RunConfig(benchmarks=[{"name": "mine"}], ...)``.  Only a dataset
    on disk (``save_to_disk`` + ``hf:PATH``) can be resumed from its run directory later."""
    if isinstance(dataset, (str, Path)):
        where = str(dataset)
        ds, base = _open(where, split)
        bench = HFBenchmark(
            _pick_split(ds, split, where),
            mapping,
            name=name or f"{PREFIX}{where}",
            where=where,
            base=base,
            source=source,
        )
        return bench
    label = name or "hf-memory"
    bench = HFBenchmark(_pick_split(dataset, split, label), mapping, name=label, where=label, source=source)
    if register:
        BENCHMARKS.register(label, lambda src=None, **opts: bench)
    return bench


@BENCHMARKS.register("hf")
def hf_benchmark(source: str | None = None, **options: Any) -> HFBenchmark:
    """``hf`` benchmark (also ``hf:PATH_OR_ID``): ``source`` = a saved dataset folder, a local data
    folder or a cached hub id; options ``fields`` (``{field: column}`` or ``"f=c,..."``), ``split``,
    ``name``, ``source_tag``."""
    if not source:
        raise InputError(
            "the 'hf' benchmark needs a dataset: --benchmark hf:PATH_OR_ID (a save_to_disk folder, a "
            "data folder, or a hub id in the Hugging Face cache)",
            field="--benchmark",
        )
    options = dict(options)
    fields = options.pop("fields", None)
    opts = take_options("hf", options, {"split": None, "name": None, "source_tag": "hf"})
    if fields is not None and not isinstance(fields, (str, Mapping)):
        raise InputError("option 'fields' must map field names to columns", field="options.fields")
    return from_hf(source, fields, split=opts["split"], name=opts["name"], source=opts["source_tag"], register=False)
