"""The rule judge on multiple-choice replies: which option a reply names (letters, option text,
think tags, hedges between two), the outcomes beside the official extractor's call, and judging
against the prompt's effective options when the gold option was removed or the options shuffled."""

from __future__ import annotations

import pytest
from judgeinputs import CH, item

from mmrag.judging import RuleJudge, extract_choice
from mmrag.schema import Choice


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
