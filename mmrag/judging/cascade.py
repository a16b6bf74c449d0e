"""The rule judge's cascade: small scorers tried in a declared order, each deciding only on evidence.

A **scorer** is a registered object (:data:`SCORERS`) with an ``id``, an ``order`` and
``score(reading) -> Verdict | None``: a verdict that names its :class:`~mmrag.schema.Evidence`, or
``None`` to pass the reply on.  :func:`run` tries them by ascending ``order`` (official per-source
rules first) and returns the first verdict; a reply no scorer decides is **undecided** (outcome
``unparseable``, ``details["undecided"]`` the typed cause of the last scorer that explained why it
passed), which ``rule+llm`` sends to the LLM judge and ``mmrag label --undecided`` to a person.

A scorer never decides from absence (the reference not found), vagueness, word overlap or a word
list alone: correct needs the reference (or an official rule's match) in the final answer,
deflection a refusal with no answer asserted, hallucination an asserted value that conflicts with
the reference in terms a rule can check (docs/judging.md, "The evidence rule").

A :class:`Reading` is one reply read once for all scorers: its final answer, its refusal clauses,
the source's answer-rule match and the slot conflicts, each computed on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from mmrag.judging.base import AnswerContext, Conflict, Match
from mmrag.judging.final import Final, concluding_clause, final_answer, table_answer
from mmrag.judging.lexicon import fold
from mmrag.judging.normalize import Variant, vqa_normalize
from mmrag.judging.refusal import DEFAULT_DETECTOR, DeflectionAnalysis, DeflectionDetector
from mmrag.registry import Registry
from mmrag.schema import Evidence, Response, Sample, Verdict

#: characters of a reply the rules read, from its end: beyond it a reply's earlier part is
#: reasoning the final answer follows, and the judge stays well under a second per reply
READ_LIMIT = 12_000


@dataclass
class Reading:
    """One reply as every scorer sees it (each part computed once, on first use)."""

    sample: Sample
    response: Response
    rule_name: str | None = None
    variant: Variant = "evalai"
    detector: DeflectionDetector = DEFAULT_DETECTOR
    #: why scorers passed (cause, reason), in cascade order: the last is the undecided reason
    passed: list[tuple[str, str]] = field(default_factory=list)

    @cached_property
    def text(self) -> str:
        """The part of the reply the rules read: all of it, or its last :data:`READ_LIMIT`
        characters (a final answer is at the end, and reading stays linear up to the reply cap)."""
        full = self.response.text or ""
        return full[-READ_LIMIT:] if len(full) > READ_LIMIT else full

    @property
    def offset(self) -> int:
        """Where :attr:`text` starts in the whole reply."""
        return len(self.response.text or "") - len(self.text)

    @cached_property
    def ctx(self) -> AnswerContext:
        from mmrag.judging.open_answer import context_of

        return context_of(self.sample)

    @cached_property
    def refs(self) -> list[str]:
        return [a for a in self.ctx.answers if a.strip()]

    @cached_property
    def final(self) -> Final:
        fin = final_answer(self.text)
        if fin.method == "whole" and (rows := table_answer(self.text, self.sample.question)):
            return Final(body=fin.body, answer=rows, method="table rows")
        if fin.method == "whole" and (concluded := concluding_clause(fin.body, self.sample.question)):
            return Final(body=fin.body, answer=concluded, method="conclusion")
        return fin

    @cached_property
    def refusal(self) -> DeflectionAnalysis:
        return self.detector.analyse(self.final.answer)

    @cached_property
    def refusal_kind(self) -> str | None:
        """bare | explained | guess | foreign | None (see :mod:`.refusal`)."""
        a = self.refusal
        if not a.refusals:
            return None
        if [n for n, _ in a.refusals] == ["other_language"]:
            return "foreign"
        return "guess" if a.guess else "explained" if a.content else "bare"

    @cached_property
    def answer(self) -> str:
        """What the reply asserts: its final answer, less the refusal clauses beside a guess."""
        a = self.refusal
        return a.answer_text if a.refusals and a.content else self.final.answer

    @cached_property
    def foreign(self) -> str | None:
        """The reply's language when it is confidently not English (None: English or unknown)."""
        from mmrag.judging.language import language_of

        return language_of(self.final.answer) if len(self.final.answer.split()) >= 3 else None

    def norm(self, text: str) -> str:
        return fold(vqa_normalize(text, self.variant))

    @cached_property
    def match(self) -> Match | None:
        """The source's answer rule on the asserted answer (None: no reference to match)."""
        from mmrag.judging.rules import rule_for

        if not (self.refs or self.ctx.numeric_ranges):
            return None
        return rule_for(self.rule_name or self.sample.source).match(self.ctx, self.answer)

    def match_details(self) -> dict[str, Any]:
        """The answer rule's name and details, where it read the reply (for every verdict)."""
        if "match" not in self.__dict__ or self.match is None:
            return {}
        return {**self.match.details, "answer_rule": self.answer_rule}

    @property
    def answer_rule(self) -> str:
        from mmrag.judging.rules import rule_for

        return rule_for(self.rule_name or self.sample.source).rule_id

    @cached_property
    def conflicts(self) -> list[Conflict]:
        from mmrag.judging.contradict import conflicts
        from mmrag.judging.relation import relation_conflicts

        if not self.refs:
            return []
        q = self.sample.question
        return conflicts(self.refs, self.answer, q) or relation_conflicts(self.refs, self.answer, q)

    def locate(self, span: str) -> tuple[int | None, int | None]:
        """Offsets of ``span`` in the reply (case-insensitive; None where it was rewritten)."""
        if not span:
            return None, None
        at = self.text.find(span)
        if at < 0:
            at = self.text.lower().find(span.lower())
        return (self.offset + at, self.offset + at + len(span)) if at >= 0 else (None, None)

    def evidence(self, step: str, span: str, reference: str | None, rule: str) -> Evidence:
        span = span.strip()[:300]
        start, end = self.locate(span)
        if start is not None and end is not None:  # the reply's own text (a clause may be lower-cased)
            span = (self.response.text or "")[start:end]
        return Evidence(step=step, span=span, start=start, end=end, reference=reference, rule=rule)

    def verdict(self, outcome: str, step: str, span: str, reference: str | None, rule: str, **details: Any) -> Verdict:
        """A decided verdict naming its evidence."""
        score = 1.0 if outcome == "correct" else 0.0
        if outcome == "correct" and details.get("vqa_score"):
            score = details["vqa_score"]
        return Verdict(
            outcome=outcome,  # type: ignore[arg-type]
            extracted=None if outcome == "deflection" else (span.strip() or None),
            reason=f"{step}: {rule}",
            score=score,
            details={**details, "decided": True, "undecided": None, "step": step},
            evidence=self.evidence(step, span, reference, rule),
        )

    def passes(self, cause: str, reason: str) -> None:
        """Record why a scorer that saw something could not decide (the undecided reason)."""
        self.passed.append((cause, reason))
        return None


class Scorer(Protocol):
    id: str
    #: position in the cascade (lower first); official per-source rules use the lowest
    order: int

    def score(self, r: Reading) -> Verdict | None: ...


#: the open-answer scorers by id; the cascade order is each one's ``order``
SCORERS: Registry[Scorer] = Registry("scorer", group="mmrag.scorers")


def cascade() -> list[Scorer]:
    """The registered scorers in their declared order."""
    found: list[Any] = [SCORERS.get(n) for n in SCORERS.names()]
    return sorted(found, key=lambda s: (s.order, s.id))


def run(r: Reading, scorers: list[Scorer] | None = None) -> Verdict:
    """The first scorer's verdict, else undecided with the last recorded cause."""
    for s in scorers if scorers is not None else cascade():
        v = s.score(r)
        if v is not None:
            return v
    cause, reason = r.passed[-1] if r.passed else ("nothing checkable", "no scorer found evidence to decide on")
    return Verdict(
        outcome="unparseable",
        extracted=r.final.answer[:300] or None,
        reason=f"undecided: {reason}",
        details={**r.match_details(), "decided": False, "undecided": cause},
    )
