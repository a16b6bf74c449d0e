"""The LLM judge: any model backend grades a reply against the reference, SimpleQA-style.

The grading prompt is ours, written to follow SimpleQA's published grading rules: a reply that
contains the reference and contradicts nothing is CORRECT even when hedged; one that commits to
something contradicting the reference (hedged or not, or several candidates) is INCORRECT; one that
neither gives nor contradicts it ("I don't know", "around a hundred") is NOT ATTEMPTED.  Grades
map to outcomes: A/CORRECT -> correct, B/INCORRECT -> hallucination, C/NOT ATTEMPTED -> deflection.

Unlike SimpleQA, which defaults an unreadable grade to NOT ATTEMPTED, a reply we cannot parse is
``unparseable`` — counted and shown, never defaulted — and so is a judge call that failed.

The judge is just another model (``mmrag.models`` VLM protocol): its calls go through the model
layer, which caches greedy requests and runs them concurrently; the judge batches all items of a
``judge_many`` call into one ``generate``.
"""

from __future__ import annotations

import re
from typing import Sequence

from mmrag.judging.mcq import effective_choices, parse_inline_options
from mmrag.judging.open_answer import error_verdict
from mmrag.schema import ContentPart, Message, Prompt, Response, Sample, Verdict

TEMPLATE_ID = "mmrag-grader-simpleqa"
TEMPLATE_VERSION = "1"

SYSTEM = ("You are a careful grader in an evaluation of question answering. You compare a model's "
          "answer with the reference answer; you never answer the question yourself.")

GRADER_TEMPLATE = """Decide how the model's answer relates to the reference answer.

Question: {question}
Reference answer (any one of these is acceptable): {reference}
Model answer: {response}

Grades:
A (CORRECT): the model answer gives the information of a reference answer and says nothing that
conflicts with it. Extra detail is fine. Hedges such as "I think" or "probably" are fine as long as
the answer the model settles on is the reference. Small misspellings of names are fine, and so is
leaving out words the question already implies. A number must agree with the reference up to the
reference's last significant figure.
B (INCORRECT): the model answer commits to something that conflicts with the reference, even if
it is hedged. Listing several candidate answers without settling on the reference is INCORRECT.
C (NOT ATTEMPTED): the model answer neither gives the reference nor conflicts with it: it declines,
says it does not know or lacks the information, or stays too vague to be checked (for example
"around a hundred" when the reference is 117).

Grade only against the reference answers. Do not use your own knowledge to overrule them.
Reply with a single letter: A, B or C."""

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

GRADE_TO_OUTCOME = {"A": "correct", "B": "hallucination", "C": "deflection"}
_WORDS = {"correct": "A", "incorrect": "B", "not attempted": "C", "not_attempted": "C",
          "rejects": "A", "accepts": "B", "neither": "C"}
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
        return f"option {label}" + (f" ({gold})" if gold else "")
    refs = [a for a in sample.answers if a]
    for lo, hi in sample.numeric_ranges:
        refs.append(f"any number from {lo:g} to {hi:g}")
    return " | ".join(refs) if refs else "(none given)"


def _question_text(sample: Sample, prompt: Prompt | None) -> str:
    choices, _, stem = _structured(sample, prompt)
    if not choices:
        return sample.question
    return stem + "\n" + "\n".join(f"{c.letter}. {c.text}" for c in choices)


def _text_prompt(sample_id: str, body: str, template: str) -> Prompt:
    return Prompt(sample_id=sample_id, template_id=template, template_version=TEMPLATE_VERSION,
                  messages=[Message(role="system", content=[ContentPart(type="text", text=SYSTEM)]),
                            Message(role="user", content=[ContentPart(type="text", text=body)])])


def grading_prompt(sample: Sample, prompt: Prompt | None, response: Response) -> Prompt:
    """The text-only prompt the judge model sees for one item."""
    body = GRADER_TEMPLATE.format(question=_question_text(sample, prompt),
                                  reference=_reference_text(sample, prompt), response=response.text.strip())
    return _text_prompt(sample.id, body, TEMPLATE_ID)


def premise_prompt(sample: Sample, response: Response) -> Prompt:
    """The prompt for a false-premise (KnowHal negative) question."""
    premise = str(sample.metadata.get("false_premise") or "(not stated)")
    refs = [a for a in sample.answers if a]
    reference = f"An acceptable answer would be: {' | '.join(refs)}\n" if refs else ""
    body = PREMISE_TEMPLATE.format(premise=premise, question=sample.question, reference=reference,
                                   response=response.text.strip())
    return _text_prompt(sample.id, body, TEMPLATE_ID + "-premise")


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
        if self.kind == "premise":
            return premise_prompt(sample, response)
        return grading_prompt(sample, prompt, response)

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        return self.judge_many([(sample, prompt, response)])[0]

    def judge_many(self, items: Sequence[tuple[Sample, Prompt, Response]]) -> list[Verdict]:
        out: list[Verdict | None] = [None] * len(items)
        todo: list[int] = []
        for i, (_, _, resp) in enumerate(items):
            if resp.error:
                out[i] = error_verdict(resp, self.judge_id)
            elif not resp.text.strip():
                out[i] = Verdict(outcome="unparseable", judge_id=self.judge_id, reason="empty response",
                                 details={"decided": True})
            else:
                todo.append(i)
        if todo:
            prompts = [self.build_prompt(*items[i]) for i in todo]
            replies = self.model.generate(prompts, self.settings)
            if len(replies) != len(prompts):
                raise RuntimeError(f"judge model returned {len(replies)} replies for {len(prompts)} prompts")
            for i, reply in zip(todo, replies):
                out[i] = self._verdict(reply)
        return [v for v in out if v is not None]

    def _verdict(self, reply: Response) -> Verdict:
        details = {"judge_reply": reply.text, "judge_cached": reply.cached, "decided": True}
        if reply.error:
            return Verdict(outcome="unparseable", judge_id=self.judge_id,
                           reason=f"judge error: {reply.error}", details={**details, "error": reply.error})
        grade = parse_grade(reply.text)
        if grade is None:
            return Verdict(outcome="unparseable", judge_id=self.judge_id,
                           reason="judge reply states no single grade", details=details)
        outcome = GRADE_TO_OUTCOME[grade]
        return Verdict(outcome=outcome, judge_id=self.judge_id, reason=f"judge grade {grade}",
                       score=1.0 if outcome == "correct" else 0.0, details={**details, "grade": grade})
