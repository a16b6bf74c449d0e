"""Issue 12, round 2: paraphrased sentence answers, quantities with units, scale words, raw E-VQA
alternatives, surnames inside sentences, implicit deflections, and the tuning set 2 agreement."""
from __future__ import annotations

from pathlib import Path

import pytest

from mmrag.judging import RuleJudge
from mmrag.judging.numwords import digits_for_words
from mmrag.judging.paraphrase import Guards, target_text
from mmrag.judging.quantity import compare, quantities
from mmrag.judging.records import judge_file
from mmrag.metrics.agreement import agreement
from mmrag.schema import ContentPart, Message, Prompt, Response, Sample

JUDGE = RuleJudge()


def judged(source, question, answers, text, **meta):
    s = Sample(id="s1", benchmark="t", source=source, question=question, answers=list(answers), metadata=meta)
    p = Prompt(sample_id="s1", messages=[Message(role="user", content=[ContentPart(type="text", text=question)])])
    return JUDGE.judge(s, p, Response(prompt_id=p.id, text=text))


def test_scale_words_money_and_hyphenated_units_are_read_as_numbers():
    assert digits_for_words("12 million dollars") == "12000000 dollars"
    assert digits_for_words("fifteen million") == "15000000"
    assert digits_for_words("It rose to $15M.") == "It rose to $15000000."
    assert digits_for_words("a two-year warranty") == "a 2 year warranty"
    assert digits_for_words("forty-seven") == "47"


@pytest.mark.parametrize("ref, reply, call", [
    ("2 metres", "Up to about two meters.", "gives"),
    ("7 cm", "About seventy millimetres.", "gives"),
    ("a two-year warranty", "Twenty-four months.", "gives"),
    ("200 cm", "It grows to around 5 metres.", "contradicts"),
    ("a two-year warranty", "One year.", "contradicts"),
    ("47", "forty-seven", None),              # no unit on either side: other rules decide
    ("2 metres", "It weighs 2 kg.", None),    # other dimension
])
def test_quantities_compare_after_unit_conversion(ref, reply, call):
    assert compare(ref, reply) == call
    assert quantities("3 km") == (("length", 3000.0),)


def test_guards_block_opposites_other_colours_new_numbers_and_negation():
    g = Guards()
    ref = "Carbon emissions declined steadily after 2015."
    assert g.blocked("What trend?", ref, "Emissions kept rising.") == "opposite direction"
    assert g.blocked("What colour is it?", "The roof of the station is green.", "It's red.") == "other colour"
    assert g.blocked("Why?", "Because demand fell in Europe.", "Demand fell 8% in Europe.") == "number not in the reference"
    assert g.blocked("Why?", "Because demand fell in Europe.", "Demand never fell.") == "negation"
    assert g.blocked("What trend?", ref, "A steady decrease.") is None
    assert target_text("What trend does the graph show for carbon emissions after 2015?", ref) == "declined steadily"


@pytest.mark.parametrize("text, outcome", [
    ("Mostly softer European demand.", "correct"),                  # paraphrase (MiniLM, guarded)
    ("The report blames reduced demand across Europe.", "correct"),
    ("It was due to a supply shortage of components in Asia.", "hallucination"),
    ("The filing discusses revenue by segment but does not explain why it dropped.", "deflection"),
])
def test_mmdocrag_paraphrased_sentence_answers(text, outcome):
    v = judged("mmdocrag", "What was the main reason given for the decline in quarterly revenue?",
               ["The decline in quarterly revenue was mainly caused by weaker demand in the European market."], text)
    assert v.outcome == outcome, v.reason
    if outcome == "correct":
        assert v.details["decided"] is False  # rule+llm re-checks every paraphrase call


def test_direction_and_amounts_in_a_sentence_reference():
    q, ref = "How did net profit change from 2019 to 2020?", ["Net profit increased from 12 million dollars in 2019 to 15 million dollars in 2020."]
    assert judged("mmdocrag", q, ref, "It rose from $12M to $15M.").outcome == "correct"
    assert judged("mmdocrag", q, ref, "It fell from 15 million to 12 million.").outcome == "hallucination"
    assert judged("mmdocrag", q, ref, "It increased to 18 million dollars.").outcome == "hallucination"


def test_short_names_are_never_credited_by_similarity():
    # "Sydney" sits next to "Canberra" in embedding space; only sentence references use the signal
    assert judged("viquae", "What is the capital?", ["Canberra"], "Sydney.").outcome == "hallucination"


def test_raw_evqa_alternatives_units_and_surnames():
    assert judged("evqa", "Which river flows through this city?", ["Danube|Donau"], "The Donau.").outcome == "correct"
    assert judged("evqa", "How tall can this plant grow?", ["2 metres|2 m"], "Up to about two meters.").outcome == "correct"
    assert judged("evqa", "Who designed this bridge?", ["Gustave Eiffel"], "It was designed by Eiffel.").outcome == "correct"
    assert judged("evqa", "Who designed this bridge?", ["Gustave Eiffel"], "Brunel, not Eiffel.").outcome != "correct"


@pytest.mark.parametrize("text", [
    "The passage gives its flowering season, not its height.",
    "There's no mention of how many people live there.",
    "The banner is partly folded so the writing can't be read.",
    "I can't make out what it says.",
    "The top of the plant is out of frame in this photo.",
    "The plant is cropped at the top of the picture.",
])
def test_more_implicit_deflections(text):
    assert judged("infoseek", "How tall can this plant grow?", ["2 metres"], text).outcome == "deflection"


def test_rule_judge_kappa_on_tuning_set_2(tmp_path):
    tuning = Path(__file__).parent / "data" / "judge_tuning2.jsonl"
    out = tmp_path / "t2.jsonl"
    judge_file(tuning, out, RuleJudge())
    res = agreement(tuning, out, field_a="label")
    assert res["kappa"] >= 0.85
