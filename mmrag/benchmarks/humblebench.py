"""HumbleBench (arXiv 2509.09658) in its published format, from the hub cache or a local path.

Records carry ``question_id`` (int), ``question`` (the stem, then one line per option), ``label``
(A-E), ``type`` (Object | Relation | Attribute) and an image.  Options are parsed from the question
text, written "A. text" or (in some published items) "A.text"; the "None of the above" option is
found by its text ("None of the above" / "None of above"), never by its letter, so shuffled or
NOTA-only variants stay correct.

Sources, tried in this order for a local path:

* a Hugging Face imagefolder: a folder with ``metadata.jsonl`` (``file_name`` relative to it);
* parquet: a ``.parquet`` file or a folder of them (``image`` as the datasets Image struct
  ``{bytes, path}``), e.g. the ``MM-Hallu/HumbleBench`` mirror;
* JSONL: a ``.jsonl`` file (or a folder with one) whose records name their image by ``file_name``,
  ``image`` (a path) or ``image: {"bytes", "path"}`` as the official code's result files do;
  relative paths resolve against the file's folder or the ``images=`` option.

With no source the dataset comes from the Hugging Face cache through
``datasets.load_dataset("maifoundations/HumbleBench", split="train")``; nothing is downloaded when
``HF_DATASETS_OFFLINE=1``.  Embedded image bytes are written once into the content-addressed cache
(:func:`~mmrag.benchmarks._loading.cache_image_bytes`); samples hold only paths and hashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmrag.benchmarks._loading import (
    cache_image_bytes,
    check_image_bytes,
    fingerprint_files,
    resolve_image,
    take_options,
)
from mmrag.benchmarks.base import BENCHMARKS
from mmrag.benchmarks.formats import HumbleBenchRecord
from mmrag.errors import InputError
from mmrag.schema import Choice, ImageRef, Sample, is_nota_text
from mmrag.util import iter_jsonl, nonfinite_field, parse_record

HUB_REPO = "maifoundations/HumbleBench"
OPTION_RE = re.compile(r"^([A-E])\.\s?(.*)$")
_FIELDS = set(HumbleBenchRecord.model_fields)


def parse_options(question: str) -> tuple[str, list[Choice], str]:
    """Split a HumbleBench question into ``(stem, choices, trailing text)``.

    The options are the first block of consecutive lines starting "<letter>." with letters in
    increasing order (gaps allowed: NOTA-only variants drop the correct option without
    renumbering).  Raises ValueError when there is no stem, fewer than two options, or a letter
    repeats."""
    lines = question.split("\n")
    first = next((i for i, line in enumerate(lines) if OPTION_RE.match(line.strip())), None)
    if first is None:
        raise ValueError("no option lines ('A. ...') found in the question")
    stem = "\n".join(lines[:first]).strip()
    if not stem:
        raise ValueError("the question has options but no stem before them")
    choices: list[Choice] = []
    end = first
    for line in lines[first:]:
        m = OPTION_RE.match(line.strip())
        if not m:
            break
        letter, text = m.group(1), m.group(2).strip()
        if choices and letter <= choices[-1].letter:
            raise ValueError(f"option letters out of order or repeated at '{letter}.'")
        choices.append(Choice(letter=letter, text=text, is_nota=is_nota_text(text)))
        end += 1
    if len(choices) < 2:
        raise ValueError("fewer than two options found in the question")
    return stem, choices, "\n".join(lines[end:]).strip()


Row = tuple[str, int, dict[str, Any]]  # (file shown in errors, 1-based row/line, record)


def _iter_jsonl_rows(path: Path) -> Iterator[Row]:
    for ln, obj in iter_jsonl(path):
        yield str(path), ln, obj


def _iter_parquet_rows(files: list[Path], batch_size: int = 64, on_error=None) -> Iterator[Row]:
    """Rows of parquet files; a file that is not parquet (JSONL given as parquet, damage) is an
    InputError naming it, and a row with a NaN/Infinity one naming its row and field (passed to
    ``on_error`` when given, as :func:`mmrag.util.iter_jsonl` does)."""
    import pyarrow.parquet as pq

    for f in files:
        row = 0
        try:
            pf = pq.ParquetFile(f)
            for batch in pf.iter_batches(batch_size=batch_size):
                for obj in batch.to_pylist():
                    row += 1
                    bad = nonfinite_field(obj)
                    if bad is not None:
                        exc = InputError(
                            "non-finite number (NaN or Infinity) is not allowed", path=f, line=row, field=bad
                        )
                        if on_error is None:
                            raise exc
                        on_error(exc)
                        continue
                    yield str(f), row, obj
        except InputError:
            raise
        except Exception as exc:  # pyarrow raises several types for a bad file
            first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise InputError(f"cannot read parquet ({first})", path=f, line=row + 1 if row else None) from None


def _iter_hub_rows(repo: str, split: str, cache_dir: str | None = None) -> tuple[Iterator[Row], str]:
    try:
        import datasets

        ds = datasets.load_dataset(repo, split=split, cache_dir=cache_dir)
    except Exception as exc:
        raise InputError(
            f"HumbleBench ('{repo}', split '{split}') is not available from the Hugging Face cache "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). Fetch it once while "
            f"online, e.g. `huggingface-cli download {repo} --repo-type dataset` or "
            f"`python -c \"import datasets; datasets.load_dataset('{repo}', split='{split}')\"`, "
            f"or pass a local copy as the source (imagefolder, parquet or JSONL + images)"
        ) from None
    if "image" in ds.column_names:
        ds = ds.cast_column("image", datasets.Image(decode=False))

    def rows() -> Iterator[Row]:
        i = 0
        for batch in ds.iter(batch_size=64):
            keys = list(batch)
            for j in range(len(batch[keys[0]])):
                i += 1
                yield f"hf://datasets/{repo}", i, {k: batch[k][j] for k in keys}

    return rows(), f"hub:{repo}:{split}:{ds._fingerprint}"


class HumbleBenchBenchmark:
    kind = "humblebench"

    def __init__(
        self,
        source: str | Path | None = None,
        *,
        name: str = "humblebench",
        images: str | Path | None = None,
        repo: str = HUB_REPO,
        split: str = "train",
        source_tag: str = "humblebench",
        cache_dir: str | Path | None = None,
    ) -> None:
        self.name = name
        self.source_tag = source_tag
        self.source = Path(source) if source is not None else None
        self.images_dir = Path(images) if images is not None else None
        self.repo, self.split = repo, split
        self.cache_dir = str(cache_dir) if cache_dir is not None else None
        self._files: list[Path] = []
        self._hub_id = ""
        self._samples: list[Sample] | None = None
        self._layout, self._base = self._detect()

    def _detect(self) -> tuple[str, Path | None]:
        s = self.source
        if s is None:
            return "hub", None
        if not s.exists():
            raise InputError("HumbleBench source not found", path=s)
        if s.is_file():
            if s.suffix == ".parquet":
                self._files = [s]
                return "parquet", s.parent
            if s.suffix == ".jsonl":
                self._files = [s]
                return "jsonl", s.parent
            raise InputError("expected a folder, a .parquet or a .jsonl file", path=s)
        meta = [s / "metadata.jsonl"] if (s / "metadata.jsonl").is_file() else sorted(s.rglob("metadata.jsonl"))
        if len(meta) == 1:
            self._files = meta
            return "imagefolder", meta[0].parent
        parquet = sorted(s.rglob("*.parquet"))
        if parquet:
            self._files = parquet
            return "parquet", s
        jsonl = sorted(s.glob("*.jsonl"))
        if len(jsonl) == 1:
            self._files = jsonl
            return "jsonl", s
        raise InputError(
            "no HumbleBench data found here: expected metadata.jsonl (imagefolder), *.parquet, or one *.jsonl file",
            path=s,
        )

    def _rows(self) -> Iterator[Row]:
        if self._layout == "hub":
            rows, self._hub_id = _iter_hub_rows(self.repo, self.split, self.cache_dir)
            return rows
        if self._layout == "parquet":
            return _iter_parquet_rows(self._files)
        return _iter_jsonl_rows(self._files[0])

    def _image(self, obj: dict[str, Any], file: str, line: int, qid: Any) -> ImageRef:
        base = self._base or Path(".")
        rec = f"question_id {qid}"
        fname, img = obj.get("file_name"), obj.get("image")
        if fname:
            return resolve_image(fname, self.images_dir or base, file=file, line=line, field="file_name", record=rec)
        if isinstance(img, str) and img:
            return resolve_image(img, self.images_dir or base, file=file, line=line, field="image", record=rec)
        if isinstance(img, dict):
            if img.get("bytes"):
                check_image_bytes(img["bytes"], file=file, line=line, field="image.bytes", record=rec)
                return cache_image_bytes(
                    img["bytes"], hint=img.get("path") if isinstance(img.get("path"), str) else None
                )
            p = img.get("path")
            if p and not isinstance(p, str):
                raise InputError(
                    f"expected a path string, got {type(p).__name__} (record {rec})",
                    path=file,
                    line=line,
                    field="image.path",
                )
            if p:
                cand = Path(p)
                if not cand.is_absolute():
                    cand = (self.images_dir or base) / cand
                if not cand.is_file() and self.images_dir is not None:
                    cand = self.images_dir / Path(p).name  # result files carry the author's absolute paths
                if cand.is_file():
                    return ImageRef(path=str(cand))
                raise InputError(f"image not found: {p} (record {rec})", path=file, line=line, field="image.path")
        raise InputError(
            f"record {rec} has no image (expected 'file_name' or 'image')", path=file, line=line, field="image"
        )

    def _to_sample(self, obj: dict[str, Any], file: str, line: int) -> Sample:
        known = {k: v for k, v in obj.items() if k in _FIELDS}
        rec = parse_record(HumbleBenchRecord, known, path=file, line=line)
        try:
            stem, choices, trailing = parse_options(rec.question)
        except ValueError as exc:
            raise InputError(str(exc), path=file, line=line, field="question") from None
        if rec.label not in {c.letter for c in choices}:
            raise InputError(
                f"label '{rec.label}' is not one of the options {[c.letter for c in choices]}",
                path=file,
                line=line,
                field="label",
            )
        image = self._image(obj, file, line, rec.question_id)
        meta: dict[str, Any] = {"type": rec.type, "raw_question": rec.question}
        if trailing:
            meta["question_suffix"] = trailing
        extra = {k: v for k, v in obj.items() if k not in _FIELDS}
        if extra:
            meta["extra"] = extra
        return Sample(
            id=f"{self.name}-{rec.question_id}",
            benchmark=self.name,
            question_id=str(rec.question_id),
            question=stem,
            images=[image],
            choices=choices,
            label=rec.label,
            source=self.source_tag,
            metadata=meta,
        )

    def samples(self) -> list[Sample]:
        if self._samples is None:
            out: list[Sample] = []
            seen: dict[str, tuple[str, int]] = {}
            for file, line, obj in self._rows():
                s = self._to_sample(obj, file, line)
                if s.question_id in seen:
                    f0, l0 = seen[s.question_id]
                    raise InputError(
                        f"duplicate question_id {s.question_id} (first at {f0}:{l0})",
                        path=file,
                        line=line,
                        field="question_id",
                    )
                seen[s.question_id] = (file, line)
                out.append(s)
            if not out:
                raise InputError("no HumbleBench records here", path=self.source or self.repo)
            self._samples = out
        return self._samples

    def documents(self) -> list:
        return []  # HumbleBench is a no-context benchmark

    def fingerprint(self) -> str:
        if self._layout == "hub":
            if not self._hub_id:
                self._rows()
            return fingerprint_files([], extra=f"humblebench:{self.name}:{self._hub_id}")
        return fingerprint_files(self._files, extra=f"humblebench:{self.name}")


@BENCHMARKS.register("humblebench")
def humblebench_benchmark(source: str | None = None, **options: Any) -> HumbleBenchBenchmark:
    """``humblebench``: the hub cache (no source) or a local imagefolder / parquet / JSONL + images."""
    opts = take_options(
        "humblebench",
        options,
        {"name": "humblebench", "images": None, "repo": HUB_REPO, "split": "train", "cache_dir": None},
    )
    return HumbleBenchBenchmark(source, **opts)
