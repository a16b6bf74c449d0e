"""Judges: deflection patterns, open-answer rules, MCQ extraction, LLM judge modes, KnowHal, the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrag.errors import InputError
from mmrag.judging import (
    JUDGES,
    KnowHalJudge,
    LLMJudge,
    RuleJudge,
    RuleThenLLMJudge,
    extract_choice,
    is_deflection,
    make_judge,
    parse_grade,
    rejects_premise,
)
from mmrag.judging.llm import GRADER_TEMPLATE, grader_template
from mmrag.judging.records import judge_file, record_to_item
from mmrag.metrics import cohen_kappa
from mmrag.metrics.agreement import agreement
from mmrag.models.base import Capabilities
from mmrag.schema import DEFLECTION_PHRASE, Choice, ContentPart, Message, Prompt, Response, Sample

DATA = Path(__file__).parent / "labels" / "hand_labelled.jsonl"
CH = [
    Choice(letter=l, text=t, is_nota=(l == "E"))
    for l, t in zip("ABCDE", ["cat", "dog", "rabbit", "parrot", "None of the above"])
]


def item(
    question="Q?",
    answers=("Paris",),
    text="",
    *,
    choices=(),
    label=None,
    error=None,
    ranges=(),
    meta=None,
    prompt_choices=None,
    prompt_label=None,
):
    s = Sample(
        id="s1",
        benchmark="t",
        question=question,
        answers=list(answers),
        choices=list(choices),
        label=label,
        numeric_ranges=list(ranges),
        metadata=meta or {},
    )
    p = Prompt(
        sample_id="s1",
        choices=list(prompt_choices or []),
        label=prompt_label,
        messages=[Message(role="user", content=[ContentPart(type="text", text=question)])],
    )
    return s, p, Response(prompt_id=p.id, text=text, error=error)


class ScriptedJudgeModel:
    """Implements the VLM protocol; replies by a script keyed on text in the prompt."""

    fingerprint = "scripted-judge"
    capabilities = Capabilities()

    def __init__(self, script):
        self.script = script
        self.calls: list[list[Prompt]] = []

    async def agenerate(self, prompts, settings):
        return self.generate(prompts, settings)

    def generate(self, prompts, settings):
        self.calls.append(list(prompts))
        out = []
        for p in prompts:
            assert all(part.type == "text" for m in p.messages for part in m.content)
            reply = self.script(p.messages[-1].text())
            if isinstance(reply, tuple):
                out.append(Response(prompt_id=p.id, error=reply[0]))
            else:
                out.append(Response(prompt_id=p.id, text=reply))
        return out


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
        (["Paris"], "Probably Lyon.", "hallucination"),  # hedged + wrong
        (["Paris"], "It is not Paris; it is Lyon.", "hallucination"),  # negated gold
        (["Canberra"], "It is either Sydney or Canberra.", "hallucination"),  # several candidates
        (["Paris"], DEFLECTION_PHRASE, "deflection"),
        (["Paris"], "The context does not say, but from my own knowledge it is Paris.", "correct"),
        (["I Don't Know How She Does It"], "I don't know how she does it", "correct"),  # exact gold first
        (["Gaudí"], "Gaudi.", "correct"),  # accents folded
        (["cat"], "A catfish.", "hallucination"),  # whole words only
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
    assert (
        judge.judge(*item(answers=["200"], text="between 100 and 230 cm", ranges=[(180, 220)])).outcome
        == "hallucination"
    )
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
    assert kappa >= 0.95 and coverage >= 0.95


# -- multiple choice -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,letter",
    [
        ("A", "A"),
        ("(A) cat", "A"),
        ("The answer is B.", "B"),
        ("E. None of the above", "E"),
        ("None of the above.", "E"),
        ("dog", "B"),
        ("<think>long ears, so C?</think> C", "C"),
        ("<answer>C</answer>", "C"),
        ("Answer: d", "D"),
        ("a", "A"),
        ("B. a dog", "B"),
        ("**C**", "C"),
        ("Option (D) parrot", "D"),
        ("Final answer: E", "E"),
        ("A dog is sitting there", "B"),  # the article, then the option text
        ("B or C", None),
        ("", None),
        ("The answer is a dog", "B"),
        ("I see a rabbit", "C"),
    ],
)
def test_extract_choice(text, letter):
    assert extract_choice(text, CH).letter == letter


def test_mcq_outcomes_and_official_side_by_side():
    judge = RuleJudge()
    v = judge.judge(*item(text="B, a dog", choices=CH, label="B"))
    assert v.outcome == "correct" and v.details["official_correct"] is False  # official: "a" reads as A
    v = judge.judge(*item(text="E", choices=CH, label="A"))
    assert v.outcome == "hallucination" and v.details["chose_nota"] and not v.details["gold_is_nota"]
    v = judge.judge(*item(text="I cannot determine the animal from this image.", choices=CH, label="B"))
    assert v.outcome == "deflection"
    # a hedge between two options commits to neither: wrong (the labelling guide: two options at once)
    v = judge.judge(*item(text="B or C", choices=CH, label="A"))
    assert v.outcome == "hallucination" and v.details["decided"] is True and v.extracted is None
    # no option at all: undecided, never guessed
    v = judge.judge(*item(text="Something with fur.", choices=CH, label="B"))
    assert v.outcome == "unparseable" and v.reason.startswith("undecided:") and v.details["undecided"]
    v = judge.judge(*item(text="B or C", choices=CH, label="B"))
    assert v.outcome == "hallucination"
    v = judge.judge(*item(text="", choices=CH, label="A", error="server_error"))
    assert v.outcome == "unparseable" and "server_error" in v.reason


def test_mcq_uses_prompt_effective_options():
    # NOTA-only: the gold option B was removed, letters not renumbered, gold is now E
    nota_only = [c for c in CH if c.letter != "B"]
    v = RuleJudge().judge(*item(text="E", choices=CH, label="B", prompt_choices=nota_only, prompt_label="E"))
    assert v.outcome == "correct" and v.details["gold_is_nota"]
    v = RuleJudge().judge(*item(text="B", choices=CH, label="B", prompt_choices=nota_only, prompt_label="E"))
    assert v.outcome == "hallucination" and v.extracted == "B"  # the removed option is still a choice
    # shuffled: NOTA now sits at A and is found by its text
    shuffled = [
        Choice(letter="A", text="None of the above"),
        Choice(letter="B", text="dog"),
        Choice(letter="C", text="cat"),
        Choice(letter="D", text="parrot"),
        Choice(letter="E", text="rabbit"),
    ]
    v = RuleJudge().judge(*item(text="A", choices=CH, label="E", prompt_choices=shuffled, prompt_label="A"))
    assert v.outcome == "correct" and v.details["nota_letter"] == "A" and v.details["chose_nota"]


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
    assert "judge error: timeout" in verdicts[4].reason and "model error: other" in verdicts[5].reason
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
    assert sum(len(c) for c in model.calls) == 2  # only the two undecided replies
    assert [v.details["judged_by"] for v in verdicts] == ["rules", "rules", "llm", "llm", "rules", "rules", "rules"]
    assert verdicts[2].outcome == "correct" and verdicts[2].details["rule_outcome"] == "unparseable"
    assert verdicts[2].details["rule_reason"].startswith("undecided:")
    assert "official_correct" in verdicts[3].details
    assert [v.outcome for v in verdicts[4:]] == ["hallucination", "hallucination", "unparseable"]


def test_judge_registry_and_modes():
    assert {"rule", "llm", "rule+llm", "mcq", "knowhal"} <= set(JUDGES.names())
    with pytest.raises(InputError):
        make_judge("llm")
    with pytest.raises(InputError):
        make_judge("no-such-judge")
    assert isinstance(make_judge("rule+llm", llm=ScriptedJudgeModel(lambda t: "A")), RuleThenLLMJudge)


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


# -- files and CLI ---------------------------------------------------------------------------------
def test_judge_file_and_agreement(tmp_path):
    out = tmp_path / "judged.jsonl"
    stats = judge_file(DATA, out, RuleJudge())
    assert sum(stats["counts"].values()) == len(DATA.read_text().splitlines()) and stats["judged_by_llm"] == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert all({"outcome", "extracted", "judge_id", "label"} <= set(r) for r in rows)
    res = agreement(DATA, out, field_a="label")
    assert res["kappa"] >= 0.9 and res["n"] == len(rows)


def test_bad_records_name_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"question": "q", "answers": ["a"], "response": "a"})
        + "\n"
        + json.dumps({"question": "q", "answers": "a", "response": "a"})
        + "\n"
    )
    with pytest.raises(InputError) as exc:
        judge_file(bad, tmp_path / "o.jsonl", RuleJudge())
    assert exc.value.line == 2 and exc.value.field == "answers"
    assert not (tmp_path / "o.jsonl").exists()  # nothing half-written


def test_cli_commands(tmp_path):
    import typer

    from mmrag.commands.judge import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    runner = CliRunner()
    out = tmp_path / "j.jsonl"
    r = runner.invoke(app, ["judge", "--input", str(DATA), "--output", str(out), "--judge", "rule"])
    assert r.exit_code == 0, r.output
    assert Counter(json.loads(x)["outcome"] for x in out.read_text().splitlines())["correct"] > 50
    r = runner.invoke(app, ["judge-agreement", str(DATA), str(out), "--field-a", "label", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["kappa"] >= 0.9
    r = runner.invoke(app, ["judge-agreement", str(DATA), str(out), "--field-a", "label"])
    assert r.exit_code == 0 and "kappa=" in r.output and "correct" in r.output
    r = runner.invoke(app, ["judge", "--input", str(DATA), "--output", str(out), "--judge", "llm"])
    assert r.exit_code == 2 and "judge model" in r.output


# -- per-source rules, implicit deflections, number words, unparseable -------------------
def src_item(source, question, answers, text, *, qtype=None, meta=None, ranges=()):
    s, p, r = item(
        question=question,
        answers=answers,
        text=text,
        ranges=ranges,
        meta={**(meta or {}), **({"question_type": qtype} if qtype else {})},
    )
    return s.model_copy(update={"source": source}), p, r


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
            "There is a lion over the door.",
            "correct",
        ),
        (
            "What animal is carved above the entrance?",
            "A lion is carved above the entrance.",
            "Others",
            "An eagle.",
            "hallucination",
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
    assert v.outcome == "hallucination"
    v = j.judge(
        *src_item(
            "mmdocrag",
            "Which segment contributed most to operating income?",
            ["The cloud services segment contributed the most to operating income."],
            "The hardware segment.",
        )
    )
    assert v.outcome == "hallucination"


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


def test_simpleqa_grader_template_is_verbatim_data_with_its_source():
    text, meta = grader_template()
    assert meta["source"]["repo"] == "openai/simple-evals" and meta["source"]["license"] == "MIT"
    assert text.startswith("Your job is to look at a question, a gold target, and a predicted answer")
    assert text.count("Predicted answer 4:") == 3  # incl. the original's duplicate, kept
    assert text.endswith('Just return the letters "A", "B", or "C", with no text around it.')
    assert all(f"{{{p}}}" in text for p in meta["placeholders"]) and text.count("{") == 3


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
    s2, p2, r2 = item(
        question="What flavour is the cake?", answers=[], text="I can't tell what flavour it is.", meta=neg
    )
    v = RuleJudge().judge(s2.model_copy(update={"source": "knowhal"}), p2, r2)
    assert v.outcome == "deflection"  # neither affirms nor rejects the premise


def test_rule_judge_kappa_on_tuning_data_per_source(tmp_path):
    tuning = Path(__file__).parent / "labels" / "judge_tuning.jsonl"
    out = tmp_path / "t.jsonl"
    judge_file(tuning, out, RuleJudge())
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    decided = [r for r in rows if r["outcome"] != "unparseable"]
    kappa = cohen_kappa([r["label"] for r in decided], [r["outcome"] for r in decided])
    print(f"kappa over decided {kappa:.3f}, coverage {len(decided) / len(rows):.3f}")
    assert kappa >= 0.85 and len(decided) / len(rows) >= 0.85 and len({r["source"] for r in rows}) == 8
