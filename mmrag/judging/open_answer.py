"""The rule judge for open answers: a short pipeline of named steps, each in its own module.

1. :mod:`~mmrag.judging.final` — the final answer (after reasoning, ``<think>``, "so the answer is",
   a closing bold line) and whether the reply was cut off (``finish_reason == "length"`` or a reply
   that stops mid-clause);
2. :mod:`~mmrag.judging.refusal` — refusal / not attempted (curated patterns, other languages);
3. the source's answer rule (:mod:`~mmrag.judging.rules`, :mod:`~mmrag.judging.evqa`,
   :mod:`~mmrag.judging.webqa`, chosen by ``Sample.source``) — gives / contradicts / absent;
4. :mod:`~mmrag.judging.contradict` — conflicts with a slot of the reference;
5. :mod:`~mmrag.judging.signals` — decide from the typed signals, or abstain (``unparseable``,
   reason ``undecided: ...``).

A failed request is ``unparseable`` naming its error class; an empty reply is ``unparseable``
(we cannot tell a refusal from a failure); neither is undecided (no judge can read them).
``Verdict.details`` carries the signals (``details["signals"]``), ``decided`` and the typed
``undecided`` cause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mmrag.judging.evqa  # noqa: F401  (registers the evqa / vqa / knowhal answer rules)
import mmrag.judging.webqa  # noqa: F401  (registers the webqa answer rule)
from mmrag.judging.contradict import conflicts
from mmrag.judging.final import Final, asserted_part, concluding_clause, cut_off, final_answer, table_answer
from mmrag.judging.keyphrase import is_sentence
from mmrag.judging.language import language_of
from mmrag.judging.lexicon import (
    ALTERNATIVE,
    claimless_stems,
    content_stems,
    fold,
    head_names,
    names,
    stems,
    unlisted_alias,
    vague_words,
    words,
)
from mmrag.judging.normalize import Variant, vqa_normalize
from mmrag.judging.question import asked_slot
from mmrag.judging.refusal import DEFAULT_DETECTOR, DeflectionDetector
from mmrag.judging.relation import relation_conflicts
from mmrag.judging.rules import AnswerContext, rule_for
from mmrag.judging.signals import Signals, decide
from mmrag.schema import Prompt, Response, Sample, Verdict

#: match kinds whose official rule is the whole test (numeric ranges, E-VQA lists): no slot checks
_OFFICIAL_ONLY = frozenset({"range", "list"})


@dataclass
class OpenAnswerConfig:
    """Knobs of the open-answer rules (defaults documented in docs/judging.md)."""

    variant: Variant = "evalai"
    numeric_tolerance: float = 0.1


def alternatives_of(answers: Sequence[Any]) -> list[str]:
    """Reference strings with raw '|' alternatives split (E-VQA's release writes "Danube|Donau")."""
    out: list[str] = []
    for a in answers:
        if isinstance(a, str):
            out.extend(p.strip() for p in a.split("|") if p.strip()) if "|" in a else out.append(a)
    return out


def context_of(sample: Sample) -> AnswerContext:
    qt = sample.metadata.get("question_type")
    return AnswerContext(
        question=sample.question,
        answers=alternatives_of(sample.answers),
        numeric_ranges=list(sample.numeric_ranges),
        question_type=str(qt) if qt else None,
        metadata=dict(sample.metadata),
    )


def error_verdict(response: Response, judge_id: str) -> Verdict:
    """A failed request is data: ``unparseable``, naming the error class, never an answer."""
    return Verdict(
        outcome="unparseable",
        extracted=None,
        judge_id=judge_id,
        reason=f"model error: {response.error}",
        details={"error": response.error, "error_detail": response.error_detail, "decided": True},
    )


def _refusal(analysis) -> str | None:
    if not analysis.refusals:
        return None
    if [n for n, _ in analysis.refusals] == ["other_language"]:
        return "foreign"
    return "guess" if analysis.guess else "explained" if analysis.content else "bare"


class OpenAnswerJudge:
    """The open-answer pipeline (see the module docstring)."""

    judge_id = "rule-open@3"

    def __init__(self, config: OpenAnswerConfig | None = None, detector: DeflectionDetector | None = None) -> None:
        self.config = config or OpenAnswerConfig()
        self.detector = detector or DEFAULT_DETECTOR

    def norm(self, text: str) -> str:
        return fold(vqa_normalize(text, self.config.variant))

    def signals(self, sample: Sample, response: Response, rule_name: str | None = None) -> tuple[Signals, Any]:
        ctx = context_of(sample)
        refs = [a for a in ctx.answers if a.strip()]
        fin = final_answer(response.text)
        if fin.method == "whole" and (rows := table_answer(response.text, sample.question)):
            fin = Final(body=fin.body, answer=rows, method="table rows")
        elif fin.method == "whole" and (concluded := concluding_clause(fin.body, sample.question)):
            fin = Final(body=fin.body, answer=concluded, method="conclusion")
        s = Signals(final=fin.answer, final_method=fin.method, cut_off=cut_off(response.text, response.finish_reason))
        s.exact = bool(fin.answer) and self.norm(fin.answer) in {self.norm(r) for r in refs}
        analysis = self.detector.analyse(fin.answer)
        s.refusal, s.refusal_patterns = _refusal(analysis), [n for n, _ in analysis.refusals]
        answer = analysis.answer_text if analysis.refusals and analysis.content else fin.answer
        s.asked = asked_slot(sample.question)
        if s.cut_off:  # only what it finished saying about the question can be held against it
            answer = asserted_part(answer, sample.question)
        m = rule_for(rule_name or sample.source).match(ctx, answer) if (refs or ctx.numeric_ranges) else None
        if m is not None:
            s.match, s.match_kind, s.match_certain = m.status, m.kind, m.certain
            s.key_recall = m.details.get("key_recall")
            if m.status == "gives" and s.refusal == "foreign":
                s.refusal = None  # a reply in another language that names the reference answers
        if refs and (m is None or m.kind not in _OFFICIAL_ONLY) and s.refusal not in ("bare", "explained", "foreign"):
            s.conflicts = conflicts(refs, answer, sample.question) or relation_conflicts(refs, answer, sample.question)
        asked = set(stems(sample.question))
        s.candidate = bool(set(content_stems(answer)) - asked)
        sentence_ref = any(is_sentence(r) for r in refs)
        if refs and not sentence_ref:
            theirs = {w for r in refs for w in content_stems(r)} - asked
            ours = set(content_stems(answer)) - asked
            s.overlap = bool(theirs & ours) or any(
                len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5] for a in theirs for b in ours
            )
        elif refs:
            told = asked | {t for r in refs for t in stems(r)}
            s.novel = len(
                {
                    w
                    for w in content_stems(answer)
                    if w not in told and w not in claimless_stems() and not w[:1].isdigit() and len(w) > 2
                }
            )
        s.alternative = bool(ALTERNATIVE.search(answer))
        s.unlisted_alias = unlisted_alias(answer, refs)
        s.hedged = bool(set(words(answer)) & {"or", "maybe", "perhaps", "probably", "possibly", "might"})
        said = words(answer)
        figure_only = any(c.isdigit() for r in refs for c in r) and not any(w[:1].isdigit() for w in said)
        known = {fold(n) for t in [sample.question, *refs] for n in names(t)}
        s.named = bool({fold(n) for n in head_names(answer)} - known)
        s.vague = (
            s.match != "gives"
            and not s.named
            and (
                bool(set(said) & vague_words())
                or (figure_only and len(said) <= 5)
                or bool(re.search(r"\b\d{2,4}s\b|\bcentur(?:y|ies)\b", answer))
            )
        )
        s.foreign = len(words(fin.answer)) >= 5 and language_of(fin.answer) is not None
        return s, m

    def judge(self, sample: Sample, prompt: Prompt, response: Response, rule_name: str | None = None) -> Verdict:
        """``rule_name`` overrides the answer rule the sample's source picks (KnowHal positives
        always use the ``knowhal`` VQA rule)."""
        if response.error:
            return error_verdict(response, self.judge_id)
        if not (response.text or "").strip():
            return Verdict(
                outcome="unparseable", judge_id=self.judge_id, reason="empty response", details={"decided": True}
            )
        s, m = self.signals(sample, response, rule_name)
        outcome, reason, undecided = decide(s)
        details: dict[str, Any] = {
            **(m.details if m is not None else {}),
            "signals": s.record(),
            "decided": undecided is None,
            "undecided": undecided,
        }
        if m is not None:
            details["answer_rule"] = rule_for(rule_name or sample.source).rule_id
        score = 1.0 if outcome == "correct" else 0.0 if outcome != "unparseable" else None
        if outcome == "correct" and "vqa_score" in details:
            score = details["vqa_score"] or 1.0
        extracted = (m.extracted if m is not None and m.extracted else s.final) if outcome != "deflection" else None
        return Verdict(
            outcome=outcome, extracted=extracted, judge_id=self.judge_id, reason=reason, score=score, details=details
        )

    def judge_many(self, items: Sequence[tuple[Sample, Prompt, Response]]) -> list[Verdict]:
        return [self.judge(*it) for it in items]
