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
from mmrag.judging.slots import doubt, numbers, slot_features

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
