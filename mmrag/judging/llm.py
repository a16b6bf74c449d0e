"""The LLM judge: any model backend grades a reply against the reference, SimpleQA-style.

The grading prompt is SimpleQA's own ``GRADER_TEMPLATE`` (openai/simple-evals, MIT), verbatim as
template data in ``templates/simpleqa_grader.txt`` with its source in ``simpleqa_grader.yaml``;
VLM-DeflectionBench's GPT-4o judge grades "with SimpleQA prompts".  Grades map to outcomes:
A/CORRECT -> correct, B/INCORRECT -> hallucination, C/NOT_ATTEMPTED -> deflection.  The gold
target is the first reference, with the other accepted strings after it ("Paris (also accepted:
Paris, France)"), an InfoSeek range as "any value from lo to hi", an option as "B. dog".

Unlike SimpleQA, which defaults an unreadable grade to NOT ATTEMPTED, a reply we cannot parse is
``unparseable`` — counted and shown, never defaulted.  A judge call that failed (connection,
timeout, 5xx, a bad body) is no verdict at all: it is marked (``details["judge_error"]``, see
:func:`judge_failure`), a run counts the cell as failed (error budget, ``--resume`` re-judges it)
and ``mmrag score`` refuses to write it.

KnowHal's open-ended negative (false-premise) questions use our premise prompt below (the paper's
GPT-4o-mini prompt is unpublished): A rejects -> correct, B accepts -> hallucination, C neither ->
deflection.  Items pick their template from the data (polarity negative, no options), so a
``rule+llm`` judge sends KnowHal negatives to the premise prompt and everything else to SimpleQA's.

The judge is just another model (``mmrag.models`` VLM protocol): its calls go through the model
layer, which caches greedy requests and runs them concurrently; the judge batches all items of a
``judge_many`` call into one ``generate``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import yaml

from mmrag.errors import JudgeError, MmragError
from mmrag.judging.failed import unjudged
from mmrag.judging.mcq import effective_choices, parse_inline_options
from mmrag.schema import ContentPart, Message, Outcome, Prompt, Response, Sample, Verdict
from mmrag.util import valid_text

TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE_ID = "simpleqa-grader"


@cache
def grader_template() -> tuple[str, dict]:
    """(template text, its metadata with source) of SimpleQA's grader prompt."""
    meta = yaml.safe_load((TEMPLATES / "simpleqa_grader.yaml").read_text(encoding="utf-8"))
    text = (TEMPLATES / meta["text_file"]).read_text(encoding="utf-8").strip()
    return text, meta


TEMPLATE_VERSION = "2"
GRADER_TEMPLATE = grader_template()[0]

PREMISE_TEMPLATE = """The question below rests on a false premise: {premise}
Decide how the model's answer treats that premise.

Question: {question}
{reference}Model answer: {response}

Grades:
A (REJECTS): the answer points out that the premise is false, or corrects it (for example "there
is no such object in the image", "it is not red, it is blue").
B (ACCEPTS): the answer goes along with the premise, answering as if it were true.
C (NEITHER): the answer declines or says it cannot tell, without accepting or rejecting the premise.

Reply with a single letter: A, B or C."""

GRADE_TO_OUTCOME: dict[str, Outcome] = {"A": "correct", "B": "hallucination", "C": "deflection"}
_WORDS = {
    "correct": "A",
    "incorrect": "B",
    "not attempted": "C",
    "not_attempted": "C",
    "rejects": "A",
    "accepts": "B",
    "neither": "C",
}
_ALONE = re.compile(r"^\W*([ABC])\W*$")
_LABELLED = re.compile(r"\b(?:grade|answer|verdict)\s*[:=]?\s*\**\(?([ABC])\b", re.I)
_LEADING = re.compile(r"^\W*([ABC])(?:[\s.:)\]*-]|$)")


def parse_grade(reply: str) -> str | None:
    """The grade letter of a judge reply, or None when the reply does not state exactly one.

    Accepted: the letter alone ("B", "**B**", "(B)."), "Grade: B", a leading letter followed by
    its name ("B (INCORRECT)") when no other grade letter stands alone in the reply, or exactly one
    of the grade names (CORRECT / INCORRECT / NOT ATTEMPTED).
    """
    text = reply.strip()
    if not text:
        return None
    m = _ALONE.match(text)
    if m:
        return m.group(1)
    labelled = {g.upper() for g in _LABELLED.findall(text)}
    if len(labelled) == 1:
        return labelled.pop()
    lead = _LEADING.match(text)
    standalone = set(re.findall(r"(?<![\w'])([ABC])(?![\w'])", text))
    if lead and standalone == {lead.group(1)}:
        return lead.group(1)
    low = " ".join(re.sub(r"[^a-z_ ]", " ", text.lower()).split())
    named = set()
    for word, grade in _WORDS.items():
        if re.search(rf"\b{word}\b", low):
            named.add(grade)
    return named.pop() if len(named) == 1 else None


def _structured(sample: Sample, prompt: Prompt | None):
    """(options, gold letter, stem) of a multiple-choice item, or ([], None, question)."""
    choices, label = effective_choices(sample, prompt)
    if not choices or not label:
        return [], None, sample.question
    inline = bool(parse_inline_options(sample.question))
    stem = sample.question.splitlines()[0] if inline else sample.question
    return choices, label, stem


def _reference_text(sample: Sample, prompt: Prompt | None) -> str:
    choices, label, _ = _structured(sample, prompt)
    if label:
        gold = next((c.text for c in choices if c.letter == label), "")
        return f"{label}. {gold}" if gold else label
    refs = [a for a in sample.answers if a]
    ranges = [f"any value from {lo:g} to {hi:g}" for lo, hi in sample.numeric_ranges]
    if not refs:
        return "; ".join(ranges) if ranges else "(none given)"
    extra = refs[1:] + ranges
    return refs[0] + (f" (also accepted: {'; '.join(extra)})" if extra else "")


def _question_text(sample: Sample, prompt: Prompt | None) -> str:
    choices, _, stem = _structured(sample, prompt)
    if not choices:
        return sample.question
    return stem + "\n" + "\n".join(f"{c.letter}. {c.text}" for c in choices)


def _text_prompt(sample_id: str, body: str, template: str) -> Prompt:
    """One user turn, no system prompt (as simple-evals sends its grader)."""
    return Prompt(
        sample_id=sample_id,
        template_id=template,
        template_version=TEMPLATE_VERSION,
        messages=[Message(role="user", content=[ContentPart(type="text", text=body)])],
    )


def grading_prompt(sample: Sample, prompt: Prompt | None, response: Response) -> Prompt:
    """The text-only prompt the judge model sees for one item."""
    body = GRADER_TEMPLATE.format(
        question=_question_text(sample, prompt),
        target=_reference_text(sample, prompt),
        predicted_answer=response.text.strip(),
    )
    return _text_prompt(sample.id, body, TEMPLATE_ID)


def premise_prompt(sample: Sample, response: Response) -> Prompt:
    """The prompt for a false-premise (KnowHal negative) question."""
    premise = str(sample.metadata.get("false_premise") or "(not stated)")
    refs = [a for a in sample.answers if a]
    reference = f"An acceptable answer would be: {' | '.join(refs)}\n" if refs else ""
    body = PREMISE_TEMPLATE.format(
        premise=premise, question=sample.question, reference=reference, response=response.text.strip()
    )
    return _text_prompt(sample.id, body, TEMPLATE_ID + "-premise")


def is_open_negative(sample: Sample, prompt: Prompt | None) -> bool:
    """A KnowHal-style false-premise question without options (graded by the premise prompt)."""
    choices, label = effective_choices(sample, prompt)
    return sample.metadata.get("polarity") == "negative" and not (choices and label)


class LLMJudge:
    """Grades with a model.  ``model`` is any object with ``fingerprint`` and
    ``generate(prompts, settings) -> list[Response]``; ``settings`` default to greedy decoding with
    a short budget (so the model layer caches the calls)."""

    def __init__(self, model, settings=None, *, kind: str = "answer") -> None:
        if kind not in ("answer", "premise"):
            raise ValueError("LLMJudge kind must be 'answer' or 'premise'")
        if settings is None:
            from mmrag.models.base import GenerationSettings

            settings = GenerationSettings(max_new_tokens=16, temperature=0.0)
        self.model = model
        self.settings = settings
        self.kind = kind
        fp = getattr(model, "fingerprint", type(model).__name__)
        self.judge_id = f"llm-{kind}@{TEMPLATE_VERSION}:{fp}"

    def build_prompt(self, sample: Sample, prompt: Prompt | None, response: Response) -> Prompt:
        if self.kind == "premise" or is_open_negative(sample, prompt):
            return premise_prompt(sample, response)
        return grading_prompt(sample, prompt, response)

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        return self.judge_many([(sample, prompt, response)])[0]

    def judge_many(self, items: Sequence[tuple[Sample, Prompt, Response]]) -> list[Verdict]:
        out: list[Verdict | None] = [None] * len(items)
        todo: list[int] = []
        for i, (_, _, resp) in enumerate(items):
            out[i] = unjudged(resp, self.judge_id)
            if out[i] is None:
                todo.append(i)
        if todo:
            prompts = [self.build_prompt(*items[i]) for i in todo]
            try:
                replies = self.model.generate(prompts, self.settings)
            except MmragError:
                raise
            except Exception as exc:  # a judge backend that raises: every item of the call failed, none is graded
                detail = f"{type(exc).__name__}: {exc}"[:500]
                replies = [Response(prompt_id=p.id, error="other", error_detail=detail) for p in prompts]
            if len(replies) != len(prompts):
                raise JudgeError(f"judge model returned {len(replies)} replies for {len(prompts)} prompts")
            for i, reply in zip(todo, replies):
                out[i] = self._verdict(reply)
        return [v for v in out if v is not None]

    def _verdict(self, reply: Response) -> Verdict:
        text = valid_text(reply.text)  # any backend's reply: a lone surrogate would stop the writer
        details = {"judge_reply": text, "judge_cached": reply.cached, "decided": True}
        if reply.error:
            # a failed judge call is no verdict: marked so that a run counts the cell as failed
            # (error budget, --resume re-judges it) and ``mmrag score`` / curation refuse it
            return Verdict(
                outcome="unparseable",
                judge_id=self.judge_id,
                reason=f"judge error: {reply.error}",
                details={
                    **details,
                    "decided": False,
                    JUDGE_ERROR: reply.error,
                    "judge_error_detail": valid_text(reply.error_detail)[:500],
                },
            )
        grade = parse_grade(text)
        if grade is None:
            return Verdict(
                outcome="unparseable",
                judge_id=self.judge_id,
                reason="judge reply states no single grade",
                details=details,
            )
        outcome = GRADE_TO_OUTCOME[grade]
        return Verdict(
            outcome=outcome,
            judge_id=self.judge_id,
            reason=f"judge grade {grade}",
            score=1.0 if outcome == "correct" else 0.0,
            details={**details, "grade": grade},
        )


#: the ``Verdict.details`` key that marks a judge call that failed (its value: the error class)
JUDGE_ERROR = "judge_error"


def judge_failure(verdict: Verdict) -> str | None:
    """The error class of a verdict whose judge call failed (connection, timeout, server_error,
    bad_response, ...), else None: such a verdict is a failed cell, never an outcome."""
    got = verdict.details.get(JUDGE_ERROR) if verdict.details else None
    return str(got) if got else None


def raise_judge_failures(verdicts: Sequence[Verdict], what: str = "verdicts") -> None:
    """One :class:`~mmrag.errors.JudgeError` naming how many of ``verdicts`` failed and the first
    failure, for callers that cannot keep a failed item apart (``mmrag score``, ``mmrag judge``,
    curation); nothing when every call succeeded."""
    failed = [v for v in verdicts if judge_failure(v)]
    if failed:
        first = failed[0]
        detail = str(first.details.get("judge_error_detail") or "")[:160]
        raise JudgeError(
            f"the LLM judge failed on {len(failed)} of {len(verdicts)} {what} "
            f"({judge_failure(first)}{': ' + detail if detail else ''}); nothing was scored with it"
        )
