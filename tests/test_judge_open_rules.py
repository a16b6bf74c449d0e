"""The rule judge on open answers: which replies are refusals and which only look like one, hedged,
negated and multi-candidate answers against the gold, InfoSeek's numeric ranges, failed requests, and
the rule judge's agreement with the hand-labelled replies."""

from __future__ import annotations

import json

import pytest
from judgeinputs import DATA, item

from mmrag.judging import RuleJudge, is_deflection
from mmrag.judging.records import record_to_item
from mmrag.metrics import cohen_kappa
from mmrag.schema import DEFLECTION_PHRASE


# -- deflection detector ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        DEFLECTION_PHRASE,
        DEFLECTION_PHRASE.lower().rstrip("."),
        "I cannot answer this question.",
        "The context does not mention who built it.",
        "There is not enough information to answer.",
        "I'm unable to determine the species.",
        "I don't know.",
        "Not sure.",
        "Unknown.",
        "N/A",
        "The provided documents do not contain the year.",
        "None of the passages describe this statue.",
        "It is impossible to tell from the image.",
        "The answer cannot be determined from the context.",
        "I need more context to answer this.",
        "I would rather not guess.",
        "This ship is not identifiable.",
        "There's no mention of the dynasty.",
        "I don't have enough information.",
        "Sorry.",
        "Unfortunately, the image does not provide enough detail to identify it.",
    ],
)
def test_refusals_detected(text):
    assert is_deflection(text)


@pytest.mark.parametrize(
    "text",
    [
        "Paris",
        "It is the Danube.",
        "I think it's Canberra.",
        "The sign says 'No entry'.",
        "There is no dog here.",
        "I cannot be 100% sure, but this is the Matterhorn.",
        "The passages do not mention it, but it is probably the Vltava.",
        DEFLECTION_PHRASE + " However, it may be the Eiffel Tower.",
        "",
    ],
)
def test_answers_not_taken_for_refusals(text):
    assert not is_deflection(text)


# -- open answers ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answers,text,expected",
    [
        (["Paris"], "Paris", "correct"),
        (["Paris"], "I'm not entirely sure, but I believe it is Paris.", "correct"),  # hedged + gold
        # not the reference, but nothing a rule can check says it conflicts: undecided (absence, a
        # hedge or a negated reference never decide alone)
        (["Paris"], "Probably Lyon.", "unparseable"),
        (["Paris"], "It is not Paris; it is Lyon.", "unparseable"),
        (["Canberra"], "It is either Sydney or Canberra.", "unparseable"),
        (["Paris"], DEFLECTION_PHRASE, "deflection"),
        (["Paris"], "The context does not say, but from my own knowledge it is Paris.", "correct"),
        (["I Don't Know How She Does It"], "I don't know how she does it", "correct"),  # exact gold first
        (["Gaudí"], "Gaudi.", "correct"),  # accents folded
        (["cat"], "A catfish.", "unparseable"),  # whole words only: not the reference, no rule says more
        (["12,500"], "About 12500 people.", "correct"),
        (["Tokyo"], "**Tokyo**", "correct"),
        (["yes"], "No, it is a reptile.", "hallucination"),
        (["no"], "No, it does not have a dome.", "correct"),
        (["Paris"], "", "unparseable"),
    ],
)
def test_open_rules(answers, text, expected):
    v = RuleJudge().judge(*item(answers=answers, text=text))
    assert v.outcome == expected, v.reason


def test_infoseek_numeric_ranges():
    judge = RuleJudge()
    r = [(297.0, 363.0)]
    assert judge.judge(*item(answers=["330"], text="about 324 m", ranges=r)).outcome == "correct"
    assert judge.judge(*item(answers=["330"], text="450 meters", ranges=r)).outcome == "hallucination"
    # a range answer counts when its IoU with the gold range is >= 0.5
    assert judge.judge(*item(answers=["200"], text="between 180 and 230 cm", ranges=[(180, 220)])).outcome == "correct"
    # outside the range by the official rule, but a range is vaguer than the answer: whether it is
    # a wrong answer or a shrug is left to a reader
    v = judge.judge(*item(answers=["200"], text="between 100 and 230 cm", ranges=[(180, 220)]))
    assert v.outcome == "unparseable" and v.details["undecided"] == "vaguer value"
    v = judge.judge(*item(answers=["330"], text="I don't know the exact height.", ranges=r))
    assert v.outcome == "deflection"


def test_failed_request_is_unparseable_naming_the_error():
    v = RuleJudge().judge(*item(text="", error="timeout"))
    assert v.outcome == "unparseable" and "timeout" in v.reason and v.extracted is None


def test_rule_judge_kappa_on_hand_labels():
    rows = [json.loads(x) for x in DATA.read_text().splitlines()]
    assert len(rows) >= 150
    judge = RuleJudge()
    human, rule = [], []
    for line, rec in enumerate(rows, start=1):
        v = judge.judge(*record_to_item(rec, DATA, line))
        human.append(rec["label"])
        rule.append(v.outcome)
    decided = [(h, r) for h, r in zip(human, rule) if r != "unparseable" and h != "unparseable"]
    kappa = cohen_kappa([h for h, _ in decided], [r for _, r in decided])
    coverage = len(decided) / sum(h != "unparseable" for h in human)
    print(f"rule judge vs hand labels: n={len(rows)} kappa over decided={kappa:.4f} coverage={coverage:.3f}")
    assert kappa >= 0.97 and coverage >= 0.70
