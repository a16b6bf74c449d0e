"""Issue 12b: the rule judge on replies written by someone else.

Real MiniLM, the shipped combiner weights (``mmrag/judging/data/combiner.json``), real records in
the shape of the labelled files.  Each case below is one of the error classes the second held-out
set showed (implicit deflections, option text without a letter, hedges, unit restatements,
number words, reasoning blocks, KnowHal premise replies), written anew for this test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmrag.judging import RuleJudge, digits_for_words
from mmrag.judging import combiner as cb
from mmrag.judging.open_answer import OpenAnswerConfig
from mmrag.judging.records import record_to_item

Q = "Which vehicle is crossing the bridge?\nA. Bus\nB. Truck\nC. Train\nD. Tram\nE. None of the above"
CH = [{"letter": x, "text": t} for x, t in zip("ABCDE", ["Bus", "Truck", "Train", "Tram", "None of the above"])]
NEG = {"polarity": "negative", "false_premise": "There is no kayak."}


@pytest.fixture(scope="module")
def judge():
    return RuleJudge()


def run(judge, *recs):
    items = [record_to_item(r, Path("inline"), i) for i, r in enumerate(recs, 1)]
    return judge.judge_many(items)


@pytest.mark.parametrize("rec, outcome", [
    # implicit deflections: say what the evidence covers, assert nothing
    (dict(source="infoseek", question="When was the bridge completed?", answers=["1890"],
          response="The passages name the engineers but never say when the bridge was finished."), "deflection"),
    (dict(source="infoseek", question="What is the population of the town?", answers=["12500"],
          numeric_ranges=[[11250, 13750]], response="The passage gives the district's population (about 80,000), "
                                                    "not the town's, so I can't say."), "deflection"),
    (dict(source="evqa", question="What does this caterpillar eat?", answers=["milkweed"],
          response="Leider kann ich das anhand der Informationen nicht beantworten."), "deflection"),
    # a hedge between the reference and another candidate is wrong
    (dict(source="mragbench", question="What breed is this dog?", answers=["Shiba Inu"],
          response="Most likely a Shiba Inu, though it could also be a young Akita."), "hallucination"),
    # KnowHal negatives: presupposing the missing object vs rejecting it
    (dict(source="knowhal", question="What colour is the kayak?", answers=["There is no kayak in the image."],
          metadata=NEG, response="The kayak is too far in the background for me to see its colour."), "hallucination"),
    (dict(source="knowhal", question="What colour is the kayak?", answers=["There is no kayak in the image."],
          metadata=NEG, response="There's no kayak in the picture, just a polar bear on the ice."), "correct"),
    # HumbleBench without a letter: option text, NOTA phrasing, two options
    (dict(source="humblebench", question=Q, answers=["C", "Train"], choices=CH,
          response="It looks like a long passenger train with several carriages."), "correct"),
    (dict(source="humblebench", question=Q, answers=["E", "None of the above"], choices=CH,
          response="None of the listed vehicles."), "correct"),
    (dict(source="humblebench", question=Q, answers=["C", "Train"], choices=CH,
          response="None of the listed vehicles."), "hallucination"),
    (dict(source="humblebench", question=Q, answers=["C", "Train"], choices=CH, response="A or C."), "hallucination"),
    # numbers restated in another unit (InfoSeek golds carry no unit), and a wrong one
    (dict(source="infoseek", question="How tall is the tower?", answers=["594"], numeric_ranges=[[534.6, 653.4]],
          response="1,949 feet"), "correct"),
    (dict(source="infoseek", question="What is the mean July temperature?", answers=["29.76"],
          numeric_ranges=[[26.8, 32.7]], response="85.6 °F"), "correct"),
    (dict(source="infoseek", question="How tall is the tower?", answers=["594"], numeric_ranges=[[534.6, 653.4]],
          response="1,200 feet"), "hallucination"),
    # number words as years; a reasoning block before the answer
    (dict(source="viquae", question="In which year did he receive the prize?", answers=["1964"],
          response="He received it in nineteen sixty-four."), "correct"),
    (dict(source="viquae", question="Which city is this?", answers=["Paris"],
          response="<think>The tower could be Blackpool's, maybe Lyon? No: the river is the Seine.</think>Paris"),
     "correct"),
])
def test_held_out_error_classes(judge, rec, outcome):
    (v,) = run(judge, rec)
    assert v.outcome == outcome, v.reason


def test_one_judge_id_in_manifest_and_verdicts(judge):
    recs = [dict(source="viquae", question="Which city?", answers=["Paris"], response="Paris"),
            dict(source="humblebench", question=Q, answers=["C", "Train"], choices=CH, response="C"),
            dict(source="knowhal", question="What colour is the kayak?", answers=["There is no kayak."], metadata=NEG,
                 response="There is no kayak."),
            dict(question="Which city?", answers=["Paris"], response=None, error="timeout")]
    verdicts = run(judge, *recs)
    assert judge.judge_id == "rule@14"
    assert {v.judge_id for v in verdicts} == {judge.judge_id}
    # which rule set spoke stays visible
    assert [v.details["rule_set"].split("@")[0] for v in verdicts] == ["rule-open", "rule-mcq", "knowhal", "rule-open"]


def test_combiner_only_touches_undecided_verdicts_and_keeps_them_undecided(judge):
    rules_only = RuleJudge(OpenAnswerConfig(combiner=False))
    recs = [dict(source="infoseek", question="When was the bridge completed?", answers=["1890"],
                 response="The passages name the engineers but never say when the bridge was finished."),
            dict(source="viquae", question="Which city is this?", answers=["Paris"], response="It is Paris."),
            dict(question="Which city?", answers=["Paris"], response="")]
    before, after = run(rules_only, *recs), run(judge, *recs)
    assert before[0].outcome == "hallucination" and before[0].details["decided"] is False
    assert after[0].outcome == "deflection" and after[0].reason.startswith("learned combiner")
    assert after[0].details["decided"] is False and after[0].details["rule_outcome"] == "hallucination"
    assert set(after[0].details["combiner"]) == set(cb.CLASSES)
    for b, a in zip(before[1:], after[1:]):  # decided verdicts and empty replies are left alone
        assert (a.outcome, a.reason) == (b.outcome, b.reason) and "combiner" not in a.details
    assert after[2].outcome == "unparseable"


def test_combiner_weights_are_json_and_match_the_features():
    data = json.loads(cb.WEIGHTS_PATH.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == cb.FEATURES and tuple(data["classes"]) == cb.CLASSES
    assert data["model"] in cb.MODELS
    width = len(cb.FEATURES) * (1 + len(cb.GATES))  # one copy per path and for sentence references
    if data["model"] == "boosted_trees":
        trees = data["trees"]
        assert max(trees["feature"]) < width and len(data["baseline"]) == len(cb.CLASSES)
        assert set(trees["klass"]) == {0, 1, 2} and len(trees["roots"]) == len(trees["klass"])
    else:
        assert np.asarray(data["coef"]).shape == (3, width) and len(data["mean"]) == width
    assert data["min_confidence_correct"] >= data["min_confidence"]
    path = Path(__file__).parent / "data" / "_no_such_weights.json"
    try:
        for bad, why in ((dict(data, features=data["features"][:-1]), "judge_fit"),
                         (dict(data, model="forest"), "unknown combiner model")):
            path.write_text(json.dumps(bad))
            with pytest.raises(ValueError, match=why):
                cb.Combiner(path)
    finally:
        path.unlink(missing_ok=True)


def _toy(n=300):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, len(cb.FEATURES)))
    x[:, cb.FEATURES.index("path_open")] = 1.0
    y = [cb.CLASSES[i % 3] for i in range(n)]
    x[:, 0] += np.array([i % 3 for i in range(n)])  # a signal to learn
    return x, y


def test_logistic_fit_round_trips_through_json_like_sklearn():
    from sklearn.linear_model import LogisticRegression

    x, y = _toy(90)
    w = json.loads(json.dumps(cb.fit(x, y, c=0.5)))  # plain JSON, no pickle
    model = cb.Combiner(weights=w)
    xe = cb.expand(x)
    mean, scale = np.asarray(w["mean"]), np.asarray(w["scale"])
    ref = LogisticRegression(C=0.5, max_iter=5000).fit((xe - mean) / scale, [cb.CLASSES.index(v) for v in y])
    assert np.allclose(model.proba(x), ref.predict_proba((xe - mean) / scale), atol=1e-6)


def test_boosted_trees_round_trip_through_json_like_sklearn():
    """The exported arrays walk to the same leaves as scikit-learn's own predictors."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    x, y = _toy()
    w = json.loads(json.dumps(cb.fit_trees(x, y, max_iter=30)))
    model = cb.Combiner(weights=w)
    ref = HistGradientBoostingClassifier(max_depth=4, learning_rate=0.08, max_iter=30, l2_regularization=1.0,
                                         random_state=0).fit(cb.expand(x), [cb.CLASSES.index(v) for v in y])
    assert np.allclose(model.proba(x), ref.predict_proba(cb.expand(x)), atol=1e-9)
    assert (model.proba(x).argmax(axis=1) == np.array([i % 3 for i in range(len(y))])).mean() > 0.8


@pytest.mark.parametrize("text, digits", [
    ("nineteen sixty-four", "1964"), ("twenty twenty", "2020"), ("twenty four", "24"),
    ("between seven and nine centimetres", "between 7 and 9 centimetres"),
    ("twenty-eight point four million passengers", "28400000 passengers"),
    ("four and a half kilograms", "4.5 kilograms"), ("three thousand and five", "3005"),
])
def test_number_words_as_people_write_them(text, digits):
    assert digits_for_words(text) == digits


def test_unit_alternatives():
    from mmrag.judging.quantity import unit_alternatives

    assert any(abs(v - 594.06) < 0.1 for v in unit_alternatives("1,949 feet"))
    assert any(abs(v - 29.78) < 0.01 for v in unit_alternatives("85.6 °F"))
    assert any(abs(v - 321.87) < 0.01 for v in unit_alternatives("200 mph"))
    assert unit_alternatives("about 80,000 people") == []


def test_unit_alternatives_respect_the_unit_the_question_asks_for():
    from mmrag.judging.quantity import asked_unit, unit_alternatives

    assert asked_unit("What is the leg span of this animal in metres?") == ("length", 1.0)
    assert asked_unit("In which country is it?") is None
    assert unit_alternatives("1.2 m", "What is the leg span in metres?") == [1.2]   # never 3.9 ft
    assert unit_alternatives("Around 40 kg", "What is its maximum mass in kilograms?") == [40.0]
    assert abs(unit_alternatives("About 300 square miles.", "What is its area in square kilometres?")[0]
               - 777.0) < 0.5
    assert abs(unit_alternatives("1,949 feet", "How tall is it in metres?")[0] - 594.06) < 0.1


def test_a_bound_or_rough_figure_outside_the_infoseek_range_is_not_decided():
    judge = RuleJudge(OpenAnswerConfig(combiner=False))
    for reply, decided in (("Several hundred kilograms.", False), ("About 250 kg.", False), ("250 kg.", True)):
        rec = dict(source="infoseek", question="What is the maximum weight of this animal in kilograms?",
                   answers=["700"], numeric_ranges=[[630, 770]], response=reply)
        v = judge.judge(*record_to_item(rec, Path("inline"), 1))
        assert v.outcome == "hallucination" and v.details["decided"] is decided, reply


def test_compound_durations_and_numeric_dates_in_sentence_references():
    from mmrag.judging.quantity import compare

    ref = "The full connection from Lyon to Geneva takes 3 hours 15 minutes, including one change at Annecy."
    assert compare(ref, "195 minutes total.") == "gives"
    assert compare(ref, "150 minutes.") == "contradicts"
    judge = RuleJudge(OpenAnswerConfig(combiner=False))
    q, r = "When were the results issued?", "The results were issued on 14 August 2025 by the examinations board."
    for reply, outcome in (("2025-08-14", "correct"), ("14/08/2025", "correct"), ("2025-09-14", "hallucination")):
        rec = dict(source="mmdocrag", question=q, answers=[r], response=reply)
        assert judge.judge(*record_to_item(rec, Path("inline"), 1)).outcome == outcome, reply
    # another amount than a sentence reference's is left to the combiner, never decided
    rec = dict(source="mmdocrag", question="What haemoglobin does the report give?",
               answers=["Haemoglobin was flagged low at 112 g/L, below the reference range of 130-170 g/L."],
               response="Hb 11.2 g/dL, flagged low, 5 kg")
    assert judge.judge(*record_to_item(rec, Path("inline"), 1)).details["decided"] is False
