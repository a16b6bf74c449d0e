"""The rule judge for open answers (VLM-DeflectionBench sources, KnowHal positives, any short-answer VQA).

Order of decisions, each documented because each is a choice:

1. a failed request (``response.error``) is ``unparseable`` and names the error class; an empty
   reply is ``unparseable`` too (truncated or silent: we cannot tell a refusal from a failure);
2. a reply that *is* a reference answer after VQA normalisation is ``correct`` (so that an answer
   such as "I Don't Know How She Does It" is never mistaken for a refusal);
3. the curated refusal patterns (:mod:`mmrag.judging.deflection`): a bare refusal is a
   ``deflection``; a refusal with a guess has its guess judged;
4. the source's answer rule (:mod:`mmrag.judging.answer_rules`, chosen by ``Sample.source``):
   the reply *gives* the reference -> ``correct``; *contradicts* it -> ``hallucination``;
5. the reference is *absent*: the semantic detector (:mod:`mmrag.judging.semantic`) asks whether
   the reply asserts anything.  Declining in its own words and offering no candidate ->
   ``deflection``; offering content -> ``hallucination`` (SimpleQA: an answer that is not the gold);
6. neither -> ``unparseable`` (counted, never guessed; ``rule+llm`` sends it to the LLM judge).

``details["decided"]`` is False where rules are unsure (a paraphrase could be right, a negation or
a candidate list was involved, a refusal came with explanation, the semantic call was needed);
``rule+llm`` sends exactly those to the LLM judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from mmrag.judging.answer_rules import AnswerContext, Match, rule_for
from mmrag.judging.deflection import DEFAULT_DETECTOR, DeflectionDetector
from mmrag.judging.keyphrase import fold
from mmrag.judging.normalize import Variant, vqa_normalize
from mmrag.schema import Prompt, Response, Sample, Verdict

_ANSWER_PREFIX = re.compile(r"^\s*(?:final answer|answer|short answer)\s*[:\-]\s*", re.I)
_MARKDOWN = re.compile(r"\*\*|__|`+|^#+\s*", re.M)

Decision = tuple[str, str | None, str, bool, dict[str, Any]]


def fold_accents(text: str) -> str:
    return fold(text)


@dataclass
class OpenAnswerConfig:
    """Knobs of the open-answer rules (all defaults documented in docs/judging.md)."""

    variant: Variant = "evalai"
    fold_accents: bool = True
    negation_window: int = 2
    numeric_tolerance: float = 0.1
    empty_is_unparseable: bool = True
    semantic: bool = True          # MiniLM deflection detector for replies no other rule decides


def question_type(sample: Sample) -> str | None:
    qt = sample.metadata.get("question_type")
    return str(qt) if qt else None


def context_of(sample: Sample) -> AnswerContext:
    return AnswerContext(question=sample.question, answers=[a for a in sample.answers if isinstance(a, str)],
                         numeric_ranges=list(sample.numeric_ranges), question_type=question_type(sample),
                         metadata=dict(sample.metadata))


class OpenAnswerRules:
    """Stateless rule set; :meth:`decide` returns (outcome, extracted, reason, decided, details)."""

    def __init__(self, config: OpenAnswerConfig | None = None, detector: DeflectionDetector | None = None,
                 semantic=None) -> None:
        self.config = config or OpenAnswerConfig()
        self.detector = detector or DEFAULT_DETECTOR
        self._semantic = semantic

    @property
    def semantic(self):
        if self._semantic is None and self.config.semantic:
            from mmrag.judging.semantic import default_semantic_detector

            self._semantic = default_semantic_detector()
        return self._semantic

    def norm(self, text: str) -> str:
        t = vqa_normalize(text, self.config.variant)
        return fold(t) if self.config.fold_accents else t

    @staticmethod
    def body_of(text: str) -> str:
        return _ANSWER_PREFIX.sub("", _MARKDOWN.sub("", text).strip())

    def prime(self, items: Sequence[tuple[str, str]]) -> None:
        """Embed, in one batch, the (reply, question) pairs the semantic detector may need."""
        if self.semantic is not None:
            self.semantic.prime([(self.body_of(t), q) for t, q in items if t and t.strip()])

    def decide(self, sample: Sample, text: str, rule_name: str | None = None) -> Decision:
        ctx = context_of(sample)
        refs = [a for a in ctx.answers if a and a.strip()]
        if not text.strip():
            return "unparseable", None, "empty response", True, {}
        body = self.body_of(text)
        if body and self.norm(body) in {self.norm(r) for r in refs}:
            return "correct", body, "reply equals a reference answer", True, {"match": "exact"}
        analysis = self.detector.analyse(body)
        details: dict[str, Any] = {"refusal_patterns": [n for n, _ in analysis.refusals]}
        if analysis.is_deflection and not analysis.explained:
            return "deflection", None, "refusal", True, details
        answer = analysis.answer_text if analysis.refusals else body
        rule = rule_for(rule_name or sample.source)
        details["answer_rule"] = rule.rule_id
        m: Match | None = rule.match(ctx, answer) if (refs or ctx.numeric_ranges) else None
        if m is not None:
            details.update(m.details)
        if m is not None and m.status == "gives":
            return "correct", m.extracted, m.reason, m.decided and not analysis.is_deflection, details
        if analysis.is_deflection:
            return "deflection", None, "refusal with explanation", False, details
        if m is not None and m.status == "contradicts":
            return "hallucination", m.extracted or answer, m.reason, m.decided, details
        if m is None:
            return "unparseable", answer, "no reference answer to match against", True, details
        if analysis.refusals and analysis.guess:
            return "hallucination", answer, "a guess without the reference (after a refusal)", False, details
        return self._absent(sample, body, answer, details)

    def _absent(self, sample: Sample, body: str, answer: str, details: dict[str, Any]) -> Decision:
        sem = self.semantic
        if sem is None:
            return "hallucination", answer, "no reference answer in the reply", False, details
        call = sem.analyse(body, sample.question)
        details["semantic"] = [round(c.score, 3) for c in call.sentences]
        if call.deflects:
            return "deflection", None, "declines in its own words and offers no candidate (semantic)", True, details
        if call.asserts:
            return "hallucination", answer, "asserts an answer without the reference", False, details
        return "unparseable", answer, "no rule can decide (not the reference, not clearly a refusal)", False, details


class OpenAnswerJudge:
    """Judge protocol wrapper around :class:`OpenAnswerRules` for open questions."""

    judge_id = "rule-open@2"

    def __init__(self, config: OpenAnswerConfig | None = None, detector: DeflectionDetector | None = None,
                 semantic=None) -> None:
        self.rules = OpenAnswerRules(config, detector, semantic)

    def judge(self, sample: Sample, prompt: Prompt, response: Response, rule_name: str | None = None) -> Verdict:
        """``rule_name`` overrides the answer rule the sample's source picks (KnowHal's judge
        always scores positives with the ``knowhal`` VQA rule)."""
        if response.error:
            return error_verdict(response, self.judge_id)
        outcome, extracted, reason, decided, details = self.rules.decide(sample, response.text, rule_name)
        details["decided"] = decided
        score = 1.0 if outcome == "correct" else 0.0 if outcome != "unparseable" else None
        if "vqa_score" in details and outcome == "correct":
            score = details["vqa_score"]
        return Verdict(outcome=outcome, extracted=extracted, judge_id=self.judge_id, reason=reason,
                       score=score, details=details)

    def judge_many(self, items: Sequence[tuple[Sample, Prompt, Response]]) -> list[Verdict]:
        self.rules.prime([(r.text, s.question) for s, _, r in items if not r.error])
        return [self.judge(*it) for it in items]


def effective_answers(sample: Sample) -> list[str]:
    return [a for a in sample.answers if isinstance(a, str)]


def error_verdict(response: Response, judge_id: str) -> Verdict:
    """A failed request is data: ``unparseable``, naming the error class, never an answer."""
    return Verdict(outcome="unparseable", extracted=None, judge_id=judge_id,
                   reason=f"model error: {response.error}",
                   details={"error": response.error, "error_detail": response.error_detail, "decided": True})
