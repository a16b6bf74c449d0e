"""The rule judge's cascade: each scorer on its own, the declared order, a new scorer added without
editing the others, and the evidence rule (every decided verdict names evidence found in the reply;
an undecided one names none and says why)."""

from __future__ import annotations

import json

from judgeinputs import DATA

from mmrag.judging import SCORERS, RuleJudge, RuleThenLLMJudge, cascade
from mmrag.judging.cascade import Reading, run
from mmrag.judging.records import record_to_item
from mmrag.judging.scorers import (
    ExactScorer,
    OfficialConflictScorer,
    PremiseScorer,
    ReferenceScorer,
    RefusalScorer,
    SlotConflictScorer,
)
from mmrag.schema import Response, Sample, Verdict


def reading(question: str, answers: list[str], reply: str, source: str = "viquae", **sample) -> Reading:
    s = Sample(id="s", benchmark="t", question=question, answers=answers, source=source, **sample)
    return Reading(s, Response(prompt_id="p", text=reply))


def test_the_declared_order_official_rules_first():
    ids = [s.id for s in cascade()]
    assert ids == ["premise", "exact", "reference", "refusal", "official_conflict", "slot_conflict"]
    assert [s.order for s in cascade()] == sorted(s.order for s in cascade())


# -- each scorer on its own -------------------------------------------------------------------------
def test_premise_scorer():
    neg = {"polarity": "negative", "false_premise": "the dog is red"}
    s = PremiseScorer()
    assert s.score(reading("What colour is the dog?", ["There is no dog."], "Red.")) is None  # not KnowHal
    v = s.score(
        reading("What colour is the dog?", ["There is no dog."], "There is no dog here.", "knowhal", metadata=neg)
    )
    assert v.outcome == "correct" and v.evidence.step == "premise" and v.evidence.reference == "the dog is red"
    v = s.score(reading("What colour is the dog?", ["There is no dog."], "It is red.", "knowhal", metadata=neg))
    assert v.outcome == "hallucination"
    v = s.score(reading("What colour is the dog?", ["There is no dog."], "I can't tell.", "knowhal", metadata=neg))
    assert v.outcome == "deflection"


def test_exact_scorer():
    v = ExactScorer().score(reading("Capital?", ["Paris"], "  paris. "))
    assert v.outcome == "correct" and v.evidence.reference == "Paris" and v.evidence.span == "paris."
    assert ExactScorer().score(reading("Capital?", ["Paris"], "It is Paris.")) is None


def test_reference_scorer_credits_only_a_sure_match_with_nothing_beside_it():
    v = ReferenceScorer().score(reading("Capital?", ["Paris"], "It is Paris."))
    assert v.outcome == "correct" and v.evidence.reference == "Paris" and "default rule" in v.evidence.rule
    r = reading("Capital?", ["Paris"], "I can't say; the passages mention Paris.")
    assert ReferenceScorer().score(r) is None and r.passed[-1][0] == "refusal beside reference"
    r = reading("Which city?", ["Paris"], "Paris, also known as Lutetia.")
    assert ReferenceScorer().score(r) is None and r.passed[-1][0] == "unlisted alias"
    r = reading("When was it built?", ["1887"], "It was built in 1887 and rebuilt in 1902.")
    assert ReferenceScorer().score(r) is None and r.passed[-1][0] == "reference with another year"
    r = reading("Who taught Aristotle?", ["Plato"], "Socrates and Plato.")
    assert ReferenceScorer().score(r) is None and r.passed[-1][0] == "reference with conflict"


def test_refusal_scorer():
    v = RefusalScorer().score(reading("Capital?", ["Paris"], "The passages do not say."))
    assert v.outcome == "deflection" and v.evidence.span == "The passages do not say." and v.evidence.start == 0
    assert RefusalScorer().score(reading("Capital?", ["Paris"], "Lyon.")) is None
    r = reading("Capital?", ["Paris"], "The passages do not say, but it is probably Lyon.")
    assert RefusalScorer().score(r) is None and r.passed[-1][0] == "refusal with guess"


def test_official_conflict_scorer():
    v = OfficialConflictScorer().score(reading("How tall?", ["330"], "It is 450 m tall.", numeric_ranges=[(297, 363)]))
    assert v.outcome == "hallucination" and "InfoSeek" in v.evidence.rule and v.evidence.reference == "330"
    v = OfficialConflictScorer().score(reading("Is it open?", ["yes"], "No."))
    assert v.outcome == "hallucination" and v.evidence.step == "official_conflict"
    r = reading("How tall?", ["330"], "About 450 m.", numeric_ranges=[(297, 363)])
    assert OfficialConflictScorer().score(r) is None and r.passed[-1][0] == "vaguer value"


def test_slot_conflict_scorer():
    v = SlotConflictScorer().score(reading("When was it built?", ["1887"], "It was built in 1902."))
    assert v.outcome == "hallucination" and "1902" in v.evidence.rule and v.evidence.reference == "1887"
    v = SlotConflictScorer().score(reading("What colour is the roof?", ["The roof is green."], "The roof is red."))
    assert v.outcome == "hallucination" and v.evidence.rule.startswith("class")
    r = reading("Who built it?", ["Louis XIV"], "It was built for Louis XVI.")
    assert SlotConflictScorer().score(r) is None and r.passed[-1][0] == "unchecked conflict"


def test_nothing_checkable_is_undecided_with_its_reason():
    v = run(reading("Capital?", ["Paris"], "Lyon."))
    assert v.outcome == "unparseable" and v.evidence is None and v.details["undecided"] == "nothing checkable"
    assert v.reason.startswith("undecided:")


# -- a new scorer joins without editing the others --------------------------------------------------
class CapitalScorer:
    """A toy scorer: a reply naming a listed rival capital is a hallucination."""

    id = "toy_capital"
    order = 60

    def score(self, r: Reading) -> Verdict | None:
        if "Lyon" in r.answer and "Paris" in r.refs:
            return r.verdict("hallucination", self.id, "Lyon", "Paris", "a rival from a closed list of capitals")
        return None


def test_a_registered_scorer_joins_the_cascade_in_its_order():
    SCORERS.add(CapitalScorer())
    try:
        assert [s.id for s in cascade()][-1] == "toy_capital"
        v = RuleJudge().judge(
            *record_to_item({"question": "Capital?", "answers": ["Paris"], "response": "Lyon."}, DATA, 1)
        )
        assert v.outcome == "hallucination" and v.evidence.step == "toy_capital" and v.evidence.span == "Lyon"
    finally:
        SCORERS._items.pop("toy_capital")
    assert "toy_capital" not in [s.id for s in cascade()]


# -- the evidence rule on labelled replies ----------------------------------------------------------
def test_every_decided_verdict_names_evidence_found_in_the_reply():
    judge = RuleJudge()
    steps = {s.id for s in cascade()} | {"option", "refusal"}
    decided = 0
    for line, raw in enumerate(DATA.read_text(encoding="utf-8").splitlines(), 1):
        rec = json.loads(raw)
        item = record_to_item(rec, DATA, line)
        v = judge.judge(*item)
        if v.outcome == "unparseable":
            assert v.evidence is None
            continue
        decided += 1
        e = v.evidence
        assert e is not None and e.step in steps and e.rule, (rec, v)
        if e.start is not None:
            assert item[2].text[e.start : e.end] == e.span
    assert decided >= 150


def test_rule_then_llm_hands_on_exactly_the_undecided():
    class Grader:
        judge_id = "g"

        def __init__(self):
            self.seen = []

        def judge_many(self, items):
            self.seen += items
            return [Verdict(outcome="correct", judge_id="g", reason="graded") for _ in items]

    g = Grader()
    items = [
        record_to_item({"question": "Capital?", "answers": ["Paris"], "response": t}, DATA, i)
        for i, t in enumerate(["Paris.", "Lyon.", "The passages do not say."], 1)
    ]
    out = RuleThenLLMJudge(RuleJudge(), g).judge_many(items)
    assert [it[2].text for it in g.seen] == ["Lyon."]
    assert [v.details["judged_by"] for v in out] == ["rules", "llm", "rules"]
