"""Issue 12, round 14: another name in the place of part of a reference name, a surname credit that
rests on a word the question already says, Encyclopedic-VQA answers whose '|' pieces hold different
numbers of parts, and refusals in a language langdetect is torn about.

Every example was written for this module, not taken from a labelled file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrag.judging import RuleJudge
from mmrag.judging.align import substituted_name
from mmrag.judging.answer_rules import AnswerContext, EVQARule
from mmrag.judging.language import foreign_refusal, languages_of
from mmrag.judging.records import record_to_item


@pytest.mark.parametrize("reply, question, refs", [
    ("The Halle Philharmonic.", "Which orchestra did she lead?", ["Leipzig Philharmonic", "Leipzig Phil"]),
    ("Aarhus University.", "At which university did he teach?", ["Uppsala University", "Uppsala"]),
    ("The Manchester Evening Post.", "Which newspaper printed it?", ["Manchester Evening News"]),
    ("Edfu Temple", "Which temple is this?", ["Esna Temple"]),
])
def test_another_name_in_the_place_of_the_references(reply, question, refs):
    why = substituted_name(reply, question, refs)
    assert why is not None and "in the place of" in why


@pytest.mark.parametrize("reply, question, refs", [
    ("Leipzig Philharmonic.", "Which orchestra did she lead?", ["Leipzig Philharmonic Orchestra"]),  # dropped head
    ("Kilimanjaro, in Tanzania.", "Which mountain is this?", ["Mount Kilimanjaro"]),                # added place
    ("St Petersburg.", "Which city?", ["Saint Petersburg"]),                                      # abbreviation
    ("Ptolemy the Great.", "Which king built it?", ["Ptolemy III"]),                              # regnal number
    ("Spain's civil war.", "During which war?", ["Spanish Civil War"]),                           # one root
    ("Polyclitus the Younger.", "Who designed it?", ["Polykleitos the Younger"]),                 # respelling
    ("It was founded by monks who came from the coast and built the first church on the hill above "
     "the river before the town grew around it.", "Which order?", ["Cistercian Order"]),          # not a name reply
    ("Lyon.", "Which city?", ["Lyon"]),
])
def test_the_same_name_said_otherwise_is_not_a_substitution(reply, question, refs):
    assert substituted_name(reply, question, refs) is None


def _ctx(answers, qtype="multi_answer"):
    return AnswerContext(question="Which two?", answers=answers, numeric_ranges=[], question_type=qtype, metadata={})


def test_evqa_pieces_of_different_part_counts_are_spellings_of_one_part():
    rule = EVQARule()
    # "Kos|Cos && Rhodes": the release's '|' would make "Kos" a complete answer from another annotator
    ctx = _ctx(["Kos", "Cos && Rhodes"])
    assert rule.parts(ctx) == [[["Kos", "Cos"], ["Rhodes"]]]
    assert rule.match(ctx, "Only on Kos.").status == "contradicts"
    assert rule.match(ctx, "Cos and Rhodes.").status == "gives"
    # whole answers with the same number of parts keep the release's meaning
    assert rule.parts(_ctx(["Kos && Rhodes", "Cos && Rhodes"])) == [[["Kos"], ["Rhodes"]], [["Cos"], ["Rhodes"]]]


def test_evqa_list_items_elsewhere_in_a_long_reply_are_not_extras():
    rule = EVQARule()
    ctx = _ctx(["Kos && Rhodes"])
    long_reply = ("This lizard is the Aegean wall lizard. It is found only on Kos and Rhodes. It is threatened by "
                  "cats, rats and goats.")
    assert rule.match(ctx, long_reply).status == "gives"
    assert rule.match(ctx, "Kos, Rhodes and Crete.").status == "contradicts"   # an extra in the answer itself
    # another annotator's spelling of a part is no extra
    assert rule.match(_ctx(["grey && red", "gray && rufous"]), "A grey morph and a red (rufous) morph.").status \
        == "gives"


@pytest.fixture(scope="module")
def judge():
    return RuleJudge()


def _verdict(judge, **rec):
    return judge.judge_many([record_to_item(rec, Path("inline"), 1)])[0]


def test_a_shared_word_the_question_says_is_no_surname_credit(judge):
    rec = dict(source="viquae", question="At which university did this chemist teach?",
               answers=["Uppsala University", "Uppsala"], response="Aarhus University.")
    assert _verdict(judge, **rec).outcome == "hallucination"
    rec["response"] = "He taught at Uppsala."
    assert _verdict(judge, **rec).outcome == "correct"


def test_a_short_refusal_langdetect_is_torn_about_is_still_read(judge):
    text = "Keine Ahnung, tut mir leid."
    assert len(languages_of(text)) >= 1
    assert foreign_refusal(text) == "de"
    assert foreign_refusal("Das Schiff ist rot und weiss.") is None   # asserts, does not deny
    rec = dict(source="viquae", question="Which plant did he study?", answers=["pea"], response=text)
    assert _verdict(judge, **rec).outcome == "deflection"
