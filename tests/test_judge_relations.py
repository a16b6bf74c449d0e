"""The rule judge's reading of structure: the line after a table or list, bare tables read by row,
swapped comparisons and roles, self-corrections."""

from __future__ import annotations

import pytest
from judgeitems import judge

from mmrag.judging.final import final_answer, table_answer
from mmrag.judging.relation import comparison, relation_conflicts, role


def test_closing_line_after_a_table_is_the_final_answer():
    reply = "| Vessel | Sank |\n|---|---|\n| Titanic | 1912 |\n| Britannic | 1916 |\n\nThe ship is Britannic, so it sank in 1916."
    assert final_answer(reply).method == "after table or list"
    assert judge("In which year did this ship sink?", ["1912"], reply, "infoseek").outcome == "hallucination"


def test_bare_table_is_read_by_the_row_the_question_names():
    reply = "| Object | Material |\n|---|---|\n| Table | glass |\n| Chair | wood |"
    assert table_answer(reply, "What material is the table made of?") == "Table glass"
    assert judge("What material is the table made of?", ["wood"], reply, "mragbench").outcome != "correct"
    single = "| Composer | Opera |\n|---|---|\n| Georges Bizet | Carmen |"
    assert judge("What is this person's most famous opera?", ["Carmen"], single).outcome == "correct"


@pytest.mark.parametrize(
    "refs,reply,wrong",
    [
        (["this tower", "the Tokyo Skytree"], "The Eiffel Tower is taller than the Tokyo Skytree.", True),
        (["this tower", "the Tokyo Skytree"], "The Tokyo Skytree is taller than the Eiffel Tower.", False),
        (["this tower", "the Tokyo Skytree"], "The Eiffel Tower is shorter than the Tokyo Skytree.", False),
    ],
)
def test_comparison_with_a_short_reference(refs, reply, wrong):
    assert (comparison(refs, reply, "Which is taller, this tower or the Eiffel Tower?") is not None) is wrong


def test_comparison_with_a_sentence_reference():
    ref = ["The Empire State Building has more floors than the Chrysler Building."]
    q = "Which has more floors, the Chrysler Building or the Empire State Building?"
    assert comparison(ref, "The Chrysler Building has more floors.", q) is not None
    assert comparison(ref, "The Empire State Building has more floors.", q) is None
    assert comparison(["1996"], "Her first gold medal came in 1996.", "When did she win her first gold?") is None


@pytest.mark.parametrize(
    "question,refs,reply,wrong",
    [
        ("Who was the teacher of this painter?", ["Verrocchio"], "Leonardo was the teacher of Verrocchio.", True),
        ("Who was the teacher of this painter?", ["Verrocchio"], "The teacher of Leonardo was Verrocchio.", False),
        ("Who was this aviator's navigator?", ["Fred Noonan"], "She served as navigator for pilot Fred Noonan.", True),
        ("Which river is this river a tributary of?", ["Danube"], "The Danube is a tributary of the Inn.", True),
        ("Which river is this river a tributary of?", ["Danube"], "The Inn is a tributary of the Danube.", False),
        ("Which country's coat of arms shows this bird?", ["Sudan"], "It is on the coat of arms of Sudan.", False),
    ],
)
def test_role(question, refs, reply, wrong):
    assert (role(refs, reply, question) is not None) is wrong


def test_self_correction_looking_again_is_the_final_answer():
    fin = final_answer("The hull is black and the funnel red... sorry, looking again the hull is dark red")
    assert fin.method == "correction" and fin.answer == "the hull is dark red"


def test_cut_off_after_giving_the_reference_is_correct():
    v = judge(
        "Who designed this bridge?",
        ["Gustave Eiffel"],
        "It was designed by Gustave Eiffel, whose firm also",
        "infoseek",
    )
    assert v.outcome == "correct"


def test_vague_replies_and_unlisted_rivals_are_left_to_a_reader():
    """Vagueness and another name never decide alone: both are undecided (rule+llm, mmrag label)."""
    q = "In which city is this stadium located?"
    v = judge(q, ["Rio de Janeiro"], "A large stadium somewhere in South America.")
    assert v.outcome == "unparseable" and v.evidence is None
    assert (
        judge(q, ["Rio de Janeiro"], "The large oval stadium is located in São Paulo, Brazil.").outcome == "unparseable"
    )
    q = "Which river does the Charles Bridge cross?"
    v = judge(q, ["Vltava"], "The Vltava, or possibly the Elbe.")
    assert v.outcome == "unparseable" and v.details["undecided"]


def test_a_second_figure_beside_the_reference_is_not_credited():
    v = judge("How tall is it?", ["634"], "It stands at 634 m, though some sources say 450 m.", "infoseek")
    assert v.outcome != "correct"


@pytest.mark.parametrize(
    "text,answer",
    [
        ("He lived in France, although he was Dutch. Final: Netherlands.", "Netherlands."),
        ("He played for United. Wait - counting caps, the team was Wales", "counting caps, the team was Wales"),
    ],
)
def test_final_and_wait_markers(text, answer):
    assert final_answer(text).answer == answer


@pytest.mark.parametrize(
    "question,refs,reply,wrong",
    [
        ("For whom was this building built?", ["Mumtaz Mahal"], "It was built by Mumtaz Mahal for her husband.", True),
        ("For whom was this building built?", ["Mumtaz Mahal"], "Shah Jahan built it for Mumtaz Mahal.", False),
        ("Which lake does this river flow out of?", ["Lake Ladoga"], "The Neva flows into Lake Ladoga.", True),
        ("Which lake does this river flow out of?", ["Lake Ladoga"], "It flows out of Lake Ladoga.", False),
        (
            "Which country borders the lake to the north?",
            ["Uganda"],
            "Tanzania to the north, Uganda to the south.",
            True,
        ),
        ("Who was the teacher of this philosopher?", ["Plato"], "Aristotle was Plato's teacher.", True),
    ],
)
def test_preposition_and_possessive_ends(question, refs, reply, wrong):
    assert (relation_conflicts(refs, reply, question) != []) is wrong


def test_an_alias_the_reference_does_not_list_is_undecided():
    q = "Which landmark is shown in the image?"
    v = judge(q, ["Golden Gate Bridge"], "The Golden Gate Bridge, also known as the Bay Bridge, in San Francisco.")
    assert v.outcome == "unparseable" and v.details["undecided"] == "unlisted alias"
    assert judge(q, ["Golden Gate Bridge"], "The Golden Gate Bridge in San Francisco.").outcome == "correct"


def test_the_concluding_clause_of_the_last_sentence_is_the_answer():
    q = "How old was this composer when he died?"
    reply = 'The passage reads: "Mozart died in 1791 at the age of 35." The composer therefore died at the age of 41.'
    assert judge(q, ["35"], reply).outcome == "hallucination"
    assert judge(q, ["35"], "This is Mozart. He died in Vienna, so he died at the age of 35.").outcome == "correct"


def test_a_number_inside_cjk_text_is_read():
    assert judge("When did the bridge open?", ["1937"], "这座桥是金门大桥，于1937年正式通车。").outcome == "correct"


def test_only_references_the_reply_shares_a_word_with_compete():
    refs = ["Louis XIV", "Louis-Dieudonné", "the Sun King"]
    v = judge("Which king is depicted in this portrait?", refs, "This is Louis XV.")
    assert v.outcome == "unparseable" and v.details["undecided"] == "unchecked conflict"  # entity: a reader's call
