"""Judging JSONL files outside a run (``mmrag judge``).  Comparing two judgings lives in
:mod:`mmrag.metrics.agreement` (metrics build on judging, never the reverse).

Input records (one JSON object per line):

* ``question`` (str, required), ``answers`` (list of accepted strings, required; for a
  multiple-choice record its first entry is the gold letter or the gold option's text),
  ``response`` (str or null, required);
* optional: ``id``, ``question_id``, ``choices`` (a list of ``{"letter", "text"}``, a list of
  "A. text" strings, or a ``{"A": "text"}`` mapping), ``numeric_ranges`` ([[lo, hi], ...]),
  ``error`` (the error class of a failed request), ``finish_reason`` (``length`` / ``content_filter``
  mark a reply cut off or withheld: never judged, as in a run), ``source`` (routes the record to that source's
  answer rule: ``webqa``, ``evqa``, ``infoseek``, ``viquae``, ``mmdocrag``, ``mragbench``,
  ``knowhal``, ``humblebench``), ``question_type`` (WebQA's ``Qcate``, E-VQA's question type,
  KnowHal's dimension ``Entity|Attribute|Relation|Knowledge``), ``metadata`` (KnowHal:
  ``polarity`` positive|negative, ``false_premise``), ``label`` and ``note`` (carried through).

Each record is written back unchanged plus ``outcome``, ``extracted``, ``judge_id``,
``judge_reason`` and ``evidence`` (what a decided verdict rests on: scorer, span and offsets,
reference, rule; null when undecided) (atomically: the output file appears whole or not at all).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.judging.modes import judge_many
from mmrag.schema import Choice, ContentPart, Message, Prompt, Response, Sample, is_nota_text
from mmrag.util import iter_jsonl, write_jsonl_atomic

_ERRORS = ("timeout", "rate_limit", "server_error", "bad_response", "context_overflow", "other")


def _choices(raw: Any, path: Path, line: int) -> list[Choice]:
    if raw is None:
        return []
    if isinstance(raw, dict):
        items = [(str(k), str(v)) for k, v in raw.items()]
    elif isinstance(raw, list):
        items = []
        for i, c in enumerate(raw):
            if isinstance(c, dict) and "letter" in c and "text" in c:
                items.append((str(c["letter"]), str(c["text"])))
            elif isinstance(c, str):
                m = re.match(r"^\s*\(?([A-Za-z])[.):]\s*(.*)$", c)
                items.append((m.group(1).upper(), m.group(2)) if m else (chr(ord("A") + i), c))
            else:
                raise InputError(
                    "each choice must be a string or {letter, text}", path=path, line=line, field=f"choices[{i}]"
                )
    else:
        raise InputError("choices must be a list or a mapping", path=path, line=line, field="choices")
    return [Choice(letter=l, text=t, is_nota=is_nota_text(t)) for l, t in items]


def record_to_item(rec: dict[str, Any], path: Path, line: int) -> tuple[Sample, Prompt, Response]:
    for key in ("question", "answers", "response"):
        if key not in rec:
            raise InputError("missing field", path=path, line=line, field=key)
    if not isinstance(rec["question"], str) or not rec["question"].strip():
        raise InputError("must be a non-empty string", path=path, line=line, field="question")
    answers = rec["answers"]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise InputError("must be a list of strings", path=path, line=line, field="answers")
    if rec["response"] is not None and not isinstance(rec["response"], str):
        raise InputError("must be a string or null", path=path, line=line, field="response")
    error = rec.get("error")
    if error is not None and error not in _ERRORS:
        raise InputError(
            f"unknown error class {error!r}; one of {', '.join(_ERRORS)}", path=path, line=line, field="error"
        )
    finish = rec.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise InputError("must be a string or null", path=path, line=line, field="finish_reason")
    choices = _choices(rec.get("choices"), path, line)
    label = None
    if choices:
        if not answers:
            raise InputError(
                "a multiple-choice record needs the gold letter or text in answers",
                path=path,
                line=line,
                field="answers",
            )
        gold = answers[0].strip()
        letters = {c.letter: c for c in choices}
        label = (
            gold.upper()
            if gold.upper() in letters
            else next((c.letter for c in choices if c.text.strip().lower() == gold.lower()), None)
        )
        if label is None:
            raise InputError(
                f"gold {gold!r} is neither a letter nor the text of an option", path=path, line=line, field="answers"
            )
    sid = str(rec.get("id") or f"line{line}")
    metadata = rec.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError("must be an object", path=path, line=line, field="metadata")
    metadata = dict(metadata)
    qtype = rec.get("question_type")
    if qtype is not None:
        if not isinstance(qtype, str):
            raise InputError("must be a string", path=path, line=line, field="question_type")
        metadata["question_type"] = qtype
    source = str(rec.get("source") or "")
    if source == "knowhal" and not choices and metadata.get("polarity") not in ("positive", "negative"):
        raise InputError(
            "a KnowHal record needs metadata.polarity 'positive' or 'negative'",
            path=path,
            line=line,
            field="metadata.polarity",
        )
    if source == "knowhal" and qtype and "dimension" not in metadata:
        metadata["dimension"] = qtype[:1].upper()
    try:
        ranges = [(float(lo), float(hi)) for lo, hi in rec.get("numeric_ranges") or []]
    except (TypeError, ValueError):
        raise InputError("must be a list of [lo, hi] pairs", path=path, line=line, field="numeric_ranges") from None
    sample = Sample(
        id=sid,
        benchmark="judge-input",
        question_id=str(rec.get("question_id") or sid),
        question=rec["question"],
        answers=[] if choices else answers,
        numeric_ranges=ranges,
        choices=choices,
        label=label,
        source=source,
        metadata=metadata,
    )
    prompt = Prompt(
        sample_id=sid,
        choices=choices,
        label=label,
        messages=[Message(role="user", content=[ContentPart(type="text", text=rec["question"])])],
    )
    response = Response(prompt_id=prompt.id, text=rec["response"] or "", error=error, finish_reason=finish)
    return sample, prompt, response


def judge_stats(verdicts) -> dict[str, Any]:
    """Outcome counts plus the LLM judge's share: items it graded, replies served from the cache,
    and failed judge calls (counted like failed model calls, never folded into an outcome)."""
    llm = [v for v in verdicts if "judge_reply" in v.details or v.reason.startswith("judge error")]
    return {
        "counts": dict(Counter(v.outcome for v in verdicts)),
        "judged_by_llm": len(llm),
        "judge_cached": sum(bool(v.details.get("judge_cached")) for v in llm),
        "judge_failures": sum(v.reason.startswith("judge error") for v in llm),
        "judge_unreadable": sum(v.reason == "judge reply states no single grade" for v in llm),
    }


def judge_file(input_path: str | Path, output_path: str | Path, judge) -> dict[str, Any]:
    """Judge every record of ``input_path`` and write them to ``output_path``; returns
    :func:`judge_stats`."""
    input_path = Path(input_path)
    rows: list[dict[str, Any]] = []
    items = []
    for line, rec in iter_jsonl(input_path):
        items.append(record_to_item(rec, input_path, line))
        rows.append(rec)
    if not rows:
        raise InputError("no records to judge", path=input_path)
    verdicts = judge_many(judge, items)
    # a failed LLM-judge call is not a verdict: the command fails and writes nothing
    from mmrag.judging.llm import raise_judge_failures

    raise_judge_failures(verdicts, what="records")
    out = []
    for rec, v in zip(rows, verdicts):
        out.append(
            {
                **rec,
                "outcome": v.outcome,
                "extracted": v.extracted,
                "judge_id": v.judge_id,
                "judge_reason": v.reason,
                "evidence": v.evidence.model_dump() if v.evidence is not None else None,
            }
        )
    write_jsonl_atomic(output_path, out)
    return judge_stats(verdicts)
