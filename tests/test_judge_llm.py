"""The LLM judge and rule+llm: reading a grader's A/B/C reply, mapping grades to outcomes without
ever defaulting, sending only the replies the rules leave undecided, the judge registry's modes, and
the SimpleQA grader template kept verbatim with its source."""

from __future__ import annotations

import pytest
from judgeinputs import CH, ScriptedJudgeModel, item

from mmrag.errors import InputError
from mmrag.judging import JUDGES, LLMJudge, RuleJudge, RuleThenLLMJudge, make_judge, parse_grade
from mmrag.judging.llm import GRADER_TEMPLATE, grader_template
from mmrag.schema import DEFLECTION_PHRASE


# -- LLM judge -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply,grade",
    [
        ("A", "A"),
        (" **B** ", "B"),
        ("(C).", "C"),
        ("Grade: B", "B"),
        ("B (INCORRECT)", "B"),
        ("CORRECT", "A"),
        ("NOT_ATTEMPTED", "C"),
        ("not attempted", "C"),
        ("INCORRECT", "B"),
        ("A or B", None),
        ("", None),
        ("I think the answer is fine", None),
        ("D", None),
    ],
)
def test_parse_grade(reply, grade):
    assert parse_grade(reply) == grade


def test_llm_judge_maps_grades_and_never_defaults():
    script = {"Lyon": "B", "Paris": "A", "dunno": "C", "garbled": "The model seems ok-ish", "boom": ("timeout",)}
    model = ScriptedJudgeModel(lambda t: next(v for k, v in script.items() if f"Predicted answer: {k}\n" in t))
    judge = LLMJudge(model)
    items = [item(text=t) for t in ("Paris", "Lyon", "dunno", "garbled", "boom")] + [item(text="x", error="other")]
    verdicts = judge.judge_many(items)
    assert [v.outcome for v in verdicts] == [
        "correct",
        "hallucination",
        "deflection",
        "unparseable",
        "unparseable",
        "unparseable",
    ]
    assert "judge error: timeout" in verdicts[4].reason and "request failed: other" in verdicts[5].reason
    assert len(model.calls) == 1 and len(model.calls[0]) == 5  # one batch; failed request not sent
    prompt_text = model.calls[0][0].messages[-1].text()
    assert "Gold target: Paris\n" in prompt_text and judge.judge_id.endswith("scripted-judge")
    assert prompt_text == GRADER_TEMPLATE.format(question="Q?", target="Paris", predicted_answer="Paris")
    assert [m.role for m in model.calls[0][0].messages] == ["user"]  # no system prompt, as simple-evals


def test_rule_then_llm_sends_only_undecided_items():
    model = ScriptedJudgeModel(lambda t: "A")
    judge = RuleThenLLMJudge(RuleJudge(), LLMJudge(model))
    items = [
        item(text="Paris"),
        item(text=DEFLECTION_PHRASE),
        item(question="Who designed the tower?", answers=["Gustave Eiffel"], text="It was designed by Eiffel."),
        item(text="Something with fur.", choices=CH, label="A"),
        item(text="Lyon."),
        item(text="B or C", choices=CH, label="A"),
        item(text="", error="timeout"),
    ]
    verdicts = judge.judge_many(items)
    # only the three undecided replies: "Lyon." is not the reference, but nothing a rule can check
    # says it conflicts with it (no number, no option, no closed class): absence never decides
    assert sum(len(c) for c in model.calls) == 3
    assert [v.details["judged_by"] for v in verdicts] == ["rules", "rules", "llm", "llm", "llm", "rules", "rules"]
    assert verdicts[2].outcome == "correct" and verdicts[2].details["rule_outcome"] == "unparseable"
    assert verdicts[2].details["rule_reason"].startswith("undecided:")
    assert "official_correct" in verdicts[3].details
    assert [v.outcome for v in verdicts[4:]] == ["correct", "hallucination", "unparseable"]  # the script grades A
    assert verdicts[0].evidence is not None and verdicts[0].evidence.reference == "Paris"


def test_judge_registry_and_modes():
    assert {"rule", "llm", "rule+llm", "mcq", "knowhal"} <= set(JUDGES.names())
    with pytest.raises(InputError):
        make_judge("llm")
    with pytest.raises(InputError):
        make_judge("no-such-judge")
    assert isinstance(make_judge("rule+llm", llm=ScriptedJudgeModel(lambda t: "A")), RuleThenLLMJudge)


def test_simpleqa_grader_template_is_verbatim_data_with_its_source():
    text, meta = grader_template()
    assert meta["source"]["repo"] == "openai/simple-evals" and meta["source"]["license"] == "MIT"
    assert text.startswith("Your job is to look at a question, a gold target, and a predicted answer")
    assert text.count("Predicted answer 4:") == 3  # incl. the original's duplicate, kept
    assert text.endswith('Just return the letters "A", "B", or "C", with no text around it.')
    assert all(f"{{{p}}}" in text for p in meta["placeholders"]) and text.count("{") == 3
