"""``mmrag reproduce`` and ``mmrag report --paper``: each made table asserts the numbers it shows
against the run's own records, each figure the numbers it draws (from its CSV), and ``paper.md``
indexes every table and figure of the paper (made, or why not)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mmrag.cli import main
from mmrag.judging.mcq_official import official_is_correct
from mmrag.reports.paper import get_paper
from mmrag.runs.frame import load
from mmrag.scenarios import load_sweep


def _cells(df: pd.DataFrame, preset: str) -> pd.DataFrame:
    return df[df["scenario_id"].isin({s.id for s in load_sweep(preset).expand()})]


def _csv(path) -> pd.DataFrame:
    """A table as written ("None" is a severity level here, not a missing value)."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def _pct(values) -> float:
    return 100.0 * float(np.mean(np.asarray(values, dtype=float)))


def _index_lists_every_artifact(out, paper: str) -> str:
    text = (out / "paper.md").read_text()
    for a in get_paper(paper).artifacts:
        assert f"| {a.id.replace('_', ' ').title()} | {a.title} |" in text, a.id
    return text


# ---------------------------------------------------------------- VLM-DeflectionBench


@pytest.fixture(scope="module")
def db(module_home, tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "db"
    assert (
        main(
            [
                "reproduce",
                "deflectionbench",
                "--model",
                "context-reader",
                "--limit",
                "3",
                "--out",
                str(out),
                "--paper-model",
                "Keye-1.5-8B",
            ]
        )
        == 0
    )
    return out, load(out / "run")


def test_deflectionbench_tables_equal_the_records(db):
    out, df = db
    text = _index_lists_every_artifact(out, "deflectionbench")
    for made in ("table_3", "table_4", "table_5", "table_6", "table_8", "table_9", "figure_3"):
        assert (out / f"{made}.csv").is_file(), made
    assert "| Table 2 | " in text and "needs gating models: pass `--gating-model`" in text
    assert not (out / "table_2.csv").exists() and not (out / "figure_5.csv").exists()
    t4 = _csv(out / "table_4.csv").set_index("model")
    d4 = _cells(df, "deflectionbench-paper")
    for kind in ("parametric", "oracle", "realistic", "adversarial"):
        g = d4[d4["kind"] == kind]
        assert t4.loc["context-reader", f"{kind}_acc"] == pytest.approx(_pct(g["correct"]))
        assert t4.loc["context-reader", f"{kind}_defl"] == pytest.approx(_pct(g["deflection"]))
        assert t4.loc["context-reader", f"{kind}_hall"] == pytest.approx(_pct(g["hallucination"]))
        assert g["strictness"].eq("moderate").all()
    for table, preset, kinds in (
        ("table_6", "strictness", ("realistic", "adversarial")),
        ("table_9", "strictness-parametric-oracle", ("parametric", "oracle")),
    ):
        t = _csv(out / f"{table}.csv")
        assert list(t["severity"]) == ["None", "Soft", "Moderate", "Severe"]
        d = _cells(df, preset)
        for _, r in t.iterrows():
            for kind in kinds:
                g = d[(d["kind"] == kind) & (d["strictness"] == r["severity"].lower())]
                assert r[f"{kind}_defl"] == pytest.approx(_pct(g["deflection"])), (table, r["severity"], kind)
    t5 = _csv(out / "table_5.csv")
    d5 = _cells(df, "modality-matrix")
    names = {"Textual": "text", "Visual": "image", "MM": "multimodal"}
    for _, r in t5.iterrows():
        g = d5[(d5["positive_modality"] == names[r["positive"]]) & (d5["negative_modality"] == names[r["negative"]])]
        assert r["acc"] == pytest.approx(_pct(g["correct"])) and r["n"] == g["sample_id"].nunique()
    t8 = _csv(out / "table_8.csv")
    assert list(t8["source"]) == ["demo"] and t8.loc[0, "n"] == 3
    assert t8.loc[0, "oracle_acc"] == pytest.approx(t4.loc["context-reader", "oracle_acc"])
    t3 = _csv(out / "table_3.csv").set_index("source")
    samples = {r: g for r, g in df.groupby("sample_id")}
    assert t3.loc["all", "total_samples"] == len(samples) == 3
    assert t3.loc["all", "unique_questions"] == df.drop_duplicates("sample_id")["question"].nunique()


def test_deflectionbench_figure_3_draws_the_curve_cells_and_vs_paper_lines_up(db):
    out, df = db
    fig = _csv(out / "figure_3.csv")
    d = _cells(df, "distractor-curve")
    real = fig[(fig["outcome"] == "correct") & (fig["kind"] == "realistic")].set_index("n_distractors")
    assert sorted(real.index) == [0, 1, 2, 4, 8]  # n = 0 is the oracle point
    for n in (1, 2, 4, 8):
        g = d[(d["kind"] == "realistic") & (d["n_distractors"] == n)]
        assert real.loc[n, "rate"] == pytest.approx(_pct(g["correct"]))
    assert real.loc[0, "rate"] == pytest.approx(_pct(d[d["kind"] == "oracle"]["correct"]))
    cmp = _csv(out / "table_4_vs_paper.csv")
    ours = _csv(out / "table_4.csv").iloc[0]
    row = cmp[cmp["column"] == "adversarial_defl"].iloc[0]
    assert (row["published"], row["table"], row["row"]) == (43.4, "table_4", "model=Keye-1.5-8B")
    assert row["ours"] == pytest.approx(ours["adversarial_defl"])
    assert row["diff"] == pytest.approx(ours["adversarial_defl"] - 43.4)
    assert (row["ours_lo"], row["ours_hi"]) == pytest.approx((ours["adversarial_defl_lo"], ours["adversarial_defl_hi"]))
    assert len(cmp) == 12


def test_rerun_is_idempotent_and_report_paper_makes_the_curation_items(db, tmp_path, capsys):
    out, df = db
    capsys.readouterr()
    assert main(["reproduce", "deflectionbench", "--model", "context-reader", "--limit", "3", "--out", str(out)]) == 0
    assert "new records: 0" in capsys.readouterr().out
    cur = tmp_path / "cur"
    cfg = tmp_path / "curate.yaml"
    cfg.write_text(
        "benchmark: {name: demo}\ngating_models:\n  - {backend: sim-vlm}\n  - {backend: context-reader}\n"
        "judge: {mode: rule}\nk_min: 2\nnegatives_per_modality: 2\nlimit: 6\n"
    )
    assert main(["curate", "--config", str(cfg), "--out", str(cur)]) == 0
    rep = tmp_path / "paper"
    assert (
        main(["report", str(out / "run"), "--paper", "deflectionbench", "--curation", str(cur), "--out", str(rep)]) == 0
    )
    report = json.loads((cur / "report.json").read_text())
    t2 = _csv(rep / "table_2.csv").set_index("source")
    assert t2.loc["all", "input"] == 6 and t2.loc["all", "samples"] == report["totals"]["stage3_oracle"]
    assert t2.loc["all", "retained_pct"] == pytest.approx(100 * report["totals"]["stage3_oracle"] / 6)
    stage1 = [json.loads(x) for x in (cur / "stage1_parametric.jsonl").read_text().splitlines()]
    f5 = _csv(rep / "figure_5.csv")
    models = list(stage1[0]["outcomes"])
    assert list(f5["k"]) == [0, 1, 2]
    first = [r for r in stage1 if r["outcomes"][models[0]] != "correct"]
    assert f5.loc[1, "remaining"] == len(first)
    assert f5.loc[0, "parametric_accuracy"] == pytest.approx(
        100 * np.mean([r["outcomes"][m] == "correct" for r in stage1 for m in models])
    )
    assert f5.loc[2, "remaining"] == sum(1 for r in stage1 if r["kept"])
    f4 = _csv(rep / "figure_4.csv")
    kept = sum(1 for x in (cur / "stage3_oracle.jsonl").read_text().splitlines() if json.loads(x)["kept"])
    assert f4["n_before"].sum() == 6 and f4["n_after"].sum() == kept
    assert f4["before_pct"].sum() == pytest.approx(100.0)
    assert (f4["shift_pp"] == f4["after_pct"] - f4["before_pct"]).all()
    assert (rep / "figure_4.png").is_file() and (rep / "figure_5.svg").is_file()


# ---------------------------------------------------------------- HumbleBench


def test_humblebench_overall_and_stress_tables(module_home, tmp_path):
    out = tmp_path / "hb"
    assert (
        main(
            [
                "reproduce",
                "humblebench",
                "--model",
                "random-choice",
                "--limit",
                "20",
                "--out",
                str(out),
                "--paper-model",
                "Qwen2.5-VL",
            ]
        )
        == 0
    )
    _index_lists_every_artifact(out, "humblebench")
    df = load(out / "run")
    df = df.assign(ok=[official_is_correct(r or "", lb or "") for r, lb in zip(df["response"], df["label"])])
    common = df[df["stress"] == "common"]
    t4 = _csv(out / "table_4.csv").iloc[0]
    assert t4["accuracy"] == pytest.approx(_pct(common["ok"]))
    assert t4["nota_hit_rate"] == pytest.approx(_pct(common[common["label_is_nota"]]["ok"]))
    assert t4["non_nota_accuracy"] == pytest.approx(_pct(common[~common["label_is_nota"]]["ok"]))
    for t in ("Object", "Relation", "Attribute"):
        assert t4[f"{t.lower()}_accuracy"] == pytest.approx(_pct(common[common["type"] == t]["ok"])), t
    share = common["label_is_nota"].mean()
    assert t4["accuracy"] == pytest.approx(share * t4["nota_hit_rate"] + (1 - share) * t4["non_nota_accuracy"])
    t5 = _csv(out / "table_5.csv").set_index("setting")
    t6 = _csv(out / "table_6.csv").set_index("setting")
    assert list(t5.index) == ["clean", "cautious prompt", "noise image"]
    assert list(t6.index) == ["clean", "noise image + forced grounding", "NOTA-only", "shuffled NOTA position"]
    noise = df[df["stress"] == "noise_image"]
    assert t5.loc["noise image", "accuracy"] == pytest.approx(_pct(noise["ok"]))  # against the original labels
    assert t5.loc["noise image", "nota_share"] == pytest.approx(_pct(noise["chose_nota"]))
    assert t6.loc["NOTA-only", "accuracy"] == pytest.approx(t6.loc["NOTA-only", "nota_hit_rate"])
    cmp = _csv(out / "table_4_vs_paper.csv").set_index("column")
    assert cmp.loc["nota_hit_rate", "published"] == 32.33 and cmp.loc["accuracy", "published"] == 72.2


# ---------------------------------------------------------------- KnowHal


def test_knowhal_table_2_and_figure_4(module_home, tmp_path):
    out = tmp_path / "kh"
    assert main(["reproduce", "knowhal", "--model", "sim-vlm", "--limit", "24", "--out", str(out)]) == 0
    _index_lists_every_artifact(out, "knowhal")
    df = load(out / "run")
    t2 = _csv(out / "table_2.csv").iloc[0]
    avgs = {}
    for pol, p in (("positive", "pos"), ("negative", "neg")):
        vals = []
        for dim in "EARK":
            g = df[(df["polarity"] == pol) & (df["dimension"] == dim)]
            assert t2[f"{p}_{dim}"] == pytest.approx(_pct(g["score"])), (pol, dim)
            vals.append(_pct(g["score"]))
        avgs[p] = float(np.mean(vals))
        assert t2[f"{p}_avg"] == pytest.approx(avgs[p])
    assert t2["overall"] == pytest.approx((avgs["pos"] + avgs["neg"]) / 2)
    assert t2["hps"] == pytest.approx((1 - avgs["neg"] / avgs["pos"]) * 100)
    f4 = _csv(out / "figure_4.csv")
    assert set(f4["domain"]) == set(df["domain"]) and df["domain"].notna().all()
    for _, r in f4.iterrows():
        g = df[(df["domain"] == r["domain"]) & (df["polarity"] == r["polarity"])]
        assert r["accuracy"] == pytest.approx(_pct(g["score"])) and r["n"] == len(g)
    t3 = _csv(out / "table_3.csv").set_index("domain")
    for dom, g in df.groupby("domain"):
        assert t3.loc[dom, "questions"] == len(g) and t3.loc[dom, "questions_R"] == (g["dimension"] == "R").sum()
    # Relation negatives are multiple choice, judged by option like the positives
    rel = df[(df["dimension"] == "R") & (df["polarity"] == "negative")]
    assert len(rel) and rel["label"].isin(list("ABCD")).all()
    assert rel[rel["outcome"] != "deflection"]["extracted"].isin(list("ABCD")).all()


def test_raw_record_rows_carry_the_question_and_old_runs_without_domain_still_open(module_home, tmp_path):
    """The records table holds the question text itself (readable without the objects table), and
    a run written before the ``domain`` column existed opens with an empty domain."""
    import pyarrow.parquet as pq

    out = tmp_path / "kh"
    assert main(["run", "-b", "demo-knowhal", "-m", "sim-vlm", "--limit", "4", "--out", str(out)]) == 0
    df = load(out)
    seg = next((out / "records").glob("*.parquet"))
    raw = pq.read_table(seg, columns=["key", "question"]).to_pandas().set_index("key")["question"]
    assert (raw.reindex(df["key"]).to_numpy() == df["question"].to_numpy()).all()
    assert df["domain"].notna().all()
    for obj in (out / "objects").glob("*.parquet"):  # as an older version wrote it: no domain column
        t = pq.read_table(obj)
        pq.write_table(t.drop_columns(["domain"]), obj)
    old = load(out)
    assert old["domain"].isna().all() and (old["question"] == df["question"]).all()
