"""The rule judge for open answers (VLM-DeflectionBench and other short-answer VQA).

Order of decisions, each documented because each is a choice:

1. a failed request (``response.error``) is ``unparseable`` and names the error class; an empty
   reply is ``unparseable`` too (truncated or silent: we cannot tell a refusal from a failure);
2. a reply that *is* a reference answer after VQA normalisation is ``correct`` (so that an answer
   such as "I Don't Know How She Does It" is never mistaken for a refusal);
3. the deflection detector runs (:mod:`mmrag.judging.deflection`); a refusal without a guess is a
   ``deflection``;
4. what remains is matched, following SimpleQA's grading rules:
   * numeric golds with InfoSeek ranges use the range rule (:mod:`mmrag.judging.numeric`);
   * yes/no golds compare the first "yes"/"no" said;
   * otherwise a reference found as whole words in the normalised reply is ``correct`` — hedges
     ("I think", "probably") do not matter — unless every mention of it is negated ("not Paris")
     or the reply hedges between several candidates ("either Sydney or Canberra"), which
     contradicts the gold and is a ``hallucination`` (SimpleQA grades both INCORRECT);
   * a reply that offers an answer without any reference in it is a ``hallucination``.

``details["decided"]`` says whether rules are sure.  They are not sure when the gold is merely
absent (a paraphrase or synonym could be right), when a negation or a list of candidates was
involved, or when a refusal came with explanation; the ``rule+llm`` mode sends exactly those to
the LLM judge.  Matching uses :func:`vqa_normalize` plus accent folding ("Gaudí" = "Gaudi"), which
is configurable.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from mmrag.judging.deflection import DEFAULT_DETECTOR, DeflectionDetector
from mmrag.judging.normalize import Variant, phrase_positions, vqa_normalize
from mmrag.judging.numeric import as_number, numeric_match
from mmrag.schema import Prompt, Response, Sample, Verdict

_NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "isn't", "aren't", "wasn't", "weren't",
                       "isnt", "arent", "wasnt", "werent", "doesn't", "don't", "didn't", "hardly"})
_ANSWER_PREFIX = re.compile(r"^\s*(?:final answer|answer|short answer)\s*[:\-]\s*", re.I)
_MARKDOWN = re.compile(r"\*\*|__|`+|^#+\s*", re.M)
_CANDIDATE_MARKERS = frozenset({"or", "either"})
_YES_NO = {"yes": "yes", "no": "no", "yeah": "yes", "yep": "yes", "nope": "no"}


def fold_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


@dataclass
class OpenAnswerConfig:
    """Knobs of the open-answer rules (all defaults documented in docs/judging.md)."""

    variant: Variant = "evalai"
    fold_accents: bool = True
    negation_window: int = 2
    numeric_tolerance: float = 0.1
    empty_is_unparseable: bool = True


class OpenAnswerRules:
    """Stateless rule set; :meth:`decide` returns (outcome, extracted, reason, decided, details)."""

    def __init__(self, config: OpenAnswerConfig | None = None,
                 detector: DeflectionDetector | None = None) -> None:
        self.config = config or OpenAnswerConfig()
        self.detector = detector or DEFAULT_DETECTOR

    # -- normalisation ---------------------------------------------------------------------
    def norm(self, text: str) -> str:
        t = vqa_normalize(text, self.config.variant)
        return fold_accents(t) if self.config.fold_accents else t

    def tokens(self, text: str) -> list[str]:
        """Normalised words, with quotes around a word dropped ('No entry' -> no entry): the
        official punctuation list keeps apostrophes, which would glue quotes to words."""
        return [t.strip("'\"") for t in self.norm(text).split() if t.strip("'\"")]

    # -- decision --------------------------------------------------------------------------
    def decide(self, question: str, answers: list[str], numeric_ranges: list[tuple[float, float]],
               text: str) -> tuple[str, str | None, str, bool, dict[str, Any]]:
        refs = [a for a in answers if a and a.strip()]
        if not text.strip():
            return "unparseable", None, "empty response", True, {}
        body = _ANSWER_PREFIX.sub("", _MARKDOWN.sub("", text).strip())
        norm_body = self.norm(body)
        norm_refs = [self.norm(r) for r in refs]
        if norm_body and norm_body in norm_refs:
            return "correct", body, "reply equals a reference answer", True, {"match": "exact"}
        analysis = self.detector.analyse(body)
        details: dict[str, Any] = {"refusal_patterns": [n for n, _ in analysis.refusals]}
        if analysis.is_deflection:
            reason = "refusal" + (" with explanation" if analysis.explained else "")
            return "deflection", None, reason, not analysis.explained, details
        answer = analysis.answer_text if analysis.refusals else body
        if numeric_ranges:
            ok, parsed = numeric_match(answer, numeric_ranges, self.config.numeric_tolerance)
            details["numeric_parsed"] = parsed
            if ok:
                return "correct", answer, "number inside the gold range (InfoSeek rule)", True, details
            if parsed != (0.0, 0.0):
                return "hallucination", answer, "number outside the gold range (InfoSeek rule)", True, details
        if not refs:
            return "unparseable", answer, "no reference answer to match against", True, details
        return self._match(question, refs, norm_refs, answer, details)

    def _match(self, question: str, refs: list[str], norm_refs: list[str], answer: str,
               details: dict[str, Any]) -> tuple[str, str | None, str, bool, dict[str, Any]]:
        toks = self.tokens(answer)
        if all(r in _YES_NO for r in norm_refs):
            said = next((_YES_NO[t] for t in toks if t in _YES_NO), None)
            if said is None:
                return "hallucination", answer, "no yes/no in the reply", False, details
            ok = said in {_YES_NO[r] for r in norm_refs}
            return ("correct" if ok else "hallucination"), said, f"reply says {said!r}", True, details
        negated_only = False
        for ref, nref in zip(refs, norm_refs):
            rtoks = nref.split()
            starts = phrase_positions(toks, rtoks)
            if not starts and as_number(ref) is not None:
                starts = self._numeric_positions(toks, as_number(ref))
            if not starts:
                continue
            free = [s for s in starts if not self._negated(toks, s)]
            if not free:
                negated_only = True
                continue
            if self._several_candidates(question, toks, free[0], len(rtoks)):
                details["match"] = "hedged between candidates"
                return "hallucination", answer, f"hedges between {ref!r} and other candidates", False, details
            details["match"] = "contains"
            return "correct", ref, f"reply contains the reference {ref!r}", True, details
        if negated_only:
            return "hallucination", answer, "reply negates the reference answer", False, details
        return "hallucination", answer, "no reference answer in the reply", False, details

    @staticmethod
    def _numeric_positions(toks: list[str], value: float | None) -> list[int]:
        out = []
        for i, t in enumerate(toks):
            v = as_number(t)
            if v is not None and value is not None and v == value:
                out.append(i)
        return out

    def _negated(self, toks: list[str], start: int) -> bool:
        window = toks[max(0, start - self.config.negation_window):start]
        return any(t in _NEGATORS for t in window)

    @staticmethod
    def _several_candidates(question: str, toks: list[str], start: int, length: int) -> bool:
        """'X or Y' / 'either X or Y' / 'X, Y, or Z' around the gold, when the question itself
        does not offer alternatives ("Is it red or blue?")."""
        if re.search(r"\bor\b", question.lower()):
            return False
        lo, hi = max(0, start - 6), min(len(toks), start + length + 6)
        return any(t in _CANDIDATE_MARKERS for t in toks[lo:hi])


def effective_answers(sample: Sample) -> list[str]:
    return [a for a in sample.answers if isinstance(a, str)]


class OpenAnswerJudge:
    """Judge protocol wrapper around :class:`OpenAnswerRules` for open questions."""

    judge_id = "rule-open@1"

    def __init__(self, config: OpenAnswerConfig | None = None,
                 detector: DeflectionDetector | None = None) -> None:
        self.rules = OpenAnswerRules(config, detector)

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        if response.error:
            return error_verdict(response, self.judge_id)
        outcome, extracted, reason, decided, details = self.rules.decide(
            sample.question, effective_answers(sample), list(sample.numeric_ranges), response.text)
        details["decided"] = decided
        score = 1.0 if outcome == "correct" else 0.0 if outcome != "unparseable" else None
        return Verdict(outcome=outcome, extracted=extracted, judge_id=self.judge_id, reason=reason,
                       score=score, details=details)


def error_verdict(response: Response, judge_id: str) -> Verdict:
    """A failed request is data: ``unparseable``, naming the error class, never an answer."""
    return Verdict(outcome="unparseable", extracted=None, judge_id=judge_id,
                   reason=f"model error: {response.error}",
                   details={"error": response.error, "error_detail": response.error_detail, "decided": True})
