"""The rule judge's reading steps one by one: final answer, refusal, quantities, slot
contradictions; the kinds of reply the judge must get right; the one policy for cut-off replies.
(The scorers of the cascade, each on its own, are in test_judge_scorers.py.)"""

from __future__ import annotations

import pytest
from judgeitems import judge

from mmrag.judging import RuleJudge
from mmrag.judging.contradict import conflicts
from mmrag.judging.final import final_answer
from mmrag.judging.lexicon import clean, closed_class, direction, names, sentences, words
from mmrag.judging.quantity import compare, quantities
from mmrag.judging.refusal import DEFAULT_DETECTOR


# -- the final answer ------------------------------------------------------------
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


def test_a_cut_off_reply_is_never_judged_by_any_judge():
    """One owner: the judge and the run engine give a cut-off reply the same verdict."""
    from mmrag.runs.pipeline import engine_verdict
    from mmrag.schema import Response

    v = judge("Capital?", ["Paris"], "Paris is the capital", finish_reason="length")
    assert v.outcome == "unparseable" and not v.details.get("undecided") and "finish_reason=length" in v.reason
    e = engine_verdict(Response(prompt_id="p", text="Paris is the capital", finish_reason="length"))
    assert e is not None and e.reason == v.reason and e.outcome == v.outcome
    failed = engine_verdict(Response(prompt_id="p", text="", error="timeout"))
    assert failed is not None and failed.reason == "request failed: timeout"
    # a reply that stops mid-clause without saying so is read like any other
    assert judge("Who designed the bridge?", ["Gustave Eiffel"], "The bridge was designed by").outcome == "unparseable"


# -- the lexicon ------------------------------------------------------------------------------------
def test_lexicon_format_characters_never_split_a_word():
    assert clean("Pa\u200bris\u00ad") == "Paris" and words("Da\u200dnube") == ("danube",)
    assert judge("Capital?", ["Paris"], "It is Pa\u200bris.").outcome == "correct"
    assert sentences("One. Two!\nThree; four") == ["One.", "Two!", "Three", "four"]
    assert names("It was built for Louis XIV in Paris.") == {"Louis", "XIV", "Paris"}
    assert closed_class("gray") == "colour" and direction(words("it rose sharply")) == 1


# -- refusals -------------------------------------------------------------------------------
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


# -- quantities (pint) ----------------------------------------------------------------------
def test_quantities_convert_units():
    assert compare("7 cm", "70 mm") == "gives" and compare("2 years", "24 months") == "gives"
    assert compare("1,200 metres", "1,200 feet") == "contradicts"
    assert compare("24 °C", "75 °F") == "gives"
    # written in one unit, one number: a rounder or transposed figure is not the reference's
    assert compare("18,460 kg", "18,640 kg") == "contradicts" and compare("324 m", "300 m") == "contradicts"
    assert compare("£2,418.37", "two thousand four hundred and eighteen pounds and thirty-seven pence") == "gives"
    assert [q.dim for q in quantities("It is 5 in wide and 3 in a row")] == ["count", "count"]  # "in" is no unit
    assert quantities("1 hour and 25 minutes")[0].value == 85 * 60


# -- contradictions per slot kind -----------------------------------------------------------
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


# -- the whole judge on kinds of reply ---------------------------------------------------------------
def test_final_answer_wins_other_language_matches_and_surname_only_is_undecided():
    assert judge("When was it built?", ["1887"], "Built in 1887 ... so the answer is 1902.").outcome == "hallucination"
    v = judge("Who built it?", ["Louis XIV"], "It was built for Louis XVI.")  # a name sharing a word: a reader's call
    assert v.outcome == "unparseable" and v.details["undecided"] == "unchecked conflict"
    assert judge("Capital of France?", ["Paris"], "La capitale de la France est Paris.").outcome == "correct"
    v = judge("Who designed the tower?", ["Gustave Eiffel"], "It was designed by Eiffel.")
    assert v.outcome == "unparseable" and v.details["undecided"] == "weak match" and v.evidence is None


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
    assert [r["outcome"] for r in out] == ["unparseable", "correct"]  # cut off: never judged
    assert "finish_reason=length" in out[0]["judge_reason"]
    f.write_text(json.dumps({**rows[0], "finish_reason": 3}) + "\n")
    with pytest.raises(InputError) as exc:
        judge_file(f, tmp_path / "o2.jsonl", RuleJudge())
    assert exc.value.field == "finish_reason"
