"""Issue 12b: slot signals for sentence references (numbers, lists, direction of a trend).

The signals themselves are pure functions (no encoder); the end-to-end cases run the shipped judge
with real MiniLM on sentence references, written anew for this test (not items of the labelled
files): a credited reply that reverses a trend, swaps a number or names only part of a list must
not stand as a *decided* correct verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrag.judging import RuleJudge
from mmrag.judging.records import record_to_item
from mmrag.judging.slots import answer_numbers, bind_conflict, doubt, known, numbers, slot_features, spoken_numbers

REF_TREND = "The museum's yearly visitor count rose from 310,000 in 2015 to 420,000 in 2019."
Q_TREND = "How did the museum's yearly visitor count change between 2015 and 2019?"
REF_LIST = "The brochure lists kayaking and rock climbing as the two guided activities."
Q_LIST = "Which two guided activities does the brochure list?"


def test_numbers_drop_thousands_separators_but_keep_codes():
    assert numbers("seats 62,500 and costs 4.5") == ["62500", "4.5"]
    assert numbers("account 4471-2093-58, scale 1:25,000") == ["4471-2093-58", "1:25,000"]


@pytest.mark.parametrize("reply, key, value", [
    ("It went from 310,000 to 420,000.", "num_cov", 1.0),          # both of the reference's numbers
    ("About 400,000 by 2019.", "num_alien", 1.0),                   # a number the reference does not give
    ("It fell from 420,000 to 310,000.", "dir_conflict", 1.0),      # the trend the other way round
    ("It increased to 420,000.", "dir_conflict", 0.0),              # same direction, other words
])
def test_trend_signals(reply, key, value):
    assert slot_features(reply, Q_TREND, [REF_TREND])[key] == value


def test_comparison_flipped_word_and_order_agree():
    ref = "The oak in the courtyard is taller than the chestnut."
    q = "Which tree is taller, the oak or the chestnut?"
    assert slot_features("The chestnut is shorter than the oak.", q, [ref])["dir_conflict"] == 0.0
    assert slot_features("The chestnut is taller than the oak.", q, [ref])["dir_conflict"] == 1.0


def test_list_coverage_and_extra_items():
    assert slot_features("Kayaking and rock climbing.", Q_LIST, [REF_LIST])["list_cov"] == 1.0
    part = slot_features("Kayaking.", Q_LIST, [REF_LIST])
    assert part["list_cov"] == 0.5
    assert slot_features("Kayaking and archery.", Q_LIST, [REF_LIST])["list_extra"] > 0


def test_doubt_only_for_sentence_references():
    assert doubt("It fell from 420,000 to 310,000.", Q_TREND, [REF_TREND])
    assert doubt("Kayaking.", Q_LIST, [REF_LIST])
    assert doubt("It went from 310,000 to 420,000.", Q_TREND, [REF_TREND]) is None
    assert doubt("1890 or so", "When was it built?", ["1889"]) is None   # short reference: rules decide


@pytest.fixture(scope="module")
def judge():
    return RuleJudge()


def judged(judge, question, ref, reply):
    rec = dict(source="mmdocrag", question=question, answers=[ref], response=reply)
    return judge.judge_many([record_to_item(rec, Path("inline"), 1)])[0]


def test_reversed_trend_is_not_a_decided_correct(judge):
    v = judged(judge, Q_TREND, REF_TREND, "It dropped from 420,000 to 310,000.")
    assert not (v.outcome == "correct" and v.details.get("decided"))


def test_bare_slot_value_of_a_sentence_reference_is_correct(judge):
    v = judged(judge, "How many seats does the new concert hall have according to the brochure?",
               "The brochure says the new concert hall has 2,150 seats.", "2,150")
    assert v.outcome == "correct"


# -- round 8: binding, the answer's figure, no figure at all -------------------------------------
REF_LIPID = "LDL cholesterol was 3.9 mmol/L and HDL cholesterol was 1.1 mmol/L on the panel."
Q_LIPID = "What were the LDL and HDL cholesterol values on the lipid panel?"
REF_COATS = "No, the Friesian has a black coat but the Haflinger is always chestnut."
Q_COATS = "Is the Haflinger black like the Friesian?"


@pytest.mark.parametrize("reply, ref, question, swapped", [
    ("LDL 1.1 mmol/L and HDL 3.9 mmol/L.", REF_LIPID, Q_LIPID, True),
    ("LDL 3.9 mmol/L and HDL 1.1 mmol/L.", REF_LIPID, Q_LIPID, False),
    ("No - the Haflinger is black and the Friesian is chestnut.", REF_COATS, Q_COATS, True),
    ("The Haflinger is chestnut; the Friesian is black.", REF_COATS, Q_COATS, False),
    ("3.9 and 1.1.", REF_LIPID, Q_LIPID, False),   # no names: nothing to bind
])
def test_values_given_to_the_other_entity(reply, ref, question, swapped):
    assert bind_conflict(reply, question, ref) is swapped
    assert (slot_features(reply, question, [ref])["bind_conflict"] == 1.0) is swapped
    assert (doubt(reply, question, [ref]) is not None) is swapped


def test_the_answer_figure_is_the_one_next_to_the_question_words():
    q = "How many unscheduled engine removals did the Q3 maintenance summary report?"
    ref = "The Q3 maintenance summary reports four unscheduled engine removals, compared with one in Q2."
    top, rest = answer_numbers(q, ref)
    assert top == {"4"} and "1" in rest
    assert slot_features("Four.", q, [ref])["num_slot"] == 1.0
    assert slot_features("One.", q, [ref])["num_slot"] == -1.0   # the Q2 figure
    grade_q, grade_ref = "What score did the pupil get in Mathematics?", \
        "The pupil received a grade A in Mathematics with a score of 88%, above the class average of 71%."
    assert answer_numbers(grade_q, grade_ref) == ({"88"}, {"71"})   # "a score of" is not twenty


def test_a_reply_without_any_figure_for_a_figure():
    q, ref = "What turnout does the leaflet quote?", "The leaflet says only 28% of voters turned out."
    assert slot_features("Low turnout.", q, [ref])["num_missing"] == 1.0
    assert slot_features("Twenty-eight per cent.", q, [ref])["num_missing"] == 0.0


def test_clock_time_written_with_a_dot_is_the_time(judge):
    v = judged(judge, "What time is the last bus from the station on Sundays according to the timetable?",
               "On Sundays the last departure from the station is at 22:50.", "22.50")
    assert v.outcome == "correct"
    v = judged(judge, "What time is the last bus from the station on Sundays according to the timetable?",
               "On Sundays the last departure from the station is at 22:50.", "23.15")
    assert v.outcome == "hallucination"


@pytest.mark.parametrize("reply, outcome", [
    ("The Space Needle is shorter than the CN Tower.", "correct"),
    ("The CN Tower.", "correct"),
    ("The Space Needle is taller than the CN Tower.", "hallucination"),
])
def test_webqa_comparison_stated_from_the_other_side(judge, reply, outcome):
    rec = dict(source="webqa", question="Which is taller, the CN Tower or the Space Needle?",
               answers=["The CN Tower is taller than the Space Needle."], response=reply,
               metadata={"Qcate": "choose"})
    assert judge.judge_many([record_to_item(rec, Path("inline"), 1)])[0].outcome == outcome


def test_iso_dates_and_spoken_durations_are_numbers():
    from mmrag.judging import digits_for_words

    assert spoken_numbers("2026-09-14") == ["2026", "9", "14"]
    assert known("14", set(spoken_numbers("14 September 2026")))
    assert digits_for_words("A quarter of an hour.") == "15 minutes."
    assert digits_for_words("about half an hour") == "about 30 minutes"


def test_a_negation_left_out_is_doubted_but_a_leading_no_is_the_answer():
    ref = "The wedding venue contract requires a non-refundable deposit of £2,500."
    q = "What deposit does the contract require?"
    assert doubt("£2,500, refundable.", q, [ref]) is not None
    assert doubt("A £2,500 non-refundable deposit.", q, [ref]) is None
    otters = "No, sea otters live in salt water but river otters live mainly in fresh water."
    assert doubt("Salt water for sea otters, fresh water for river otters.",
                 "Do sea otters and river otters both live in salt water?", [otters]) is None
