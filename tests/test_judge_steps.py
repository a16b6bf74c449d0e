"""The rule judge's steps one by one: final answer and truncation, refusal, quantities, slot
contradictions, the decision from typed signals, and the kinds of reply the judge must get right."""

from __future__ import annotations

import pytest
from judgeitems import judge

from mmrag.judging import RuleJudge, Signals, decide
from mmrag.judging.contradict import conflicts
from mmrag.judging.final import cut_off, final_answer
from mmrag.judging.lexicon import clean, closed_class, direction, names, sentences, words
from mmrag.judging.quantity import compare, quantities
from mmrag.judging.refusal import DEFAULT_DETECTOR


# -- step 1: final answer and truncation ------------------------------------------------------------
@pytest.mark.parametrize(
    "text,answer,method",
    [
        ("Built in 1887 ... so the answer is 1902.", "1902.", "marker"),
        ("<think>maybe Lyon</think>Paris", "Paris", "think"),
        ("<think>...</think><answer>C</answer>", "C", "tag"),
        ("Let me reason.\nThe river runs north.\n**Danube**", "Danube", "bold line"),
        ("Final answer: Vltava", "Vltava", "marker"),
        (
            "1953 - no, sorry, that was the second ascent; the first was 1952.",
            "that was the second ascent; the first was 1952.",
            "correction",
        ),
        ("Paris", "Paris", "whole"),
    ],
)
def test_final_answer(text, answer, method):
    f = final_answer(text)
    assert (f.answer, f.method) == (answer, method)


@pytest.mark.parametrize(
    "text,finish,cut",
    [
        ("The bridge was designed by", None, True),
        ("It was built in 1887 and", None, True),
        ("<think>First I look at the", None, True),
        ("Paris", None, False),
        ("It is Paris.", None, False),
        ("It is Paris.", "length", True),
        ("The answer is 42", None, False),
    ],
)
def test_cut_off(text, finish, cut):
    assert cut_off(text, finish) is cut


def test_a_cut_off_reply_is_never_correct():
    assert judge("Who designed the bridge?", ["Gustave Eiffel"], "The bridge was designed by").outcome == "deflection"
    assert judge("Capital?", ["Paris"], "Paris is the capital", finish_reason="length").outcome == "deflection"
    v = judge("When was it built?", ["1887"], "It was built in 1902, after the fire of", finish_reason="length")
    assert v.outcome == "hallucination"  # it already asserted something wrong


# -- the lexicon ------------------------------------------------------------------------------------
def test_lexicon_format_characters_never_split_a_word():
    assert clean("Pa\u200bris\u00ad") == "Paris" and words("Da\u200dnube") == ("danube",)
    assert judge("Capital?", ["Paris"], "It is Pa\u200bris.").outcome == "correct"
    assert sentences("One. Two!\nThree; four") == ["One.", "Two!", "Three", "four"]
    assert names("It was built for Louis XIV in Paris.") == {"Louis", "XIV", "Paris"}
    assert closed_class("gray") == "colour" and direction(words("it rose sharply")) == 1


# -- step 2: refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Nothing in the retrieved text mentions what the larvae eat.",
        "The statue's hands are outside the frame.",
        "The text mentions his wife Wanda but not her father.",
        "The tail is out of frame in this shot.",
        "The builder's plate on the smokebox is too corroded to read.",
        '{"answer": null, "reason": "not shown"}',
    ],
)
def test_implicit_refusals(text):
    assert DEFAULT_DETECTOR.analyse(text).is_deflection


def test_a_guess_after_a_refusal_is_judged():
    a = DEFAULT_DETECTOR.analyse("The passages do not say, but it is probably the Vltava.")
    assert not a.is_deflection and a.guess


# -- step 3: quantities (pint) ----------------------------------------------------------------------
def test_quantities_convert_units():
    assert compare("7 cm", "70 mm") == "gives" and compare("2 years", "24 months") == "gives"
    assert compare("1,200 metres", "1,200 feet") == "contradicts"
    assert compare("24 °C", "75 °F") == "gives"
    assert [q.dim for q in quantities("It is 5 in wide and 3 in a row")] == ["count", "count"]  # "in" is no unit
    assert quantities("1 hour and 25 minutes")[0].value == 85 * 60


# -- step 4: contradictions per slot kind -----------------------------------------------------------
@pytest.mark.parametrize(
    "ref,reply,kind",
    [
        ("The operating margin was 14.8 %.", "The operating margin was 18.4 %.", "amount"),
        ("It rises 1,200 metres.", "It rises 1,200 feet.", "amount"),
        ("The bridge has five arches.", "The bridge has three arches.", "count"),
        ("40 % women and 60 % men", "60 % women, 40 % men", "swap"),
        (
            "It paid $1 billion in dividends and $2 billion in buybacks.",
            "It paid $2 billion in dividends.",
            "attribution",
        ),
        ("Sales fell from 35 % to 31 %.", "Sales rose from 31 % to 35 %.", "direction"),
        ("The roof is green.", "The roof is red.", "class"),
        ("It was built for Louis XIV.", "It was built for Louis XVI.", "entity"),
        ("Uppsala University", "Lund University", "entity"),
        ("Plato", "Socrates and Plato.", "rival"),
    ],
)
def test_conflicts(ref, reply, kind):
    assert kind in {c.kind for c in conflicts([ref], reply, "What is it?")}


def test_aliases_are_not_rival_answers():
    assert conflicts(["travertine"], "The dome is made of travertine, also called tufa.", "What is it made of?") == []
    assert (
        judge("What is the dome made of?", ["travertine", "tufa"], "Travertine, also called tufa.").outcome == "correct"
    )
    # an alias no reference lists cannot be checked offline: undecided, not credited
    v = judge("What is the dome made of?", ["travertine"], "Travertine, also called tufa.")
    assert v.outcome == "unparseable" and v.details["undecided"] == "unlisted alias"


# -- step 5: decide or abstain ----------------------------------------------------------------------
def test_decide_reads_only_typed_signals():
    assert decide(Signals(match="gives"))[0] == "correct"
    out, reason, why = decide(Signals(match="gives", match_certain=False, match_kind="name"))
    assert out == "unparseable" and reason.startswith("undecided:") and why == "weak match"
    assert decide(Signals(match="absent", candidate=True))[0] == "hallucination"
    assert decide(Signals(match="absent", refusal="bare"))[0] == "deflection"
    assert decide(Signals(match="absent", cut_off=True, candidate=True))[0] == "deflection"
    assert decide(Signals(match="gives", cut_off=True))[0] == "correct"  # cut off after the answer


def test_final_answer_wins_other_language_matches_and_surname_only_is_undecided():
    assert judge("When was it built?", ["1887"], "Built in 1887 ... so the answer is 1902.").outcome == "hallucination"
    assert judge("Who built it?", ["Louis XIV"], "It was built for Louis XVI.").outcome == "hallucination"
    assert judge("Capital of France?", ["Paris"], "La capitale de la France est Paris.").outcome == "correct"
    v = judge("Who designed the tower?", ["Gustave Eiffel"], "It was designed by Eiffel.")
    assert v.outcome == "unparseable" and v.details["undecided"] == "weak match" and v.details["signals"]["match"]


def test_judge_records_take_an_optional_finish_reason(tmp_path):
    import json

    from mmrag.errors import InputError
    from mmrag.judging.records import judge_file

    rows = [
        {
            "id": "a",
            "question": "Capital?",
            "answers": ["Paris"],
            "response": "Paris is the",
            "finish_reason": "length",
        },
        {"id": "b", "question": "Capital?", "answers": ["Paris"], "response": "It is Paris.", "finish_reason": "stop"},
    ]
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judge_file(f, tmp_path / "out.jsonl", RuleJudge())
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["outcome"] for r in out] == ["deflection", "correct"]
    f.write_text(json.dumps({**rows[0], "finish_reason": 3}) + "\n")
    with pytest.raises(InputError) as exc:
        judge_file(f, tmp_path / "o2.jsonl", RuleJudge())
    assert exc.value.field == "finish_reason"
