"""``mmrag reproduce`` and ``mmrag report --paper``: each made table asserts the numbers it shows
against the run's own records, each figure the numbers it draws (from its CSV), and ``paper.md``
indexes every table and figure of the paper (made, or why not).  What every output says about its
data, model and judge, the published rows beside ours and the figures' readability are in
``tests/test_reproduce_outputs.py``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mmrag.cli import main
from mmrag.judging.mcq_official import official_extract, official_is_correct
from mmrag.reports.paper import get_paper
from mmrag.reports.paper.published import published, table_rows
from mmrag.runs.frame import load
from mmrag.scenarios import load_sweep


def _cells(df: pd.DataFrame, preset: str) -> pd.DataFrame:
    return df[df["scenario_id"].isin({s.id for s in load_sweep(preset).expand()})]


def _csv(path, origin: str | None = "ours") -> pd.DataFrame:
    """A table as written ("None" is a severity level here, not a missing value): our rows only
    unless ``origin`` is None (a paper table lists the published rows under ours)."""
    t = pd.read_csv(path, keep_default_na=False, na_values=[""])
    if origin is not None and "origin" in t.columns:
        t = t[t["origin"] == origin].drop(columns="origin").reset_index(drop=True)
    return t


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
                "sim-vlm",
                "--model",
                "always-deflect",
                "--limit",
                "6",
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
    assert list(t4.index) == ["sim-vlm", "always-deflect"]  # in the order given
    d4 = _cells(df, "deflectionbench-paper")
    for kind in ("parametric", "oracle", "realistic", "adversarial"):
        g = d4[(d4["kind"] == kind) & (d4["model"] == "sim-vlm")]
        for short, col in (("acc", "correct"), ("defl", "deflection"), ("hall", "hallucination")):
            assert t4.loc["sim-vlm", f"{kind}_{short}"] == pytest.approx(_pct(g[col]))
            assert t4.loc["sim-vlm", f"{kind}_{short}_n"] == len(g)
        assert g["strictness"].eq("moderate").all()
        # the four shares sum to 100 (the paper's three do); undecided is the part of unparseable with a reply
        four = [t4.loc["sim-vlm", f"{kind}_{m}"] for m in ("acc", "defl", "hall", "unparseable")]
        assert sum(four) == pytest.approx(100.0)
        assert t4.loc["sim-vlm", f"{kind}_unparseable"] == pytest.approx(_pct(g["unparseable"]))
        assert 0 <= t4.loc["sim-vlm", f"{kind}_undecided"] <= t4.loc["sim-vlm", f"{kind}_unparseable"]
    for table, preset, kinds in (
        ("table_6", "strictness", ("realistic", "adversarial")),
        ("table_9", "strictness-parametric-oracle", ("parametric", "oracle")),
    ):
        t = _csv(out / f"{table}.csv")
        t = t[t["model"] == "sim-vlm"]
        assert list(t["severity"]) == ["None", "Soft", "Moderate", "Severe"]
        d = _cells(df, preset)
        d = d[d["model"] == "sim-vlm"]
        for _, r in t.iterrows():
            for kind in kinds:
                g = d[(d["kind"] == kind) & (d["strictness"] == r["severity"].lower())]
                assert r[f"{kind}_defl"] == pytest.approx(_pct(g["deflection"])), (table, r["severity"], kind)
    t5 = _csv(out / "table_5.csv")
    d5 = _cells(df, "modality-matrix")
    names = {"Textual": "text", "Visual": "image", "MM": "multimodal"}
    for _, r in t5.iterrows():
        g = d5[
            (d5["model"] == r["model"])
            & (d5["positive_modality"] == names[r["positive"]])
            & (d5["negative_modality"] == names[r["negative"]])
        ]
        assert r["acc"] == pytest.approx(_pct(g["correct"])) and r["n"] == g["sample_id"].nunique() == r["acc_n"]
    t3 = _csv(out / "table_3.csv").set_index("source")
    samples = {r: g for r, g in df.groupby("sample_id")}
    assert t3.loc["all", "total_samples"] == len(samples) == 6
    assert t3.loc["all", "unique_questions"] == df.drop_duplicates("sample_id")["question"].nunique()


def test_table_8_is_at_the_moderate_setting_of_tables_6_and_9(db):
    """The paper's Table 8 is at Tables 6 / 9's Moderate level (tests/test_paper_data.py derives it
    from the published numbers): ours reads those cells, so its rows weighted by n give our Tables
    6 and 9 Moderate rows, as the paper's do."""
    out, df = db
    t8 = _csv(out / "table_8.csv")
    assert set(t8["source"]) == {"demo"} and (t8["n"] == 6).all()
    moderate = df[df["scenario_id"].isin({s.id for p in ("strictness", "strictness-parametric-oracle")
                                          for s in load_sweep(p).expand() if s.strictness == "moderate"})]  # fmt: skip
    t6, t9 = (_csv(out / f"{t}.csv").set_index(["model", "severity"]) for t in ("table_6", "table_9"))
    for _, r in t8.iterrows():
        for kind, t in (("parametric", t9), ("oracle", t9), ("realistic", t6), ("adversarial", t6)):
            g = moderate[(moderate["model"] == r["model"]) & (moderate["kind"] == kind)]
            for short, col in (("acc", "correct"), ("defl", "deflection"), ("hall", "hallucination")):
                assert r[f"{kind}_{short}"] == pytest.approx(_pct(g[col]))
                assert r[f"{kind}_{short}"] == pytest.approx(t.loc[(r["model"], "Moderate"), f"{kind}_{short}"])


def test_deflectionbench_figure_3_draws_each_point_as_what_it_is_and_vs_paper_lines_up(db):
    out, df = db
    fig = _csv(out / "figure_3.csv", origin=None)
    d = _cells(df, "distractor-curve-paper")
    assert d["strictness"].eq("moderate").all()  # Table 4's strictness
    ours = fig[(fig["origin"] == "ours") & (fig["outcome"] == "correct") & (fig["model"] == "sim-vlm")]
    real = ours[ours["point"] == "realistic"].set_index("n_distractors")
    assert sorted(real.index) == [1, 2, 4, 8]  # no realistic point at 0 negatives
    for n in (1, 2, 4, 8):
        g = d[(d["kind"] == "realistic") & (d["n_distractors"] == n) & (d["model"] == "sim-vlm")]
        assert real.loc[n, "rate"] == pytest.approx(_pct(g["correct"])) and real.loc[n, "n"] == len(g)
    oracle = ours[ours["point"] == "oracle"]
    assert list(oracle["n_distractors"]) == [0]
    assert oracle["rate"].iloc[0] == pytest.approx(
        _pct(d[(d["kind"] == "oracle") & (d["model"] == "sim-vlm")]["correct"])
    )
    t4 = _csv(out / "table_4.csv").set_index("model")  # the n = 2 point and the oracle are Table 4's cells
    assert real.loc[2, "rate"] == pytest.approx(t4.loc["sim-vlm", "realistic_acc"])
    assert oracle["rate"].iloc[0] == pytest.approx(t4.loc["sim-vlm", "oracle_acc"])
    pub = fig[(fig["origin"] == "published") & (fig["model"] == "Keye-1.5-8B") & (fig["outcome"] == "correct")]
    assert dict(zip(pub["point"], pub["rate"])) == {"oracle": 63.4, "realistic": 47.6}
    assert dict(zip(pub["point"], pub["n_distractors"])) == {"oracle": 0, "realistic": 2}
    svg = (out / "figure_3.svg").read_text()
    assert "published (Table 4) · Keye-1.5-8B" in svg and "oracle · sim-vlm" in svg
    cmp = _csv(out / "table_4_vs_paper.csv")
    cmp = cmp[cmp["model"] == "sim-vlm"]
    ours4 = t4.loc["sim-vlm"]
    row = cmp[cmp["column"] == "adversarial_defl"].iloc[0]
    assert (row["published"], row["table"], row["row"]) == (43.4, "table_4", "model=Keye-1.5-8B")
    assert row["ours"] == pytest.approx(ours4["adversarial_defl"])
    assert row["diff"] == pytest.approx(ours4["adversarial_defl"] - 43.4)
    assert (row["ours_lo"], row["ours_hi"]) == pytest.approx(
        (ours4["adversarial_defl_lo"], ours4["adversarial_defl_hi"])
    )
    assert row["n"] == ours4["adversarial_defl_n"]
    assert len(cmp) == 12
    t3 = _csv(out / "table_3_vs_paper.csv").set_index("column")  # a table without a model column compares too
    assert t3.loc["total_samples", "published"] == 2775 and t3.loc["total_samples", "ours"] == 6


def test_rerun_is_idempotent_and_report_paper_makes_the_curation_items(db, tmp_path, capsys):
    out, df = db
    capsys.readouterr()
    assert (
        main(
            ["reproduce", "deflectionbench", "--model", "sim-vlm", "--model", "always-deflect", "--limit", "6"]
            + ["--out", str(out)]
        )
        == 0
    )
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
    _assert_figures_readable("deflectionbench", out / "run", curation=cur)


# ---------------------------------------------------------------- HumbleBench


@pytest.fixture(scope="module")
def hb(module_home, tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "hb"
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
    return out


def test_humblebench_overall_and_stress_tables(hb):
    out = hb
    _index_lists_every_artifact(out, "humblebench")
    df = load(out / "run")
    df = df.assign(
        ok=[official_is_correct(r or "", lb or "") for r, lb in zip(df["response"], df["label"])],
        e_rule=[official_extract(r or "") == nl for r, nl in zip(df["response"], df["nota_letter"])],
    )
    common = df[df["stress"] == "common"]
    t4 = _csv(out / "table_4.csv").iloc[0]
    assert t4["accuracy"] == pytest.approx(_pct(common["ok"])) and t4["accuracy_n"] == len(common)
    nota = common[common["label_is_nota"]]
    assert t4["nota_hit_rate"] == pytest.approx(_pct(nota["ok"]))
    assert t4["nota_hit_rate_n"] == len(nota) < len(common)  # each rate's n is its own denominator
    assert t4["non_nota_accuracy"] == pytest.approx(_pct(common[~common["label_is_nota"]]["ok"]))
    assert t4["non_nota_accuracy_n"] == len(common) - len(nota)
    for t in ("Object", "Relation", "Attribute"):
        sub = common[common["type"] == t]
        assert t4[f"{t.lower()}_accuracy"] == pytest.approx(_pct(sub["ok"])), t
        assert t4[f"{t.lower()}_accuracy_n"] == len(sub)
    # nota_share: the official E_proportion rule (single extracted letter = the NOTA option's); robust beside it
    assert t4["nota_share"] == pytest.approx(_pct(common["e_rule"]))
    assert t4["nota_share_robust"] == pytest.approx(_pct(common["chose_nota"].astype(bool)))
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
    assert cmp.loc["nota_hit_rate", "n"] == len(nota) and cmp.loc["accuracy", "n"] == len(common)
    shuffled = df[df["stress"] == "shuffle_options"]
    assert t6.loc["shuffled NOTA position", "nota_share"] == pytest.approx(_pct(shuffled["e_rule"]))


# ---------------------------------------------------------------- KnowHal


@pytest.fixture(scope="module")
def kh(module_home, tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "kh"
    assert main(["reproduce", "knowhal", "--model", "sim-vlm", "--limit", "24", "--out", str(out)]) == 0
    return out


def test_knowhal_table_2_and_figure_4(kh):
    out = kh
    _index_lists_every_artifact(out, "knowhal")
    df = load(out / "run")
    t2 = _csv(out / "table_2.csv").iloc[0]
    avgs = {}
    for pol, p in (("positive", "pos"), ("negative", "neg")):
        vals = []
        for dim in "EARK":
            g = df[(df["polarity"] == pol) & (df["dimension"] == dim)]
            assert t2[f"{p}_{dim}"] == pytest.approx(_pct(g["score"])), (pol, dim)
            assert t2[f"{p}_{dim}_n"] == len(g)
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
    md = (out / "figure_4.md").read_text()  # the per-domain numbers, with Overall and HPS per domain
    for dom, g in df.groupby("domain"):
        pos, neg = (_pct(g[g["polarity"] == p]["score"]) for p in ("positive", "negative"))
        assert f"| sim-vlm | {dom} | {pos:.1f} [" in md and f"| {(pos + neg) / 2:.1f} |" in md
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


# ---------------------------------------------------------------- what every output says; published rows


def _outs(db, hb, kh):
    return {"deflectionbench": db[0], "humblebench": hb, "knowhal": kh}


def test_every_output_names_its_data_model_and_judge(db, hb, kh):
    """paper.md, every table's caption and every figure's subtitle say: the demo world (not the
    paper's data), the simulated model(s) with their parameters, the judge id as the run manifest
    records it (never a literal here) beside the paper's judge, and n."""
    for name, out in _outs(db, hb, kh).items():
        manifest = json.loads((out / "run" / "manifest.json").read_text())
        jid = manifest["judge_id"]
        models = sorted(manifest["models"])
        text = (out / "paper.md").read_text()
        assert "the demo world" in text and "**not the paper's data**" in text, name
        assert f"`{jid}`" in text and f"the paper's judge: {get_paper(name).judge}" in text, name
        for m in models:
            assert f"`{m}`, simulated" in text, (name, m)
        assert "parameters: deflect_threshold=" in text or name == "humblebench"  # sim-vlm's, from its fingerprint
        assert "no labels" in text  # agreement with people: not measured, and said so
        made = [a for a in get_paper(name).artifacts if (out / f"{a.id}.csv").is_file()]
        assert made, name
        for a in made:
            if a.kind == "table":
                md = (out / f"{a.id}.md").read_text()
                assert "demo world (generated stand-in, not the paper's data)" in md, (name, a.id)
                assert f"judge {jid} (paper: " in md and "simulated" in md and "n = " in md, (name, a.id)
            else:
                svg = (out / f"{a.id}.svg").read_text()
                assert jid in svg and "demo world" in svg and "simulated" in svg, (name, a.id)


def test_published_rows_follow_ours_in_every_table_with_published_numbers(db, hb, kh):
    """Our rows first, then every published row of the table (origin ``published``), in our
    columns and with the printed values; the Markdown shows them in the same table."""
    for name, out in _outs(db, hb, kh).items():
        paper = get_paper(name)
        tables = published(paper.data_file)["tables"]
        for tid in tables:
            if not (out / f"{tid}.csv").is_file():
                assert tid in ("table_2", "table_7"), (name, tid)  # needs a curation / a human study
                continue
            t = _csv(out / f"{tid}.csv", origin=None)
            keys, rows = table_rows(paper.data_file, tid)
            origin = list(t["origin"])
            n_ours = origin.count("ours")
            assert n_ours and origin == ["ours"] * n_ours + ["published"] * len(rows), (name, tid)
            pub = t[t["origin"] == "published"].reset_index(drop=True)
            for i, r in enumerate(rows):
                for col, v in r.items():
                    if col in t.columns and isinstance(v, (int, float)) and col not in keys:
                        assert pub.loc[i, col] == pytest.approx(v), (name, tid, col)
                    elif col in keys:
                        assert str(pub.loc[i, col]) == str(v), (name, tid, col)
            md = (out / f"{tid}.md").read_text()
            assert md.count("| published |") == len(rows) and "Rows with origin `published`" in md, (name, tid)


def test_cells_under_30_items_are_flagged(db):
    out, _ = db
    md = (out / "table_4.md").read_text()
    cells = [c.strip() for line in md.splitlines() if line.startswith("| ours") for c in line.split("|")]
    shares = [c for c in cells if "[" in c]
    assert shares and all(c.endswith("†n=6") for c in shares)  # 6 samples: no "100.0 [100.0, 100.0]" alone
    assert "fewer than 30 items" in md
    assert "the paper's Acc + Defl + Hall sum to 100" in md  # what unparseable / undecided beside them are


def _assert_figures_readable(name: str, run, curation=None) -> int:
    """Every figure the run (and curation) makes, as saved: no two drawn texts overlap and nothing
    lies outside the canvas, the subtitle included; returns how many were checked."""
    from figcheck import layout_problems

    from mmrag.reports.paper import Context
    from mmrag.reports.paper.cells import mark_undecided
    from mmrag.reports.paper.provenance import provenance
    from mmrag.reports.paper.write import build_figure

    paper = get_paper(name)
    ctx = Context(df=load(run), run_dirs=(run,), curation=curation)
    ctx.df = mark_undecided(ctx.df, ctx.records())
    prov = provenance(ctx.run_dirs, ctx.df, demo_benchmark=paper.demo_benchmark, paper_judge=paper.judge)
    figures = [a for a in paper.artifacts if a.kind == "figure" and not a.missing(ctx)]
    for a in figures:
        fig = build_figure(paper, a, ctx, prov)
        assert fig.get_suptitle().startswith("Ours: data demo world"), (name, a.id)
        assert layout_problems(fig) == [], (name, a.id)
    return len(figures)


def test_every_figure_is_readable(db, kh):
    """Figure 3 (two models and four published ones in its legend) and KnowHal's Figure 4; the
    curation figures are checked where the curation is made (the test above)."""
    assert _assert_figures_readable("deflectionbench", db[0] / "run") == 1
    assert _assert_figures_readable("knowhal", kh / "run") == 1
