"""Check a benchmark file against its schema and report EVERY problem with its line and field.

Loaders stop at the first bad record (one clear error); a validator is for fixing a file, so it
keeps going: every JSON error, every pydantic error of every record, duplicates, missing images,
and cheap cross-file checks (a DeflectionBench file's gold and negative doc ids must exist in the
knowledge base beside it, ``FILE.kb.jsonl`` or ``kb.jsonl``, with the modality the record claims;
KnowHal pairs must be complete).

``validate_file(path, benchmark)`` with benchmark in :data:`VALIDATORS` (deflection, kb, knowhal,
humblebench); ``mmrag benchmark validate FILE --benchmark NAME`` prints the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mmrag.benchmarks._loading import check_image_bytes, resolve_image
from mmrag.benchmarks.formats import DeflectionRecord, HumbleBenchRecord, KBRecord, KnowHalRecord
from mmrag.errors import InputError
from mmrag.util import iter_jsonl


class Problem(BaseModel):
    """One problem in a file: 1-based ``line`` (None for file-level problems), dotted ``field``."""

    line: int | None = None
    field: str | None = None
    message: str

    def render(self, path: str | Path | None = None) -> str:
        where = f"{path}:{self.line}" if path and self.line else (f"line {self.line}" if self.line else str(path or ""))
        return f"{where}: " + (f"field '{self.field}': " if self.field else "") + self.message


class Problems(list):
    """The problems of one file (a list of :class:`Problem`) and how many records it holds."""

    records: int = 0

    def add(self, exc: InputError) -> None:
        self.append(Problem(line=exc.line, field=exc.field, message=exc.message))


def _lines(path: Path, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """The one JSONL reader (:func:`mmrag.util.iter_jsonl`) with its problems collected, not raised."""

    def collect(exc: InputError) -> None:
        problems.records += 1
        problems.add(exc)

    for ln, obj in iter_jsonl(path, on_error=collect):
        problems.records += 1
        yield ln, obj


def _check(model: type[BaseModel], obj: dict[str, Any], ln: int, problems: list[Problem]) -> Any:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ())) or None
            problems.append(Problem(line=ln, field=loc, message=err.get("msg", "invalid")))
        return None


def _image_ok(value: str, base: Path, ln: int, field: str, rid: str, problems: Problems) -> None:
    """The loader's own image check (exists, decodable header, not a decompression bomb)."""
    try:
        resolve_image(value, base, file="", line=ln, field=field, record=rid)
    except InputError as exc:
        problems.add(exc)


def _dup(key: str, ln: int, seen: dict[str, int], field: str, problems: list[Problem]) -> None:
    if key in seen:
        problems.append(Problem(line=ln, field=field, message=f"duplicate '{key}' (first on line {seen[key]})"))
    else:
        seen[key] = ln


def validate_kb(path: Path) -> Problems:
    problems = Problems()
    seen: dict[str, int] = {}
    for ln, obj in _lines(path, problems):
        rec = _check(KBRecord, obj, ln, problems)
        if rec is None:
            continue
        _dup(rec.id, ln, seen, "id", problems)
        if rec.image:
            _image_ok(rec.image, path.parent, ln, "image", rec.id, problems)
    return problems


def _kb_modalities(kb: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for _, obj in _lines(kb, Problems()):
        if isinstance(obj.get("id"), str):
            out[obj["id"]] = str(obj.get("modality"))
    return out


def validate_deflection(path: Path) -> Problems:
    problems = Problems()
    from mmrag.benchmarks.deflection import default_kb_path

    kb_path = default_kb_path(path)
    kb = _kb_modalities(kb_path) if kb_path is not None else None
    seen: dict[str, int] = {}
    for ln, obj in _lines(path, problems):
        rec = _check(DeflectionRecord, obj, ln, problems)
        if rec is None:
            continue
        _dup(rec.sample_id, ln, seen, "sample_id", problems)
        for i, img in enumerate(rec.query_images):
            _image_ok(img, path.parent, ln, f"query_images.{i}", rec.sample_id, problems)
        if kb is None or kb_path is None:
            continue
        for i, g in enumerate(rec.gold_contexts):
            if g.doc_id not in kb:
                problems.append(
                    Problem(
                        line=ln,
                        field=f"gold_contexts.{i}.doc_id",
                        message=f"gold document '{g.doc_id}' is not in {kb_path.name}",
                    )
                )
            elif kb[g.doc_id] != g.modality:
                problems.append(
                    Problem(
                        line=ln,
                        field=f"gold_contexts.{i}.modality",
                        message=f"'{g.doc_id}' is a {kb[g.doc_id]} document in {kb_path.name}, not {g.modality}",
                    )
                )
        for i, d in enumerate(rec.negative_doc_ids):
            if d not in kb:
                problems.append(
                    Problem(
                        line=ln,
                        field=f"negative_doc_ids.{i}",
                        message=f"negative document '{d}' is not in {kb_path.name}",
                    )
                )
    return problems


def validate_knowhal(path: Path) -> Problems:
    problems = Problems()
    seen: dict[str, int] = {}
    pairs: dict[str, list[tuple[int, KnowHalRecord]]] = {}
    for ln, obj in _lines(path, problems):
        rec = _check(KnowHalRecord, obj, ln, problems)
        if rec is None:
            continue
        _dup(rec.id, ln, seen, "id", problems)
        _image_ok(rec.image, path.parent, ln, "image", rec.id, problems)
        pairs.setdefault(rec.pair_id, []).append((ln, rec))
    for pid, members in pairs.items():
        pols = sorted(r.polarity for _, r in members)
        if pols != ["negative", "positive"]:
            problems.append(
                Problem(
                    line=members[0][0],
                    field="pair_id",
                    message=f"pair '{pid}' needs one positive and one negative, found {pols}",
                )
            )
            continue
        (_, a), (lnb, b) = members
        for f in ("entity_id", "image", "dimension"):
            if getattr(a, f) != getattr(b, f):
                problems.append(Problem(line=lnb, field=f, message=f"pair '{pid}': positive and negative differ"))
    return problems


def _humblebench_rows(path: Path, problems: Problems) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """Rows of every layout the HumbleBench loader reads: imagefolder, JSONL, parquet (file or folder)."""
    from mmrag.benchmarks.humblebench import HumbleBenchBenchmark, _iter_parquet_rows

    bench = HumbleBenchBenchmark(path)
    if bench._layout == "parquet":
        for f, row, obj in _iter_parquet_rows(bench._files, on_error=problems.add):
            problems.records += 1
            yield Path(f).parent, row, obj
        return
    for ln, obj in _lines(bench._files[0], problems):
        yield bench._files[0].parent, ln, obj


def validate_humblebench(path: Path) -> Problems:
    """HumbleBench in any layout its loader reads: an imagefolder (``metadata.jsonl``), a JSONL file,
    a parquet file or a folder of them (images embedded as bytes are checked too)."""
    from mmrag.benchmarks.humblebench import parse_options

    problems = Problems()
    seen: dict[str, int] = {}
    fields = set(HumbleBenchRecord.model_fields)
    for base, ln, obj in _humblebench_rows(path, problems):
        rec = _check(HumbleBenchRecord, {k: v for k, v in obj.items() if k in fields}, ln, problems)
        if rec is None:
            continue
        _dup(str(rec.question_id), ln, seen, "question_id", problems)
        try:
            _, choices, _ = parse_options(rec.question)
        except ValueError as exc:
            problems.append(Problem(line=ln, field="question", message=str(exc)))
            continue
        letters = [c.letter for c in choices]
        if rec.label not in letters:
            problems.append(Problem(line=ln, field="label", message=f"label '{rec.label}' is not among {letters}"))
        if not any(c.is_nota for c in choices):
            problems.append(Problem(line=ln, field="question", message="no 'None of the above' option"))
        image = rec.file_name or (rec.image if isinstance(rec.image, str) else None)
        if image:
            _image_ok(image, base, ln, "file_name" if rec.file_name else "image", str(rec.question_id), problems)
        elif isinstance(rec.image, dict) and isinstance(rec.image.get("bytes"), (bytes, bytearray)):
            try:
                check_image_bytes(
                    bytes(rec.image["bytes"]),
                    file="",
                    line=ln,
                    field="image.bytes",
                    record=f"question_id {rec.question_id}",
                )
            except InputError as exc:
                problems.add(exc)
        elif isinstance(rec.image, dict) and isinstance(rec.image.get("path"), str) and rec.image["path"]:
            _image_ok(rec.image["path"], base, ln, "image.path", str(rec.question_id), problems)
        else:
            problems.append(Problem(line=ln, field="file_name", message="record names no image"))
    return problems


#: benchmark name -> validator; add a format by registering a function here.
VALIDATORS: dict[str, Callable[[Path], Problems]] = {
    "deflection": validate_deflection,
    "kb": validate_kb,
    "knowhal": validate_knowhal,
    "humblebench": validate_humblebench,
}


def validate_file(path: str | Path, benchmark: str) -> Problems:
    """Every problem of ``path`` read as ``benchmark``'s format (empty = valid; ``.records`` = how
    many records the file holds).  Problems with the file as a whole (missing, a folder where a
    file is expected, parquet given as JSONL) raise InputError."""
    if benchmark not in VALIDATORS:
        raise InputError(f"no validator for '{benchmark}'; known: {', '.join(sorted(VALIDATORS))}", field="benchmark")
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", path=p)
    problems = VALIDATORS[benchmark](p)
    if not problems and problems.records == 0:
        problems.append(Problem(message="the file holds no records"))
    return problems
