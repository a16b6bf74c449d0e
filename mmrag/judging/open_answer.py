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
from mmrag.judging.keyphrase import fold, words
from mmrag.judging.normalize import Variant, vqa_normalize
from mmrag.judging.slots import doubt
from mmrag.judging.support import unsupported_claim
from mmrag.schema import Prompt, Response, Sample, Verdict

_ANSWER_PREFIX = re.compile(r"^\s*(?:final answer|answer|short answer)\s*[:\-]\s*", re.I)
_FINAL_ANSWER = re.compile(r"(?:^|(?<=[.!?:\n])\s*)(?:final answer|short answer|answer)\s*[:\-]\s*(.+?)\s*$",
                           re.I | re.S)
#: a reply shorter than this never "declines in part": a bare answer is the answer
_DECLINE_MIN_WORDS = 6
_MARKDOWN = re.compile(r"\*\*|__|`+|^#+\s*|(?<!\w)\*(?=\w)|(?<=[\w.)])\*(?!\w)", re.M)

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
    paraphrase: bool = True        # guarded MiniLM paraphrase signal (mmrag/judging/paraphrase.py)
    paraphrase_threshold: float = 0.58
    combiner: bool = True          # learned combiner for undecided verdicts (mmrag/judging/combiner.py)
    combiner_confidence: float | None = None  # None: the value shipped with the weights


def question_type(sample: Sample) -> str | None:
    qt = sample.metadata.get("question_type")
    return str(qt) if qt else None


def alternatives_of(answers: Sequence[Any]) -> list[str]:
    """Reference strings with the raw '|' alternatives split (Encyclopedic-VQA's release writes
    "Danube|Donau" in one field; the builder splits it, loose records may not)."""
    out: list[str] = []
    for a in answers:
        if isinstance(a, str):
            out.extend(p.strip() for p in a.split("|") if p.strip()) if "|" in a else out.append(a)
    return out


def context_of(sample: Sample) -> AnswerContext:
    return AnswerContext(question=sample.question, answers=alternatives_of(sample.answers),
                         numeric_ranges=list(sample.numeric_ranges), question_type=question_type(sample),
                         metadata=dict(sample.metadata))


class OpenAnswerRules:
    """Stateless rule set; :meth:`decide` returns (outcome, extracted, reason, decided, details)."""

    def __init__(self, config: OpenAnswerConfig | None = None, detector: DeflectionDetector | None = None,
                 semantic=None) -> None:
        self.config = config or OpenAnswerConfig()
        self.detector = detector or DEFAULT_DETECTOR
        self._semantic = semantic
        self._paraphrase = None

    @property
    def paraphrase(self):
        if self._paraphrase is None and self.config.paraphrase and self.semantic is not None:
            from mmrag.judging.paraphrase import ParaphraseSignal

            self._paraphrase = ParaphraseSignal(self.semantic.bank, self.config.paraphrase_threshold)
        return self._paraphrase

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
        """The reply without a reasoning block (``<think>...</think>``, ``<answer>`` tags: what a
        reasoning model concludes is its answer), markdown emphasis and an "Answer:" prefix."""
        from mmrag.judging.mcq import strip_reasoning

        body = _MARKDOWN.sub("", strip_reasoning(text)).strip()
        marked = list(_FINAL_ANSWER.finditer(body))
        if marked and marked[-1].group(1).strip():  # "<reasoning> Answer: X": X is the answer
            body = marked[-1].group(1).strip()
        return _ANSWER_PREFIX.sub("", body)

    def batched(self, judge_one, items: Sequence):
        """``judge_one`` over ``items`` with the MiniLM encodes of the whole call batched: the rules
        decide first, only what they leave to MiniLM is embedded, one encode per step
        (:func:`mmrag.judging.semantic.judge_batched`); verdicts equal one-by-one judging."""
        from mmrag.judging.semantic import judge_batched

        return judge_batched(self.semantic.bank if self.semantic is not None else None, judge_one, items)

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
        if m is not None and (m.status == "absent" or (m.status == "contradicts" and "key_recall" in m.details
                                                        and not m.decided)):
            m = self._paraphrased(ctx, refs, answer, m, details)
        elif m is not None and m.status == "gives" and "key_recall" in m.details and self.paraphrase is not None:
            # key words present, but the other side of an opposite pair or another colour/month...
            blocked = next((b for r in refs if (b := self.paraphrase.guards.blocked(ctx.question, r, answer))
                            and not b.startswith(("number", "negation"))), None)
            if blocked:
                m = Match("contradicts", answer, f"reply carries the key phrase but with the {blocked}",
                          decided=False)
        if m is not None and m.details.get("match") == "implied yes/no" and self.semantic is not None:
            if self.semantic.analyse(body, sample.question).deflects:  # restates the topic, declines
                return "deflection", None, "declines in its own words (semantic), no yes or no", False, details
        if m is not None and m.status == "gives":
            return "correct", m.extracted, m.reason, m.decided and not analysis.is_deflection, details
        if analysis.is_deflection:
            return "deflection", None, "refusal with explanation", False, details
        if m is not None and m.status == "contradicts":
            # "The photo is black and white, so the hull colour can't be judged" names a colour and
            # declines: a category rule's mismatch stands only when no part of a longer reply declines
            decided = m.decided and not self._declines_in_part(body, sample.question)
            return "hallucination", m.extracted or answer, m.reason, decided, details
        if m is None:
            return "unparseable", answer, "no reference answer to match against", True, details
        if analysis.refusals and analysis.guess:
            return "hallucination", answer, "a guess without the reference (after a refusal)", False, details
        return self._absent(sample, body, answer, details)

    def _declines_in_part(self, body: str, question: str) -> bool:
        """Whether a reply of some length has a sentence or clause that the semantic detector reads
        as declining (MiniLM logit above its margin); short replies ("Red.") never do."""
        sem = self.semantic
        if sem is None or len(words(body)) < _DECLINE_MIN_WORDS:
            return False
        return any(c.score > sem.margin for c in sem.analyse(body, question).sentences)

    def _paraphrased(self, ctx, refs: list[str], answer: str, m: Match, details: dict[str, Any]) -> Match:
        """The guarded MiniLM paraphrase signal, asked only where the rule found the reference absent
        or too little of its key phrase."""
        sig = self.paraphrase
        call = sig.best(ctx.question, refs, answer) if sig is not None else None
        if call is None:
            return m
        details["paraphrase"] = {"similarity": round(call.similarity, 3), "target": call.target,
                                 "blocked": call.blocked}
        if call.gives(sig.threshold):
            return Match("gives", answer, f"paraphrases the reference {call.reference!r} "
                         f"(MiniLM cosine {call.similarity:.2f})", decided=False)
        return m

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
        if outcome == "correct" and decided and not details.get("settled"):
            body, golds = OpenAnswerRules.body_of(response.text or ""), alternatives_of(sample.answers)
            why = doubt(body, sample.question, golds) or unsupported_claim(body, sample.question, golds)
            if why:  # a credited reply with a slot signal against it: the combiner decides
                decided, details["doubt"] = False, why
        details["decided"] = decided
        score = 1.0 if outcome == "correct" else 0.0 if outcome != "unparseable" else None
        if "vqa_score" in details and outcome == "correct":
            score = details["vqa_score"]
        return Verdict(outcome=outcome, extracted=extracted, judge_id=self.judge_id, reason=reason,
                       score=score, details=details)

    def judge_many(self, items: Sequence[tuple[Sample, Prompt, Response]]) -> list[Verdict]:
        return self.rules.batched(lambda it: self.judge(*it), items)


def effective_answers(sample: Sample) -> list[str]:
    return [a for a in sample.answers if isinstance(a, str)]


def error_verdict(response: Response, judge_id: str) -> Verdict:
    """A failed request is data: ``unparseable``, naming the error class, never an answer."""
    return Verdict(outcome="unparseable", extracted=None, judge_id=judge_id,
                   reason=f"model error: {response.error}",
                   details={"error": response.error, "error_detail": response.error_detail, "decided": True})
