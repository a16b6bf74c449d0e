"""Per-run judge validation (mmrag.labels): the sample, the label files, export / import, the
agreement of a run's judge with its labels (against scikit-learn), the corrected rates (recovery
and interval coverage under a simulated judge of known confusion), the report and summary, and
the labelling server's serving rules (over real loopback HTTP)."""

from __future__ import annotations

import json
import warnings

import httpx
import numpy as np
import pandas as pd
import pytest
from runfactory import build_run
from sklearn.metrics import cohen_kappa_score

import mmrag.labels as L
from mmrag.cli import main
from mmrag.errors import InputError
from mmrag.labels.correct import JUDGED, Confusion, cluster_counts, correct_cell, solve
from mmrag.labels.sample import allocate, draw
from mmrag.labels.store import HUMAN_LABELS, LabelFile
from mmrag.metrics import bootstrap_ci
from mmrag.runs import load

# the simulated judge: P(judged j | true t), rows correct/deflection/hallucination/unparseable;
# it credits 20 % of hallucinations as correct
CONFUSION = np.array([[0.95, 0.02, 0.20], [0.01, 0.90, 0.04], [0.02, 0.04, 0.72], [0.02, 0.04, 0.04]])
TRUE_PI = np.array([0.5, 0.2, 0.3])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("labels"), full=True, xss=True)


def simulated_labels(run_dir, labeller="ann", n=120, seed=0, flip=0.2):
    """Label the run's sample as a person would who finds ``flip`` of the judge's credits wrong."""
    df = load(run_dir)
    sample = L.ensure_sample(run_dir, df, n=n, seed=seed)
    rng = np.random.default_rng(seed + 7)
    f = LabelFile(run_dir, labeller)
    for key, outcome in zip(sample.items["key"], sample.items["outcome"]):
        label = {"unparseable": "deflection"}.get(outcome, outcome)
        if outcome == "correct" and rng.random() < flip:
            label = "hallucination"
        f.append(key, label)
    return sample


# -- the sample -----------------------------------------------------------------------------------


def test_sample_is_stratified_seeded_and_weighted(run_dir):
    df = load(run_dir)
    s = draw(df, n=100, seed=3)
    ok = df[df["error"].isna()]
    assert len(s.items) == 100 and s.items["key"].is_unique and set(s.items["key"]) <= set(ok["key"])
    # every stratum (source x judge outcome) is in the sample, and its weights sum to its run size
    strata = (ok["source"] + "|" + ok["outcome"]).value_counts()
    assert set(s.items["stratum"]) == set(strata.index)
    for h, w in s.items.groupby("stratum")["weight"].sum().items():
        assert w == pytest.approx(strata[h])
    assert s.keys == draw(df, n=100, seed=3).keys and s.keys != draw(df, n=100, seed=4).keys
    # shuffled: the showing order does not come stratum by stratum
    assert (s.items["stratum"] != s.items["stratum"].shift()).sum() > len(strata) * 2
    assert allocate({"a": 5, "b": 1000}, 50) == {"a": 5, "b": 45}
    assert allocate({"a": 5, "b": 10}, 100) == {"a": 5, "b": 10}


def test_stored_sample_is_reused_and_other_n_refused(tmp_path):
    d = build_run(tmp_path, full=False)
    df = load(d)
    a = L.ensure_sample(d, df, n=20, seed=1)
    assert L.ensure_sample(d, df).keys == a.keys
    with pytest.raises(InputError, match="drawn with --n 20"):
        L.ensure_sample(d, df, n=30)


# -- label files ----------------------------------------------------------------------------------


def test_label_file_append_skip_undo_and_truncated_tail(tmp_path):
    f = LabelFile(tmp_path, "bob")
    f.append("k1", "correct")
    f.append("k2", "skip")
    f.append("k3", "hallucination")
    f.append("k3", None)  # undo
    f.append("k1", "deflection")  # relabel: the last line wins
    lines = [json.loads(x) for x in f.path.read_text().splitlines()]
    assert set(lines[0]) == {"key", "label", "labeller", "at"} and lines[0]["labeller"] == "bob"
    got = L.load(tmp_path)
    assert got[["key", "label"]].values.tolist() == [["k1", "deflection"]]
    assert L.load(tmp_path, include_skips=True)["key"].tolist() == ["k2", "k1"]
    with f.path.open("a") as fh:
        fh.write('{"key": "k4", "lab')  # a kill mid-write
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert len(L.load(tmp_path)) == 1
        # reopening cuts the partial line off before appending, so it never becomes a bad middle line
        LabelFile(tmp_path, "bob").append("k5", "correct")
    assert L.load(tmp_path)["key"].tolist() == ["k1", "k5"]
    f.path.write_text('{"key": "k1", "label": "maybe", "labeller": "bob"}\n{"key": "k2", "label": "correct"}\n')
    with pytest.raises(InputError, match=r"bob.jsonl:1.*field 'label'"):
        L.load(tmp_path)
    with pytest.raises(InputError, match="labeller name"):
        LabelFile(tmp_path, "../evil")


def test_export_has_no_verdicts_and_import_round_trips(tmp_path):
    d = build_run(tmp_path, full=False, xss=True)
    out = tmp_path / "sample.jsonl"
    assert main(["label", str(d), "--n", "25", "--export", str(out), "--labeller", "ann"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    sample = L.read_sample(d)
    assert [r["key"] for r in rows] == sample.keys
    text = out.read_text()
    for leak in ('"outcome"', '"verdict"', '"extracted"', '"reason"', '"stratum"', '"weight"', "fixture "):
        assert leak not in text
    assert all(r["question"] and "response" in r for r in rows)
    # labelled elsewhere, then brought back
    labels = [
        {"key": r["key"], "label": HUMAN_LABELS[i % 3], "labeller": "remote", "at": "2026-01-01T00:00:00+00:00"}
        for i, r in enumerate(rows)
    ]
    src = tmp_path / "remote.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in labels))
    assert main(["label", str(d), "--import", str(src)]) == 0
    got = L.load(d)
    assert got.to_dict("records") == labels
    # a key the run does not hold: the line is named and nothing is written
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(labels[0]) + "\n" + json.dumps({**labels[1], "key": "nope", "labeller": "x"}) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:2.*'key'"):
        L.import_labels(d, bad, set(load(d)["key"]))
    assert not (d / "labels" / "x.jsonl").exists() and len(L.load(d)) == len(labels)


# -- agreement on a run ---------------------------------------------------------------------------


def test_run_agreement_equals_sklearn(run_dir, capsys):
    simulated_labels(run_dir)
    res = L.agreement(run_dir, n_boot=300)
    df = load(run_dir)
    pairs = L.labelled_pairs(df, L.load(run_dir))
    truth, judged = pairs["truth"].tolist(), pairs["outcome"].tolist()
    assert res["n"] == len(pairs) == 120
    assert res["kappa"] == pytest.approx(cohen_kappa_score(truth, judged), abs=1e-12)
    assert res["agreement"] == pytest.approx(100 * np.mean(np.array(truth) == np.array(judged)))
    # re-weighted to the run: sklearn with the design weights N_h / m_h
    ok = df[df["error"].isna()]
    size = (ok["source"] + "|" + ok["outcome"]).value_counts()
    stratum = pairs["source"] + "|" + pairs["outcome"]
    w = stratum.map(size) / stratum.map(stratum.value_counts())
    assert res["kappa_run"] == pytest.approx(cohen_kappa_score(truth, judged, sample_weight=w.to_numpy()), abs=1e-12)
    lo, hi = res["ci"]["kappa"]
    assert lo < res["kappa"] < hi
    decided = [(t, j) for t, j in zip(truth, judged) if j != "unparseable"]
    assert res["kappa_decided"] == pytest.approx(cohen_kappa_score(*zip(*decided)), abs=1e-12)
    hall = [j for t, j in zip(truth, judged) if t == "hallucination"]
    assert res["hallucinations_judged_correct"]["value"] == pytest.approx(100 * hall.count("correct") / len(hall))
    assert res["coverage_run"] == pytest.approx(100 * (df["outcome"] != "unparseable").mean())
    for src, r in res["by"]["source"].items():
        sub = pairs[pairs["source"] == src]
        assert r["kappa"] == pytest.approx(cohen_kappa_score(sub["truth"], sub["outcome"]), abs=1e-12) or len(sub) < 2
    assert set(res["by"]["kind"]) == set(pairs["kind"])
    # the command prints the same kappa
    assert main(["judge-agreement", str(run_dir), "--json", "--n-boot", "200", "--by", "model"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kappa"] == pytest.approx(res["kappa"]) and set(out["by"]) == {"model"}
    assert main(["judge-agreement", str(run_dir), "--n-boot", "200"]) == 0
    text = capsys.readouterr().out
    assert "kappa=" in text and "source=infoseek" in text and "kind=oracle" in text and "coverage" in text


def test_inter_annotator_kappa(tmp_path):
    d = build_run(tmp_path, full=False)
    simulated_labels(d, "ann", n=30, seed=0, flip=0.0)
    simulated_labels(d, "bob", n=30, seed=0, flip=0.5)
    res = L.agreement(d, labeller="ann", n_boot=200)
    (ia,) = res["inter_annotator"]
    la, lb = L.load(d).pipe(lambda x: (x[x.labeller == "ann"], x[x.labeller == "bob"]))
    m = la.merge(lb, on="key")
    assert (ia["a"], ia["b"], ia["n"]) == ("ann", "bob", 30)
    assert ia["kappa"] == pytest.approx(cohen_kappa_score(m["label_x"], m["label_y"]), abs=1e-12)
    with pytest.raises(InputError, match="no labels by 'carl'"):
        L.agreement(d, labeller="carl")


def test_two_file_form_reports_coverage_decided_kappa_and_credited_hallucinations(tmp_path, capsys):
    ref = [
        ("correct", "correct", "a", "x"),
        ("hallucination", "correct", "a", "x"),
        ("hallucination", "hallucination", "b", "y"),
        ("deflection", "unparseable", "b", "y"),
        ("deflection", "deflection", "a", "y"),
        ("hallucination", "correct", "b", "x"),
    ]
    a, b = tmp_path / "people.jsonl", tmp_path / "judge.jsonl"
    a.write_text(
        "".join(
            json.dumps({"id": str(i), "label": r[0], "source": r[2], "meta": {"kind": r[3]}}) + "\n"
            for i, r in enumerate(ref)
        )
    )
    b.write_text("".join(json.dumps({"id": str(i), "outcome": r[1]}) + "\n" for i, r in enumerate(ref)))
    from mmrag.metrics.agreement import agreement

    res = agreement(a, b, by=("meta.kind",))
    assert res["coverage"] == pytest.approx(100 * 5 / 6)
    assert res["hallucinations_judged_correct"] == {"value": pytest.approx(200 / 3), "n": 3}
    dec = [(x, y) for x, y, *_ in ref if y != "unparseable"]
    assert res["n_decided"] == 5 and res["kappa_decided"] == pytest.approx(cohen_kappa_score(*zip(*dec)))
    assert res["kappa"] == pytest.approx(cohen_kappa_score([r[0] for r in ref], [r[1] for r in ref]))
    assert set(res["by_source"]) == {"a", "b"} and set(res["by"]["meta.kind"]) == {"x", "y"}
    assert res["by"]["meta.kind"]["x"]["hallucinations_judged_correct"]["value"] == 100.0
    assert main(["judge-agreement", str(a), str(b), "--by", "meta.kind"]) == 0
    assert "meta.kind=x" in capsys.readouterr().out
    assert main(["judge-agreement", str(a), str(b), "--by", "nothing"]) != 0


# -- corrected rates ------------------------------------------------------------------------------


def simulate(seed: int, n_replies: int, rng=None):
    """A run of one source: truth drawn from TRUE_PI, two replies per question, judged by CONFUSION."""
    rng = rng or np.random.default_rng(seed)
    truth = rng.choice(3, size=n_replies, p=TRUE_PI)
    cum = np.cumsum(CONFUSION[:, truth].T, axis=1)
    judged = (rng.random(n_replies)[:, None] > cum).sum(1)
    return truth, judged, np.repeat(np.arange(n_replies // 2), 2)


def test_solve_is_rogan_gladen_in_two_classes():
    se, sp, p = 0.9, 0.8, 0.4
    M = np.array([[se, 1 - sp], [1 - se, sp]])
    pi = solve(M, np.array([p, 1 - p]))
    assert pi[0] == pytest.approx((p + sp - 1) / (se + sp - 1))


def test_corrected_rates_recover_the_truth_and_judged_rates_do_not():
    rng = np.random.default_rng(11)
    truth, judged, q = simulate(0, 4000, rng)
    df = pd.DataFrame(
        {
            "key": [f"k{i}" for i in range(len(truth))],
            "source": "infoseek",
            "outcome": [JUDGED[j] for j in judged],
            "error": None,
            "question_id": q.astype(str),
            "benchmark": "demo",
            "model": "m",
            "scenario": "realistic",
        }
    )
    sample = draw(df, n=300, seed=1)
    by_key = dict(zip(df["key"], truth))
    labels = pd.DataFrame(
        {"key": sample.keys, "label": [HUMAN_LABELS[by_key[k]] for k in sample.keys], "labeller": "ann", "at": None}
    )
    table = L.corrected_rates(df, labels, by=("benchmark", "model"), n_boot=1000)
    row = table.iloc[0]
    assert table.attrs["method"].startswith("misclassification correction by matrix inversion (Rogan & Gladen")
    assert "same in every cell" in table.attrs["assumption"] and row["confusion"] == "per source"
    for i, t in enumerate(HUMAN_LABELS):
        assert row[f"{t}_corrected_lo"] <= 100 * TRUE_PI[i] <= row[f"{t}_corrected_hi"], t
    for t in ("correct", "hallucination"):  # the judged rates' own intervals miss the truth
        i = HUMAN_LABELS.index(t)
        lo, hi = bootstrap_ci((df["outcome"] == t).to_numpy(float), df["question_id"].to_numpy())
        assert not lo <= TRUE_PI[i] <= hi, t
    assert row["correct"] > 100 * TRUE_PI[0] + 2 and row["hallucination"] < 100 * TRUE_PI[2] - 5


def test_interval_coverage_over_200_seeds():
    """95 % intervals of the corrected rates cover the true rates about 95 % of the time; those of
    the judged rates almost never (they are biased by the judge's credit to hallucinations)."""
    n_seeds, n_replies, n_labels = 200, 2000, 200
    hits = np.zeros(3)
    raw_hits = np.zeros(3)
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        truth, judged, q = simulate(seed, n_replies, rng)
        alloc = allocate({a: int((judged == a).sum()) for a in range(4)}, n_labels)
        lab = np.concatenate([rng.choice(np.flatnonzero(judged == a), k, replace=False) for a, k in alloc.items() if k])
        sizes = {("s", JUDGED[a]): int((judged == a).sum()) for a in range(4)}
        conf = Confusion.estimate(
            ["s"] * len(lab),
            [JUDGED[a] for a in judged[lab]],
            [HUMAN_LABELS[t] for t in truth[lab]],
            sizes,
            n_boot=400,
            seed=seed,
        )
        res = correct_cell(
            conf, [("s", cluster_counts([JUDGED[a] for a in judged], np.zeros(n_replies, bool), q))], seed=seed
        )
        for i, t in enumerate(HUMAN_LABELS):
            lo, hi = res[t]["ci"]
            hits[i] += lo <= 100 * TRUE_PI[i] <= hi
            rlo, rhi = bootstrap_ci((judged == i).astype(float), q, n_boot=200, seed=seed)
            raw_hits[i] += rlo <= TRUE_PI[i] <= rhi
    coverage = hits / n_seeds
    print("corrected coverage", coverage, "judged-rate coverage", raw_hits / n_seeds)
    assert ((coverage >= 0.90) & (coverage <= 0.995)).all(), coverage
    assert raw_hits[0] / n_seeds < 0.5 and raw_hits[2] / n_seeds < 0.05


def test_fewer_labels_give_wider_intervals_and_clipping_is_flagged():
    truth, judged, q = simulate(0, 2000, np.random.default_rng(5))
    sizes = {("s", JUDGED[a]): int((judged == a).sum()) for a in range(4)}
    cc = cluster_counts([JUDGED[a] for a in judged], np.zeros(len(judged), bool), q)
    widths = []
    for n in (30, 300):
        alloc = allocate({a: int((judged == a).sum()) for a in range(4)}, n)
        rng = np.random.default_rng(n)
        lab = np.concatenate([rng.choice(np.flatnonzero(judged == a), k, replace=False) for a, k in alloc.items() if k])
        conf = Confusion.estimate(
            ["s"] * len(lab), [JUDGED[a] for a in judged[lab]], [HUMAN_LABELS[t] for t in truth[lab]], sizes, n_boot=500
        )
        r = correct_cell(conf, [("s", cc)])
        widths.append(r["hallucination"]["ci"][1] - r["hallucination"]["ci"][0])
    assert widths[0] > 1.5 * widths[1]
    # labels say a fifth of true correct replies are judged deflections; a cell judged all correct
    # would then be 125 % correct: clipped to 100 and flagged
    conf = Confusion.estimate(
        ["s"] * 23,
        ["correct"] * 8 + ["deflection"] * 10 + ["hallucination"] * 5,
        ["correct"] * 10 + ["deflection"] * 8 + ["hallucination"] * 5,
        {("s", "correct"): 80, ("s", "deflection"): 100, ("s", "hallucination"): 50},
        n_boot=100,
    )
    cell = np.array([[1, 0, 0, 0, 0]] * 50, dtype=float)
    r = correct_cell(conf, [("s", cell)])
    assert all(0 <= r[t]["value"] <= 100 for t in HUMAN_LABELS)
    assert r["correct"]["clipped"] and r["correct"]["value"] == 100.0


def test_per_source_where_labels_allow_else_pooled(run_dir):
    table = L.corrected_rates(run_dir, by=("source",), n_boot=200, min_labels=30)
    groups = table.attrs["confusion_groups"]
    per = dict(zip(table["source"], table["confusion"]))
    for src, basis in per.items():
        assert basis == ("per source" if src in groups else "pooled")
    assert "pooled" in groups and set(per.values()) == {"per source", "pooled"}


def test_report_and_summary_show_corrected_rates(run_dir, tmp_path):
    from mmrag.labels.report import corrected_section
    from mmrag.labels.summary import with_corrected
    from mmrag.reports import CIOptions, report
    from mmrag.runs.frame import read_records
    from mmrag.runs.summary import write_summary

    paths = report(run_dir, tmp_path / "rep", opts=CIOptions(n_boot=200), browser=False, sections=(corrected_section,))
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Rates corrected for judge error" in md and "Rogan & Gladen" in md and "Assumption:" in md
    assert "judged → corrected" in md and "coverage %" in md
    csv = pd.read_csv(tmp_path / "rep" / "tables" / "corrected.csv")
    assert {"correct_corrected", "correct_corrected_lo", "hallucination_clipped", "confusion", "coverage"} <= set(
        csv.columns
    )
    scen = pd.read_csv(tmp_path / "rep" / "tables" / "scenario.csv")
    assert np.allclose(scen["coverage"], 100 - scen["unparseable"])
    assert any(p.name == "corrected.csv" for p in paths)
    summary = with_corrected(run_dir, write_summary(run_dir, read_records(run_dir)))
    jc = summary["judge_corrected"]
    assert jc["labeller"] == "ann" and jc["groups"] and "Rogan" in jc["method"]
    g = jc["groups"][0]
    assert set(g["rates"]) == set(HUMAN_LABELS) and g["rates"]["correct"]["ci"][0] <= g["rates"]["correct"]["ci"][1]
    assert "## Rates corrected for judge error" in (run_dir / "summary.md").read_text()


# -- the server -----------------------------------------------------------------------------------


def test_server_serves_only_its_token_paths_with_a_strict_csp(tmp_path):
    from mmrag.labels.server import LabelServer

    d = build_run(tmp_path, full=False, xss=True)
    session = L.open_session(d, "ann", n=12)
    with LabelServer(session) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        with httpx.Client() as c:
            page = c.get(srv.url)
            assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
            assert "unsafe-inline" not in page.headers["content-security-policy"]
            assert page.headers["referrer-policy"] == "no-referrer"
            for path in (
                "/",
                "/api/state",
                f"/{srv.token[:-1]}x/",
                f"/{srv.token}/static/../server.py",
                f"/{srv.token}/static/label.html",
                f"/{srv.token}/api/item/999",
            ):
                assert c.get(base + path).status_code == 404, path
            assert c.get(srv.url, headers={"Host": "evil.example"}).status_code == 400
            state = c.get(srv.url + "api/state").json()
            assert state["keys"] == session.sample.keys and state["labels"] == [] and state["show_judge"] is False
            item = c.get(srv.url + "api/item/0").json()
            assert "judge" not in item and "outcome" not in json.dumps(item)
            key = state["keys"][0]
            assert (
                c.post(srv.url + "api/label", content=json.dumps({"key": key, "label": "correct"})).status_code == 415
            )
            assert c.post(srv.url + "api/label", json={"key": key, "label": "maybe"}).status_code == 400
            assert c.post(srv.url + "api/label", json={"key": "nope", "label": "correct"}).status_code == 400
            r = c.post(srv.url + "api/label", json={"key": key, "label": "correct"})
            assert r.status_code == 200
    assert L.load(d)[["key", "label", "labeller"]].values.tolist() == [[key, "correct", "ann"]]
