"""Issue 12: refusals in other languages, how much of a reply the reference supports, replies only
vaguer than the gold, and the number forms people write (collective counts, clock times, scales).

Every example below was written for this test; none is taken from a labelled file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrag.judging import RuleJudge, digits_for_words, is_deflection
from mmrag.judging.language import foreign_refusal, language_of
from mmrag.judging.records import record_to_item
from mmrag.judging.slots import known, slot_features, spoken_numbers
from mmrag.judging.paraphrase import default_guards
from mmrag.judging.quantity import unmatched
from mmrag.judging.support import support_features, unsupported_claim


@pytest.mark.parametrize("text, lang", [
    ("Die Unterlagen enthalten keine Angabe zum Baujahr.", "de"),
    ("Le rapport ne donne aucune indication sur la date.", "fr"),
    ("El documento no menciona la fecha de apertura.", "es"),
    ("Il testo non riporta il nome dell'architetto.", "it"),
    ("O relatório não indica o ano de construção.", "pt"),
    ("De tekst vermeldt geen bouwjaar.", "nl"),
    ("この資料からは建設年が分かりません。", "ja"),
])
def test_refusals_in_other_languages_are_deflections(text, lang):
    assert foreign_refusal(text) == lang
    assert is_deflection(text)


@pytest.mark.parametrize("text", [
    "Raman won it.", "Gate B17, boarding at 06:45.", "1823, in London.", "No, both are granite.",
    "Die Brücke ist aus Granit.",          # another language, but it asserts, it does not deny
    "Nein.",                               # a bare yes/no answer in another language is an answer
])
def test_english_and_assertions_are_not_foreign_refusals(text):
    assert foreign_refusal(text) is None


def test_short_english_is_not_called_foreign():
    assert language_of("Raman won it.") is None and language_of("It'll be hot.") is None


REF = ("The payslip shows a net pay of $3,482.17 for March, after deductions of $1,017.83 from a gross "
       "salary of $4,500.00.")


def test_support_is_precision_against_the_reference():
    q = "What is the employee's net pay on the payslip?"
    assert support_features("$3,482.17", q, [REF])["support"] == 1.0
    wrong = support_features("Overtime bonus of $300.", q, [REF])
    assert wrong["support"] < 0.5 and wrong["unsupported"] > 0


@pytest.mark.parametrize("reply, gold, flag", [
    ("In the 1950s.", "1954", "vague_decade"),
    ("Sometime in the 19th century.", "1854", "vague_decade"),
    ("Somewhere in Central Asia.", "Turkmenistan", "vague_region"),
    ("More than ten tonnes.", "18,240 kg", "vague_bound"),
    ("Some kind of herding dog.", "Border Collie", "vague_kind"),
])
def test_vaguer_than_the_gold(reply, gold, flag):
    assert support_features(reply, "When / where / what?", [gold])[flag] == 1.0


def test_a_decade_that_misses_the_year_is_not_vague():
    assert support_features("In the 1960s.", "When?", ["1954"])["vague_decade"] == 0.0


@pytest.mark.parametrize("text, digits", [
    ("A pair of horses.", "2 horses."), ("a single car", "1 car"), ("half a dozen eggs", "6 eggs"),
    ("Usually a pair.", "Usually 2."), ("Roughly a hundred and ten.", "Roughly 110."),
    ("Seventeenth century, finished later", "17th century, finished later"),
    ("first, it rained", "first, it rained"),            # an ordinal only before century / floor / ...
])
def test_collective_counts(text, digits):
    assert digits_for_words(text) == digits


def test_spoken_numbers_read_clocks_dates_and_list_marks():
    assert spoken_numbers("boarding 6:45 am, 2pm to 3:30pm, at 06:45") == ["6:45", "14:00", "15:30", "6:45"]
    assert spoken_numbers("due 14/03/2024") == ["14", "3", "2024"]
    assert spoken_numbers("1. Stop the pump\n2. Close the clamp") == []
    assert spoken_numbers("a two-year warranty with four sails") == ["2", "4"]


def test_known_numbers_at_another_scale_but_not_small_counts():
    assert known("1300", {"1.3"}) and known("18.24", {"18240"}) and known("1800000", {"1.8"})
    assert not known("2", {"2000"}) and not known("4836.20", {"4386.20"})


def test_num_alien_ignores_number_words_one_and_two():
    f = slot_features("No - one is orange, the other is pink.", "Are both the same colour?",
                      ["No, the first has an orange throat while the second has a pink crown."])
    assert f["num_alien"] == 0.0


@pytest.mark.parametrize("response, answers, outcome", [
    ("1.d4 d5 2.c4, the Queens Gambit.", ["Queen's Gambit"], "correct"),           # possessive dropped
    ("Looks like a Friesian: jet black, feathered legs.", ["Friesian"], "correct"),  # colon after the name
    ("It's endemic to northern Viet Nam.", ["Vietnam"], "correct"),                   # words split
    ("Sea World Orlando.", ["SeaWorld"], "correct"),
])
def test_containment_tolerates_possessives_and_punctuation(response, answers, outcome):
    rec = dict(source="mragbench", question="Which one is shown?", answers=answers, response=response)
    v = RuleJudge().judge(*record_to_item(rec, Path("inline"), 1))
    assert v.outcome == outcome, v.reason


@pytest.mark.parametrize("response, outcome", [
    ("Yellow with white centres.", "hallucination"),   # the two colours, attributed the other way round
    ("White.", "correct"),                              # the colour asked about, the rest left out
    ("White flowers, yellow in the middle.", "correct"),
    ("Pink.", "hallucination"),
])
def test_webqa_colour_attribution(response, outcome):
    rec = dict(source="webqa", question="What colour is the flower of this cactus?", question_type="color",
               answers=["The cactus has white flowers with yellow centres."], response=response)
    v = RuleJudge().judge(*record_to_item(rec, Path("inline"), 1))
    assert v.outcome == outcome, v.reason


# -- round 8: rounded and graded values, contrasts, quantities beside the right one ---------------
GLUCOSE = "Fasting plasma glucose was 6.4 mmol/L, in the impaired fasting glucose range of 6.1 to 6.9 mmol/L."


@pytest.mark.parametrize("reply, approx, grade", [
    ("Roughly ninety thousand euros.", 1.0, 0.0),
    ("Slightly high.", 0.0, 1.0),
    ("6.4 mmol/L, slightly high.", 0.0, 0.0),     # the figure itself: graded words beside it are fine
    ("6.4 mmol/L.", 0.0, 0.0),
])
def test_rounded_or_graded_instead_of_the_figure(reply, approx, grade):
    f = support_features(reply, "What does the panel report as fasting glucose?", [GLUCOSE])
    assert (f["vague_approx"], f["vague_grade"]) == (approx, grade)


def test_unsupported_word_beside_a_credited_figure_goes_to_the_combiner():
    q, ref = "What is the declared net weight?", "Box 38 gives a net mass of 12,480 kg for the consignment."
    assert unsupported_claim("12,480 kg gross.", q, [ref]) is not None
    assert unsupported_claim("12,480 kg.", q, [ref]) is None
    assert unsupported_claim("Gross.", "What is it made of?", ["granite"]) is None   # short reference


@pytest.mark.parametrize("reply, blocked", [
    ("USD 42,750 on FOB terms.", "other incoterm"),
    ("12,480 kg gross.", "other weight basis"),
    ("185 cm at the village.", "other resort place"),
    ("USD 42,750 on CIF terms.", None),
    ("EUR 42,750, CIF.", "other currency"),
    ("US$42,750 on CIF terms.", None),                 # a symbol is its currency's code
])
def test_document_contrast_classes(reply, blocked):
    refs = {"EUR": "The shipment is declared at a customs value of USD 42,750 on CIF terms.",
            "US$": "The shipment is declared at a customs value of USD 42,750 on CIF terms.",
            "USD": "The shipment is declared at a customs value of USD 42,750 on CIF terms.",
            "12,": "Box 38 gives a net mass of 12,480 kg for the consignment.",
            "185": "The snow report gives a summit depth of 185 cm."}
    assert default_guards().blocked("What does the document give?", refs[reply[:3]], reply) == blocked


def test_a_second_amount_of_the_same_kind_is_not_decided():
    assert unmatched("18.8 m", "12 metres, or possibly 18.8 metres.")
    assert not unmatched("18.8 m", "18.8 metres (about 62 ft).")   # the same length in feet
    assert not unmatched("18.8 m", "18.8 metres.")
    assert digits_for_words("a score of 88%") == "a score of 88%"
