"""The rule judge's per-source answer rules: WebQA's sentence references by question category,
implicit deflections, guesses and bare names, number words, E-VQA's multi-answer IoU, replies no rule
can decide, and the rule judge's agreement per source on the tuning data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judgeinputs import src_item

from mmrag.judging import RuleJudge
from mmrag.judging.records import judge_file
from mmrag.metrics import cohen_kappa


# -- per-source rules, implicit deflections, number words, unparseable -------------------
@pytest.mark.parametrize(
    "question,answer,qtype,text,expected",
    [
        (
            "Are the bridge and the tower both made of granite?",
            "Yes, the bridge and the tower are both made of granite.",
            "YesNo",
            "Yes.",
            "correct",
        ),
        (
            "Are the bridge and the tower both made of granite?",
            "Yes, the bridge and the tower are both made of granite.",
            "YesNo",
            "No, the tower is brick.",
            "hallucination",
        ),
        ("What color is the roof of the station?", "The roof of the station is green.", "color", "Green.", "correct"),
        (
            "What color is the roof of the station?",
            "The roof of the station is green.",
            "color",
            "It's red.",
            "hallucination",
        ),
        (
            "What color is the roof of the station?",
            "The roof of the station is green.",
            "color",
            "The roof is not green, it is grey.",
            "hallucination",
        ),
        (
            "What shape is the window above the door?",
            "The window above the door is round.",
            "shape",
            "A circular window.",
            "correct",
        ),
        ("How many arches does the aqueduct have?", "The aqueduct has forty-seven arches.", "number", "47", "correct"),
        ("How many arches does the aqueduct have?", "The aqueduct has 47 arches.", "number", "forty-seven", "correct"),
        (
            "How many arches does the aqueduct have?",
            "The aqueduct has 47 arches.",
            "number",
            "It has 35.",
            "hallucination",
        ),
        (
            "Which is taller, the clock tower or the bell tower?",
            "The clock tower is taller than the bell tower.",
            "choose",
            "The clock tower.",
            "correct",
        ),
        (
            "Which is taller, the clock tower or the bell tower?",
            "The clock tower is taller than the bell tower.",
            "choose",
            "The bell tower is taller.",
            "hallucination",
        ),
        (
            "What animal is carved above the entrance?",
            "A lion is carved above the entrance.",
            "Others",
            "There is a lion above the entrance.",
            "correct",
        ),
        (
            "What animal is carved above the entrance?",
            "A lion is carved above the entrance.",
            "Others",
            "An eagle.",
            "unparseable",  # another animal, but no rule lists the item's animals: a reader's call
        ),
    ],
)
def test_webqa_sentence_references_by_qcate(question, answer, qtype, text, expected):
    v = RuleJudge().judge(*src_item("webqa", question, [answer], text, qtype=qtype))
    assert v.outcome == expected, (v.reason, v.details)
    assert v.details["answer_rule"] == "webqa" and v.details["qcate"] == qtype


@pytest.mark.parametrize(
    "question,text",
    [
        ("When was this company founded?", "Nothing in these passages gives the founding year."),
        ("What does the sign say?", "The sign's lettering can't be read at this resolution."),
        ("Who was the first director of this museum?", "The article covers the founders but never names a director."),
        ("How many people are on the balcony?", "The picture is too dark to count them."),
        ("What is the statue holding?", "The passages describe the statue's history but say nothing of what it holds."),
    ],
)
def test_implicit_deflections_are_deflections(question, text):
    v = RuleJudge().judge(*src_item("infoseek", question, ["1923"], text))
    assert v.outcome == "deflection", (v.reason, v.details)


def test_a_guess_is_not_a_deflection_and_a_bare_name_is_an_answer():
    j = RuleJudge()
    v = j.judge(
        *src_item(
            "infoseek",
            "What is the name of this lake?",
            ["Lake Bled"],
            "The passages don't name it, but it's probably Lake Bohinj.",
        )
    )
    assert v.outcome == "unparseable" and v.details["undecided"]  # a guess, but not a checkable conflict
    v = j.judge(
        *src_item(
            "mmdocrag",
            "Which segment contributed most to operating income?",
            ["The cloud services segment contributed the most to operating income."],
            "The hardware segment.",
        )
    )
    assert v.outcome == "unparseable"  # another segment: no rule lists the item's segments


def test_number_words_everywhere():
    from mmrag.judging import digits_for_words

    assert (
        digits_for_words("There are forty-seven steps and one hundred and two doors.")
        == "There are 47 steps and 102 doors."
    )
    assert digits_for_words("two and a half") == "2.5"  # not "2 and a half": the value is 2.5
    j = RuleJudge()
    assert (
        j.judge(*src_item("infoseek", "How many species?", ["47"], "forty-seven", ranges=[(42.3, 51.7)])).outcome
        == "correct"
    )
    assert (
        j.judge(*src_item("viquae", "How many children did he have?", ["47"], "He had forty-seven.")).outcome
        == "correct"
    )
    assert (
        j.judge(
            *src_item(
                "infoseek",
                "How tall is it?",
                ["330"],
                "roughly three hundred and twenty-four metres",
                ranges=[(297, 363)],
            )
        ).outcome
        == "correct"
    )


def test_evqa_multi_answer_iou():
    j = RuleJudge()
    q, parts = "In which months does it flower?", {"answer_parts": [["June", "July"]]}
    assert (
        j.judge(*src_item("evqa", q, ["June, July"], "In June and July.", qtype="multi_answer", meta=parts)).outcome
        == "correct"
    )
    # half the list: the official IoU rule credits it, every labelled set calls it wrong -- the IoU call
    # is kept in details, the verdict is undecided and the learned combiner sides with the labels
    v = j.judge(*src_item("evqa", q, ["June, July"], "June.", qtype="multi_answer", meta=parts))
    assert v.details["multi_answer_iou"] == 0.5 and v.details["official_credit"] and v.outcome == "hallucination"
    assert (
        j.judge(
            *src_item("evqa", q, ["June && July"], "June, August, September, October.", qtype="multi_answer")
        ).outcome
        == "hallucination"
    )  # IoU 1/5
    assert (
        j.judge(*src_item("evqa", q, ["June && July"], "March and April.", qtype="multi_answer")).outcome
        == "hallucination"
    )


def test_a_reply_no_rule_can_decide_is_unparseable_and_counted(tmp_path):
    v = RuleJudge().judge(*src_item("viquae", "What is this?", ["Lyon"], "Hmm, well, let me see."))
    assert v.outcome in ("unparseable", "deflection")
    rows = [
        {"id": "u1", "question": "What is the dog's breed?", "answers": [], "response": "A beagle."},
        {"id": "u2", "question": "Q?", "answers": ["x"], "response": "x"},
    ]
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stats = judge_file(f, tmp_path / "out.jsonl", RuleJudge())
    assert stats["counts"] == {"unparseable": 1, "correct": 1}


def test_rule_judge_kappa_on_tuning_data_per_source(tmp_path):
    tuning = Path(__file__).parent / "labels" / "judge_tuning.jsonl"
    out = tmp_path / "t.jsonl"
    judge_file(tuning, out, RuleJudge())
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    decided = [r for r in rows if r["outcome"] != "unparseable"]
    kappa = cohen_kappa([r["label"] for r in decided], [r["outcome"] for r in decided])
    print(f"kappa over decided {kappa:.3f}, coverage {len(decided) / len(rows):.3f}")
    assert kappa >= 0.95 and len(decided) / len(rows) >= 0.8 and len({r["source"] for r in rows}) == 8
