"""Per-benchmark metrics: DeflectionBench rates + CRAG score, HumbleBench NOTA measures, KnowHal HPS."""

from __future__ import annotations

import itertools
import json

import pytest
from typer.testing import CliRunner

from mmrag.errors import InputError
from mmrag.judging import MCQJudge
from mmrag.metrics import (
    METRICS,
    Scored,
    deflection_metrics,
    humblebench_metrics,
    knowhal_metrics,
    score_humblebench_predictions,
)
from mmrag.schema import Choice, ContentPart, Message, Prompt, Response, Sample, Verdict

_IDS = itertools.count()


def scored(
    outcome,
    *,
    qid="q",
    source="infoseek",
    scenario=None,
    meta=None,
    score=None,
    details=None,
    label=None,
    text="",
    choices=(),
):
    s = Sample(
        id=f"{qid}-{next(_IDS)}",
        question_id=qid,
        benchmark="b",
        question="Q?",
        source=source,
        metadata=meta or {},
        label=label,
        choices=list(choices),
    )
    p = Prompt(
        sample_id=s.id,
        scenario=scenario or {"kind": "oracle"},
        label=label,
        choices=list(choices),
        messages=[Message(role="user", content=[ContentPart(type="text", text="Q?")])],
    )
    v = Verdict(outcome=outcome, score=score, details=details or {})
    return Scored(s, p, Response(prompt_id=p.id, text=text), v)


def test_deflection_rates_are_over_all_responses_and_sum_to_100():
    items = (
        [scored("correct", qid=f"q{i}") for i in range(6)]
        + [scored("deflection", qid=f"d{i}") for i in range(3)]
        + [scored("hallucination", qid="h")]
        + [scored("unparseable", qid="u")] * 2
    )
    m = deflection_metrics(items, by=(), n_boot=200)["overall"]
    assert m["n"] == 12 and m["counts"]["unparseable"] == 2 and m["denominator"] == "all responses"
    # the paper's denominator: every response, unparseable ones included (6 of 12, not 6 of 10)
    assert m["correct"]["value"] == 50.0 and m["unparseable"]["value"] == pytest.approx(100 * 2 / 12)
    assert sum(m[o]["value"] for o in ("correct", "deflection", "hallucination", "unparseable")) == pytest.approx(100)
    # CRAG truthfulness: +1 / 0 / -1 (unparseable 0) averaged = correct - hallucination
    assert m["truthfulness"]["value"] == pytest.approx(50.0 - 100 / 12)
    for key in ("correct", "deflection", "hallucination", "unparseable", "truthfulness"):
        lo, hi = m[key]["ci"]
        assert lo <= m[key]["value"] <= hi


def test_deflection_groups_and_crossed_keys():
    items = []
    for scen, src, outs in [
        ("oracle", "infoseek", "cch"),
        ("adversarial", "infoseek", "ddh"),
        ("adversarial", "webqa", "dd"),
    ]:
        for i, o in enumerate(outs):
            code = {"c": "correct", "d": "deflection", "h": "hallucination"}[o]
            items.append(scored(code, qid=f"{scen}{src}{i}", source=src, scenario={"kind": scen, "strictness": "soft"}))
    m = deflection_metrics(items, by=("scenario", "source", ("scenario", "source"), "strictness"), n_boot=100)
    assert m["by"]["scenario"]["adversarial"]["deflection"]["value"] == pytest.approx(80.0)
    assert m["by"]["source"]["webqa"]["n"] == 2
    assert m["by"]["scenario×source"]["adversarial|infoseek"]["hallucination"]["value"] == pytest.approx(100 / 3)
    assert set(m["by"]["strictness"]) == {"soft"}
    assert m["ci"]["cluster"] == "question_id"
    with pytest.raises(InputError):
        deflection_metrics(items, by=("no_such_key",))
    assert METRICS.get("deflection") is deflection_metrics


def test_clustered_interval_is_wider_than_per_sample():
    # 20 questions x 5 samples with identical outcomes inside a question
    items = [scored("correct" if q % 2 else "hallucination", qid=f"q{q}") for q in range(20) for _ in range(5)]
    clustered = deflection_metrics(items, by=(), n_boot=500)["overall"]["correct"]["ci"]
    for k, it in enumerate(items):
        it.sample.question_id = f"own{k}"
    naive = deflection_metrics(items, by=(), n_boot=500)["overall"]["correct"]["ci"]
    assert clustered[1] - clustered[0] > 1.5 * (naive[1] - naive[0])


CH = [Choice(letter=l, text=t) for l, t in zip("ABCDE", ["cat", "dog", "rabbit", "parrot", "None of the above"])]


def _hb(text, label):
    s = Sample(
        id=f"s{next(_IDS)}",
        benchmark="humblebench",
        question="What?",
        choices=CH,
        label=label,
        metadata={"type": "Object"},
    )
    p = Prompt(
        sample_id=s.id,
        choices=CH,
        label=label,
        messages=[Message(role="user", content=[ContentPart(type="text", text="What?")])],
    )
    r = Response(prompt_id=p.id, text=text)
    return Scored(s, p, r, MCQJudge().judge(s, p, r))


def test_humblebench_nota_measures():
    items = (
        [_hb("E", "E")] * 3
        + [_hb("A", "E")]  # NOTA gold: 3 hits of 4
        + [_hb("B", "B")] * 4
        + [_hb("E", "B")] * 2  # non-NOTA gold: 4 right, 2 false NOTA
        + [_hb("I cannot tell.", "C")]
        + [_hb("", "D")]
    )
    m = humblebench_metrics(items, n_boot=100)
    nota = m["nota"]
    assert nota["nota_hit_rate"] == 75.0 and nota["nota_hit_rate_robust"] == 75.0
    assert nota["non_nota_accuracy"] == pytest.approx(100 * 4 / 8)
    assert nota["non_nota_accuracy_robust"] == pytest.approx(100 * 4 / 8)
    # official rule: Overall is the NOTA-share-weighted mean of the two NOTA measures
    overall = m["official"]["Accuracy"]["Overall_accuracy"]
    assert overall == pytest.approx((4 * nota["nota_hit_rate"] + 8 * nota["non_nota_accuracy"]) / 12)
    assert nota["false_nota_rate"] == pytest.approx(100 * 2 / 8)
    assert nota["nota_precision"] == pytest.approx(100 * 3 / 5)
    h, p = 75.0, 60.0
    assert nota["nota_f1"] == pytest.approx(2 * h * p / (h + p))
    assert m["outcomes"]["counts"] == {"correct": 7, "deflection": 1, "hallucination": 3, "unparseable": 1}
    assert m["official"]["Accuracy"]["Overall_accuracy"] == pytest.approx(100 * 7 / 12)
    assert m["official"]["Accuracy"]["E_accuracy"] == 75.0
    assert METRICS.get("humblebench") is humblebench_metrics


def test_score_humblebench_predictions_file_and_errors(tmp_path):
    q = "What is it?\nA. cat\nB. dog\nC. rabbit\nD. parrot\nE. None of above"
    rows = [
        {"question_id": i, "question": q, "label": lb, "type": "Relation", "image": "x.jpg", "prediction": pr}
        for i, (lb, pr) in enumerate([("E", "E"), ("E", "None of above"), ("B", "B."), ("A", "The answer is C")])
    ]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = score_humblebench_predictions(path, nota_only=True)
    assert list(out)[:2] == ["Accuracy", "Proportions"] and out["nota_only"] is True
    assert out["Accuracy"]["Overall_accuracy"] == 50.0 and out["Accuracy"]["E_accuracy"] == 50.0
    assert out["mmrag"]["nota"]["nota_hit_rate_robust"] == 100.0  # option text counts for the robust reading
    assert out["mmrag"]["nota"]["nota_hit_rate"] == 50.0  # the official rule: "None of above" has no letter
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], "question_id": "7"}) + "\n")
    with pytest.raises(InputError) as exc:
        score_humblebench_predictions(bad)
    assert exc.value.line == 2 and exc.value.field == "question_id"

    import typer

    from mmrag.commands.judge import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    r = CliRunner().invoke(app, ["score", "humblebench", "--predictions", str(path)])
    assert r.exit_code == 0 and json.loads(r.output)["Proportions"]["E_proportion"] == 25.0


def _kh(dim, pol, outcome, score=None, pair="p", details=None):
    return scored(
        outcome,
        qid=f"{pair}-{pol}",
        meta={"dimension": dim, "polarity": pol, "pair_id": pair},
        score=score,
        details=details,
    )


def test_knowhal_metrics_hps_and_agreement():
    items = [
        _kh("E", "positive", "correct", 1.0, "e1"),
        _kh("E", "positive", "hallucination", 0.0, "e2"),
        _kh("E", "negative", "correct", 1.0, "e1"),
        _kh("E", "negative", "hallucination", 0.0, "e2"),
        _kh("A", "positive", "correct", 1.0, "a1"),
        _kh("A", "positive", "correct", 0.5, "a2"),
        _kh("A", "negative", "hallucination", 0.0, "a1", {"rule_outcome": "correct", "llm_outcome": "hallucination"}),
        _kh("A", "negative", "unparseable", None, "a2", {"rule_outcome": "deflection", "llm_outcome": "unparseable"}),
        _kh("K", "negative", "correct", 1.0, "k1", {"rule_outcome": "correct", "llm_outcome": "correct"}),
    ]
    m = knowhal_metrics(items, n_boot=100)
    assert m["per_dimension"]["E"]["positive"] == 50.0 and m["per_dimension"]["E"]["hps"] == pytest.approx(0.0)
    assert m["per_dimension"]["A"]["positive"] == 75.0 and m["per_dimension"]["A"]["negative"] == 0.0
    assert m["per_dimension"]["A"]["hps"] == 100.0
    assert m["per_dimension"]["K"]["positive"] is None and m["per_dimension"]["K"]["hps"] is None
    assert m["positive"] == pytest.approx((50 + 75) / 2)
    assert m["negative"] == pytest.approx((50 + 0 + 100) / 3)
    assert m["overall"] == pytest.approx((m["positive"] + m["negative"]) / 2)
    assert m["hps"] == pytest.approx((1 - m["negative"] / m["positive"]) * 100)
    assert m["micro"]["positive"]["value"] == pytest.approx(100 * 2.5 / 4)
    agr = m["judge_agreement"]
    assert agr["n"] == 3 and agr["agreement"] == pytest.approx(100 / 3)
    assert m["outcomes"]["unparseable"] == 1
    assert METRICS.get("knowhal") is knowhal_metrics
