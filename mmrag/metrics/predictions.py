"""Reading HumbleBench's official results format into (Sample, Prompt, Response) triples.

One JSON object per line with ``question_id`` (int), ``question`` (stem + one "X. option" line per
option), ``label`` (gold letter), ``type``, ``image`` and ``prediction`` (the raw reply).  A line
that is not JSON or lacks a field raises an InputError naming the file, line and field (the
official loader instead prints "Invalid sample" and silently drops such lines — and also drops
lines with *extra* keys, which we keep; see docs/footguns.md).
"""

from __future__ import annotations

from pathlib import Path

from mmrag.errors import InputError
from mmrag.judging.mcq import parse_inline_options
from mmrag.schema import ContentPart, Message, Prompt, Response, Sample
from mmrag.util import iter_jsonl

_REQUIRED = {"question_id": int, "question": str, "label": str, "type": str, "prediction": str}


def read_humblebench_predictions(path: str | Path) -> list[tuple[Sample, Prompt, Response]]:
    out: list[tuple[Sample, Prompt, Response]] = []
    for line, rec in iter_jsonl(path):
        for key, typ in _REQUIRED.items():
            if key not in rec:
                raise InputError("missing field", path=path, line=line, field=key)
            value = rec[key]
            if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
                raise InputError(
                    f"expected {typ.__name__}, got {type(value).__name__}", path=path, line=line, field=key
                )
        choices = parse_inline_options(rec["question"])
        sid = f"humblebench-{rec['question_id']}"
        sample = Sample(
            id=sid,
            benchmark="humblebench",
            question_id=str(rec["question_id"]),
            question=rec["question"],
            choices=choices,
            label=rec["label"],
            metadata={"type": rec["type"]},
        )
        prompt = Prompt(
            sample_id=sid,
            id=f"{sid}-line{line}",
            choices=choices,
            label=rec["label"],
            messages=[Message(role="user", content=[ContentPart(type="text", text=rec["question"])])],
        )
        out.append((sample, prompt, Response(prompt_id=prompt.id, text=rec["prediction"])))
    if not out:
        raise InputError("no predictions in file", path=path)
    return out
