"""Issue 12, round 13: where a restated sentence reference departs from it (word alignment),
temperatures read as quantities, and reporting verbs kept out of the key phrase.

Pure functions (no encoder) except the last test, which runs the shipped judge; every example was
written for this module, not taken from a labelled file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrag.judging import RuleJudge
from mmrag.judging.align import alignment_features, departure, tokens
from mmrag.judging.keyphrase import key_phrase
from mmrag.judging.quantity import compare, quantities, unmatched
from mmrag.judging.records import record_to_item
from mmrag.judging.slots import doubt

Q_FERRY = "Which ferry route does the timetable list for Sundays?"
REF_FERRY = "On Sundays the timetable lists only the crossing from Oban to Craignure via the K7 pier."
Q_BINS = "When is the paper collection paused?"
REF_BINS = "Paper collections are paused from 20 December to 6 January."


def test_tokens_know_names_and_codes_but_not_a_capital_after_a_full_stop():
    toks = tokens("Boats leave Oban daily. Then the K7 pier closes.")
    by = {t.stem: t for t in toks}
    assert by["oban"].name and by["k7"].name
    assert not by["then"].name and not by["boat"].name


@pytest.mark.parametrize("reply, feature", [
    ("On Sundays the timetable lists only the crossing from Oban to Tobermory via the K7 pier.", "al_subst_name"),
    ("On Sundays the timetable lists only the crossing from Oban to Craignure via the K9 pier.", "al_subst_name"),
    ("On Sundays the timetable lists only the crossing from Oban to Craignure via the north pier.", "al_subst"),
    ("On Sundays the timetable lists only the crossing from Oban, weather allowing, to Craignure via the K7 pier.",
     "al_insert"),
])
def test_a_changed_slot_is_found_where_it_is(reply, feature):
    f = alignment_features(reply, Q_FERRY, [REF_FERRY])
    assert f[feature] > 0
    assert f["al_cover"] >= 0.7


def test_a_faithful_restatement_has_no_departure():
    f = alignment_features("The timetable lists only the crossing from Oban to Craignure via the K7 pier on Sundays.",
                           Q_FERRY, [REF_FERRY])
    assert f["al_subst"] == f["al_subst_name"] == f["al_insert"] == f["al_drop"] == 0
    assert f["al_cover"] == 1.0


def test_a_dropped_item_and_the_question_subject_replaced():
    dropped = alignment_features("Paper collections are paused from 20 December.", Q_BINS, [REF_BINS])
    assert dropped["al_cover"] < 1.0
    swapped = alignment_features("Glass collections are paused from 20 December to 6 January.", Q_BINS, [REF_BINS])
    assert swapped["al_subst"] > 0       # "glass" sits where the asked-about "paper" was
    order = alignment_features("The crossing from Craignure to Oban via the K7 pier, on Sundays only.",
                               Q_FERRY, [REF_FERRY])
    assert order["al_order"] > 0


def test_short_references_are_not_aligned():
    assert not any(alignment_features("Tobermory", "Where does it go?", ["Craignure"]).values())


def test_a_swapped_name_is_doubted_and_a_kept_one_is_not():
    assert departure("From Oban to Tobermory via the K7 pier.", Q_FERRY, [REF_FERRY]).startswith("another name")
    assert doubt("From Oban to Tobermory via the K7 pier.", Q_FERRY, [REF_FERRY]) is not None
    assert departure("From Oban to Craignure via the K7 pier.", Q_FERRY, [REF_FERRY]) is None
    assert doubt("From Oban to Craignure via the K7 pier.", Q_FERRY, [REF_FERRY]) is None


def test_the_reference_words_exchanged_between_two_places():
    q = "Are the owls and the kestrels both ringed in spring?"
    ref = "No, the owls are ringed in spring while the kestrels are ringed in autumn."
    assert departure("No, the owls are ringed in autumn while the kestrels are ringed in spring.", q, [ref]) \
        == "the reference's words in exchanged places"
    assert doubt("No, the owls are ringed in autumn while the kestrels are ringed in spring.", q, [ref]) is not None
    assert departure("No: owls are ringed in spring, kestrels in autumn.", q, [ref]) is None


def test_temperatures_are_quantities_compared_in_celsius():
    ref = "The proving cabinet was logged at 27 °C with a humidity of 80 %."
    assert quantities("81 °F") == (("temperature", pytest.approx(27.22, abs=0.01)),)
    assert quantities("-5 degrees Celsius")[0] == ("temperature", -5.0)
    assert compare(ref, "About 81 °F.") == "gives"              # 27 °C is 80.6 °F
    assert compare(ref, "86 °F.") == "contradicts"              # 30 °C
    assert compare("It froze at 0 °C.", "32 degrees Fahrenheit") == "gives"   # no relative test at zero
    assert unmatched(ref, "27 °C, maybe 29 °C")


def test_reporting_verbs_are_not_the_key_phrase():
    q = "What name is painted on the bow of the lifeboat?"
    ref = "The bow of the lifeboat says 'Grace Darling'."
    assert key_phrase(q, ref) == ("grace", "darling")
    assert key_phrase("What does the notice say?", "The notice says nothing.") == ("nothing",)


@pytest.fixture(scope="module")
def judge():
    return RuleJudge()


def test_a_quoted_word_is_not_credited_for_the_verb_alone(judge):
    rec = dict(source="mmdocrag", question="What name is painted on the bow of the lifeboat?",
               answers=["The bow of the lifeboat says 'Grace Darling'."], response="It says 'Endeavour'.")
    v = judge.judge_many([record_to_item(rec, Path("inline"), 1)])[0]
    assert v.outcome != "correct"
    rec["response"] = "Grace Darling."
    assert judge.judge_many([record_to_item(rec, Path("inline"), 1)])[0].outcome == "correct"
