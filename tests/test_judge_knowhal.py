"""KnowHal judging: spotting a rejected false premise, the KnowHal judge by rules and with an LLM,
relation negatives judged as option matching, KnowHal records routed by source through the file
judge, and open negatives going to the premise prompt with an LLM but staying with the rules in
rule+llm."""

from __future__ import annotations

import json

import pytest
from judgeinputs import CH, ScriptedJudgeModel, item

from mmrag.errors import InputError
from mmrag.judging import KnowHalJudge, LLMJudge, RuleJudge, RuleThenLLMJudge, rejects_premise
from mmrag.judging.records import judge_file
from mmrag.metrics.agreement import agreement
from mmrag.schema import DEFLECTION_PHRASE


# -- KnowHal ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,rejects",
    [
        ("There is no dog in the image.", True),
        ("The car is not red, it is blue.", True),
        ("I don't see any umbrella.", True),
        ("No, the man is not holding anything.", True),
        ("The question assumes a cat, but there is none.", True),
        ("The dog is a beagle.", False),
        ("It is red.", False),
    ],
)
def test_premise_rejection(text, rejects):
    assert rejects_premise(text) is rejects


def test_knowhal_judge_rules_and_llm():
    neg = {"polarity": "negative", "dimension": "A", "false_premise": "the car is red"}
    pos = {"polarity": "positive", "dimension": "E"}
    rules = KnowHalJudge()
    assert rules.judge(*item(text="The car is not red.", meta=neg)).outcome == "correct"
    assert rules.judge(*item(text="It is a bright red car.", meta=neg)).outcome == "hallucination"
    assert rules.judge(*item(text=DEFLECTION_PHRASE, meta=neg)).outcome == "deflection"
    v = rules.judge(*item(answers=["Eiffel Tower"], text="This is the Eiffel Tower in Paris.", meta=pos))
    assert v.outcome == "correct" and v.score == 1.0 and v.details["vqa_exact"] == 0.0
    rel = {"polarity": "positive", "dimension": "R"}
    assert rules.judge(*item(text="C", choices=CH, label="C", meta=rel)).outcome == "correct"
    model = ScriptedJudgeModel(lambda t: "B")
    with_llm = KnowHalJudge(model)
    v = with_llm.judge(*item(text="The car is not red.", meta=neg))
    assert (
        v.outcome == "hallucination"
        and v.details["rule_outcome"] == "correct"
        and v.details["llm_outcome"] == "hallucination"
    )
    assert "false premise: the car is red" in model.calls[0][0].messages[-1].text()
    with pytest.raises(ValueError):
        rules.judge(*item(text="x", meta={}))


def test_knowhal_relation_negative_is_option_matching_and_records_route_by_source(tmp_path):
    rch = ["A. behind it", "B. on its back", "C. in front of it", "D. under it"]
    rows = [
        {
            "id": "k1",
            "source": "knowhal",
            "question": "Where is the woman?",
            "answers": ["A"],
            "choices": rch,
            "question_type": "Relation",
            "metadata": {"polarity": "negative"},
            "response": "B",
            "label": "hallucination",
        },
        {
            "id": "k2",
            "source": "knowhal",
            "question": "Where is the woman?",
            "answers": ["A"],
            "choices": rch,
            "question_type": "Relation",
            "metadata": {"polarity": "negative"},
            "response": "A. behind it",
            "label": "correct",
        },
        {
            "id": "k3",
            "source": "knowhal",
            "question": "Why is the blue car on the roof?",
            "answers": [],
            "question_type": "Attribute",
            "metadata": {"polarity": "negative", "false_premise": "a car on the roof"},
            "response": "There is no car on the roof.",
            "label": "correct",
        },
        {
            "id": "k4",
            "source": "knowhal",
            "question": "What breed is the dog?",
            "answers": ["beagle"],
            "question_type": "Entity",
            "metadata": {"polarity": "positive"},
            "response": "It's a beagle.",
            "label": "correct",
        },
        {
            "id": "w1",
            "source": "webqa",
            "question": "What color is the roof?",
            "question_type": "color",
            "answers": ["The roof of the station is green."],
            "response": "Green.",
            "label": "correct",
        },
    ]
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    judge_file(f, out, RuleJudge())
    judged = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["outcome"] for r in judged] == [r["label"] for r in rows]
    res = agreement(f, out, field_a="label")
    assert set(res["by_source"]) == {"knowhal", "webqa"} and res["by_source"]["knowhal"]["n"] == 4
    # a KnowHal open record without polarity is a clear input error naming the line and field
    f.write_text(json.dumps({**rows[3], "metadata": {}}) + "\n")
    with pytest.raises(InputError) as exc:
        judge_file(f, tmp_path / "o2.jsonl", RuleJudge())
    assert exc.value.line == 1 and exc.value.field == "metadata.polarity"


def test_knowhal_open_negatives_go_to_the_premise_prompt_with_an_llm_and_stay_with_the_rules_in_rule_llm():
    neg = {"polarity": "negative", "false_premise": "the cat is on the sofa"}
    s, p, r = item(question="What is the cat playing with?", answers=[], text="Some yarn, I think.", meta=neg)
    s = s.model_copy(update={"source": "knowhal"})
    model = ScriptedJudgeModel(lambda t: "A")
    v = KnowHalJudge(model).judge(s, p, r)  # the paper's protocol: the LLM reads every negative
    sent = model.calls[0][0].messages[-1].text()
    assert "false premise: the cat is on the sofa" in sent and v.details["judged_by"] == "llm"
    model = ScriptedJudgeModel(lambda t: "A")
    v = RuleThenLLMJudge(RuleJudge(), LLMJudge(model)).judge(s, p, r)  # decided by the rules: kept
    assert v.outcome == "hallucination" and v.details["judged_by"] == "rules" and not model.calls
    s2, p2, r2 = item(question="What flavour is the cake?", answers=[], text="I can't tell.", meta=neg)
    v = RuleJudge().judge(s2.model_copy(update={"source": "knowhal"}), p2, r2)
    assert v.outcome == "deflection"  # neither affirms nor rejects the premise
