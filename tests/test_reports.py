"""mmrag.reports: rate tables with clustered CIs, paired tests, figures, report.md, the CLI command."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
import typer
from PIL import Image
from runfactory import MODELS, build_run, deflection_records, humblebench_records, write_run
from typer.testing import CliRunner

from mmrag.errors import InputError
from mmrag.reports import (
    CIOptions,
    build_tables,
    humblebench_panel,
    knowhal_table,
    make_plots,
    model_differences,
    rate_table,
    report,
    scenario_differences,
    to_markdown,
)
from mmrag.reports.paired import holm, neighbours
from mmrag.reports.tables import strictness_rows
from mmrag.runs.frame import load

FAST = CIOptions(n_boot=300)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("reports"))


@pytest.fixture(scope="module")
def df(run_dir):
    return load(run_dir)


def synthetic(n_q: int, p_a: float, p_b: float, per_q: int = 1, seed: int = 0) -> pd.DataFrame:
    """Two models on the same samples with given correctness rates (for paired tests)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_q):
        for s in range(per_q):
            for model, p in (("A", p_a), ("B", p_b)):
                c = bool(rng.random() < p)
                rows.append(
                    {
                        "benchmark": "x",
                        "scenario_id": "s",
                        "model": model,
                        "sample_id": f"q{q}-{s}",
                        "question_id": f"q{q}",
                        "correct": c,
                        "deflection": not c,
                        "hallucination": False,
                        "unparseable": False,
                    }
                )
    return pd.DataFrame(rows)


def test_scenario_table_matches_pandas_and_brackets_the_rate(df):
    t = build_tables(df, ["scenario"], FAST)["scenario"][1]
    expected = df.groupby(["benchmark", "model", "scenario_id"]).agg(
        n=("key", "size"), c=("correct", "mean"), q=("question_id", "nunique")
    )
    assert len(t) == len(expected)
    for _, row in t.iterrows():
        e = expected.loc[(row.benchmark, row.model, row.scenario_id)]
        assert row.n == e.n and row.n_questions == e.q
        assert row.correct == pytest.approx(100 * e.c)
        for o in ("correct", "deflection", "hallucination", "unparseable"):
            assert row[f"{o}_lo"] - 1e-9 <= row[o] <= row[f"{o}_hi"] + 1e-9
    # the four rates of a group add up to 100
    assert np.allclose(t[["correct", "deflection", "hallucination", "unparseable"]].sum(axis=1), 100)
    # same seed, same numbers
    again = build_tables(df, ["scenario"], FAST)["scenario"][1]
    pd.testing.assert_frame_equal(t, again)


def test_intervals_are_clustered_by_question():
    base = synthetic(40, 0.5, 0.5)
    base = base[base.model == "A"]
    dup_same = pd.concat([base] * 4, ignore_index=True)  # 4 near-copies of each question
    dup_new = dup_same.copy()
    dup_new["question_id"] = dup_new["question_id"] + "-" + (dup_new.index // len(base)).astype(str)

    def width(d):
        r = rate_table(d, ["model"], opts=FAST).iloc[0]
        return r.correct_hi - r.correct_lo

    w0 = width(base)
    assert width(dup_same) > 0.8 * w0  # copies of a question are not new evidence
    assert width(dup_new) < 0.7 * w0  # as independent questions they would (wrongly) be


def test_tables_only_where_the_data_varies(df, tmp_path):
    assert set(build_tables(df, opts=FAST)) == {
        "scenario",
        "modality",
        "distractors",
        "strictness",
        "source",
        "humblebench_type",
        "knowhal_dimension",
    }
    hb_only = load(write_run(tmp_path / "hb", humblebench_records(tmp_path, n_questions=3)))
    assert set(build_tables(hb_only, opts=FAST)) == {"scenario", "humblebench_type"}
    with pytest.raises(InputError, match="unknown table"):
        build_tables(df, ["nope"])


def test_strictness_table_holds_the_other_knobs_fixed(df):
    rows = strictness_rows(df)
    # only the realistic n=2 text/text and adversarial n=2 cells were run at all four levels
    assert set(zip(rows.kind, rows.n_distractors)) == {("realistic", 2), ("adversarial", 2)}
    assert set(rows[rows.kind == "realistic"].negative_modality) == {"text"}
    t = build_tables(df, ["strictness"], FAST)["strictness"][1]
    assert list(t[(t.model == MODELS[0]) & (t.kind == "realistic")].strictness) == [
        "none",
        "soft",
        "moderate",
        "severe",
    ]
    assert set(t.n) == {8}  # 4 questions x 2 samples per level, not every realistic "none" prompt


def test_paired_model_difference_detects_a_real_gap_and_not_a_null_one():
    gap = model_differences(synthetic(60, 0.2, 0.8), opts=FAST).iloc[0]
    assert (gap.a, gap.b) == ("A", "B") and gap.n_pairs == 60
    assert gap.d_correct == pytest.approx(gap.correct_b - gap.correct_a)
    assert gap.d_correct_lo > 0 and gap.p_mcnemar < 0.001
    null = synthetic(60, 0.5, 0.5, seed=3)
    null.loc[null.model == "B", "correct"] = null.loc[null.model == "A", "correct"].to_numpy()
    same = model_differences(null, opts=FAST).iloc[0]
    assert same.d_correct == 0 and same.b01 == same.b10 == 0 and same.p_mcnemar == pytest.approx(1.0)


def test_paired_counts_discordant_pairs(df):
    t = model_differences(df, opts=FAST)
    row = t.iloc[0]
    g = df[(df.benchmark == row.benchmark) & (df.scenario_id == row.scenario_id)]
    a = g[g.model == row.a].set_index("sample_id").correct
    b = g[g.model == row.b].set_index("sample_id").correct.reindex(a.index)
    assert row.b01 == int((~a & b).sum()) and row.b10 == int((a & ~b).sum())
    assert (t.p_holm.dropna() >= t.p_mcnemar.dropna() - 1e-12).all()


def test_scenario_neighbours_differ_in_one_applicable_knob(df):
    t = scenario_differences(df, opts=FAST)
    labels = {sid: k for sid, k in zip(df.scenario_id, df.kind)}
    assert (t.changed.str.count(",") == 0).all()
    kinds = {(labels[a], labels[b]) for a, b in zip(t.a, t.b)}
    assert (
        ("oracle", "realistic") in kinds and ("parametric", "oracle") in kinds and ("realistic", "adversarial") in kinds
    )
    assert ("realistic", "oracle") not in kinds  # oracle is always the reference arm
    base = {
        "kind": "realistic",
        "n_distractors": 1,
        "positive_modality": "text",
        "negative_modality": "text",
        "strictness": "none",
        "stress": "common",
    }
    assert neighbours(base, {**base, "n_distractors": 2})
    assert not neighbours(base, {**base, "n_distractors": 2, "negative_modality": "image"})
    assert neighbours({**base, "kind": "oracle", "n_distractors": 0, "negative_modality": None}, base)


def test_holm_adjustment():
    got = holm([0.01, 0.04, 0.03, float("nan")])
    assert np.allclose(got[:3], [0.03, 0.06, 0.06]) and np.isnan(got[3])


def test_humblebench_panel_and_knowhal_numbers(df, run_dir):
    hb = humblebench_panel(df, FAST)
    rows = df[df.benchmark_kind == "humblebench"]
    for _, r in hb.iterrows():
        g = rows[(rows.model == r.model) & (rows.stress == r.stress)]
        assert r.nota_share == pytest.approx(100 * g.chose_nota.mean())
        assert r.correct == pytest.approx(100 * g.correct.mean())
    nota_only = hb[hb.stress == "nota_only"]
    assert (nota_only.n_nota_gold == nota_only.n).all() and nota_only.non_nota_accuracy.isna().all()
    assert (nota_only.nota_hit_rate_robust == nota_only.nota_share).all()
    for _, r in hb.iterrows():  # official rule: accuracy is the NOTA-share-weighted mean of the two measures
        parts = [(r.n_nota_gold, r.nota_hit_rate), (r.n - r.n_nota_gold, r.non_nota_accuracy)]
        assert r.official_accuracy == pytest.approx(sum(k * v for k, v in parts if k) / r.n)
    kh = knowhal_table(df, FAST)
    rows = df[df.benchmark_kind == "knowhal"]
    for _, r in kh[kh.dimension == "pooled"].iterrows():
        g = rows[rows.model == r.model]
        pos, neg = g[g.polarity == "positive"].score.mean(), g[g.polarity == "negative"].score.mean()
        assert r.hps == pytest.approx(100 * (1 - neg / pos))
        assert r.overall == pytest.approx(50 * (pos + neg))
    assert set(kh.dimension) == {"E", "A", "R", "K", "macro", "pooled"}
    # macro = the mean over dimensions, as mmrag.metrics.knowhal_metrics (and summary.json) report it
    from mmrag.metrics import Scored, knowhal_metrics
    from mmrag.runs.frame import read_records

    for model in MODELS:
        items = [
            Scored(r.sample, r.prompt, r.response, r.verdict)
            for r in read_records(run_dir)
            if r.benchmark_kind == "knowhal" and r.model == model
        ]
        ref = knowhal_metrics(items, n_boot=100)
        macro = kh[(kh.model == model) & (kh.dimension == "macro")].iloc[0]
        assert macro.acc_pos == pytest.approx(ref["positive"]) and macro.acc_neg == pytest.approx(ref["negative"])
        if ref["hps"] is not None:
            assert macro.hps == pytest.approx(ref["hps"])


def test_figures_png_and_svg_deterministic(df, tmp_path):
    out = make_plots(df, tmp_path / "a", FAST)
    assert set(out) == {"distractor_curve", "modality_matrix", "strictness", "humblebench_stress", "knowhal"}
    for png, svg, _csv in out.values():
        with Image.open(png) as im:
            assert im.format == "PNG" and im.width > 600 and im.height > 300
            # not a blank canvas: many distinct colours
            assert len(im.convert("RGB").getcolors(maxcolors=1 << 20)) > 20
        root = ET.parse(svg).getroot()
        assert root.tag.endswith("svg")
    assert "hallucination % all" in out["distractor_curve"][1].read_text()
    again = make_plots(df, tmp_path / "b", FAST, names=["distractor_curve", "knowhal"])
    for name in again:
        assert out[name][1].read_bytes() == again[name][1].read_bytes()


def test_figures_only_with_variation(tmp_path):
    hb_only = load(write_run(tmp_path / "hb", humblebench_records(tmp_path, n_questions=3)))
    assert set(make_plots(hb_only, tmp_path / "f", FAST)) == {"humblebench_stress"}


def test_report_writes_everything_it_links(run_dir, tmp_path):
    out = tmp_path / "rep"
    paths = report(run_dir, out, opts=FAST)
    assert all(p.exists() for p in paths)
    md = (out / "report.md").read_text()
    import re

    links = re.findall(r"\]\(([^)]+)\)", md)
    assert links and all((out / link).exists() for link in links)
    for fig in ("distractor_curve", "modality_matrix", "strictness", "humblebench_stress", "knowhal"):
        assert f"figures/{fig}.png" in links and f"figures/{fig}.svg" in links
    csv = pd.read_csv(out / "tables" / "scenario.csv")
    assert pd.api.types.is_float_dtype(csv.correct_lo) and len(csv) > 10
    assert (out / "browser.html").exists() and not (run_dir / "report").exists()
    # the run directory is left untouched
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "samples.jsonl"]


def test_report_over_several_runs(tmp_path):
    a = write_run(tmp_path / "a", humblebench_records(tmp_path, n_questions=3, seed=1))
    b = write_run(tmp_path / "b", humblebench_records(tmp_path, n_questions=3, seed=7))
    with pytest.raises(InputError, match="--out"):
        report([a, b])
    out = tmp_path / "both"
    report([a, b], out, opts=FAST)
    paired = pd.read_csv(out / "tables" / "paired_models.csv")
    # the same model in two runs is compared across runs, not merged
    assert {f"{m} (a)" for m in MODELS} <= set(paired.a) | set(paired.b)
    assert (out / "browser-a.html").exists() and (out / "browser-b.html").exists()


def test_report_of_an_empty_run(tmp_path):
    d = write_run(tmp_path / "empty", [])
    report(d, opts=FAST)
    assert "no records" in (d / "report" / "report.md").read_text()


def test_markdown_escapes_and_marks_missing():
    t = pd.DataFrame(
        {
            "model": ["a|b", None],
            "x": [1.0, float("nan")],
            "x_lo": [0.5, float("nan")],
            "x_hi": [1.5, float("nan")],
            "d_y": [-2.0, 3.0],
        }
    )
    md = to_markdown(t)
    assert "a\\|b" in md and "| – |" in md and "1.0 [0.5, 1.5]" in md and "-2.0" in md and "+3.0" in md


def test_cli_command(tmp_path):
    from mmrag.commands.report import browse
    from mmrag.commands.report import report as report_cmd

    run_dir = write_run(tmp_path / "small", humblebench_records(tmp_path, n_questions=3))

    app = typer.Typer()
    app.command("report")(report_cmd)
    app.command("browse")(browse)
    out = tmp_path / "cli"
    res = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(out), "--n-boot", "200", "--quiet"])
    assert res.exit_code == 0, res.output
    assert (out / "report.md").exists() and (out / "figures" / "humblebench_stress.svg").exists()
    res = CliRunner().invoke(app, ["report", str(run_dir), "--out", str(out), "--level", "1.5"])
    assert isinstance(res.exception, InputError) and res.exception.field == "--level"
    res = CliRunner().invoke(app, ["browse", str(run_dir), "--out", str(tmp_path / "b.html")])
    assert res.exit_code == 0 and (tmp_path / "b.html").stat().st_size > 1000


# -- figures return the numbers they draw -----------------------------------------------------------


def _frame_rate(rows: pd.DataFrame, outcome: str) -> float:
    return 100.0 * rows[outcome].mean()


def test_distractor_curve_draws_each_outcome_in_its_panel(df):
    from mmrag.reports import draw_distractor_curve

    data = draw_distractor_curve(df, FAST).data
    base = df[(df.benchmark_kind == "deflection") & (df.strictness == "none")]
    assert set(data.outcome) == {"correct", "deflection", "hallucination"} and set(data.kind) == {
        "realistic",
        "adversarial",
    }
    for _, r in data.iterrows():
        if r.kind == "realistic" and r.n_distractors == 0:  # the oracle rows are the n = 0 point
            rows = base[(base.kind == "oracle") & (base.model == r.model)]
        else:
            rows = base[(base.kind == r.kind) & (base.n_distractors == r.n_distractors) & (base.model == r.model)]
        assert r.rate == pytest.approx(_frame_rate(rows, r.outcome)) and r.n == len(rows)
        assert r.lo <= r.rate <= r.hi
    # each panel draws its own outcome: the hallucination panel is not the deflection panel
    h = data[data.outcome == "hallucination"].rate.to_numpy()
    d = data[data.outcome == "deflection"].rate.to_numpy()
    assert not np.allclose(h, d)


def test_modality_matrix_is_one_experiment_per_cell(df):
    from mmrag.reports import draw_modality_matrix

    fig = draw_modality_matrix(df, FAST)
    data = fig.data
    real = df[(df.kind == "realistic") & (df.strictness == "none")]
    assert sorted(data.n_distractors.unique()) == sorted(real.n_distractors.unique())  # one panel row per count
    assert "oracle" not in set(df.loc[df.key.isin(real.key), "kind"])
    for _, c in data.iterrows():
        rows = real[
            (real.n_distractors == c.n_distractors)
            & (real.model == c.model)
            & (real.positive_modality == c.positive_modality)
            & (real.negative_modality == c.negative_modality)
        ]
        assert c.n == len(rows) == rows.sample_id.nunique()  # never a sample counted twice in a cell
        assert c.rate == pytest.approx(_frame_rate(rows, c.outcome))
    only2 = draw_modality_matrix(df, FAST, n_distractors=2).data
    assert set(only2.n_distractors) == {2}
    assert only2.rate.tolist() == data[data.n_distractors == 2].rate.tolist()


def _title_boxes(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    return [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]


@pytest.mark.parametrize(
    "names", [("a-rather-long-model-name-v2-instruct", "another-long-model-name-13b-chat"), ("m1", "m2")]
)
def test_titles_never_overlap_and_failed_models_are_marked(tmp_path, names):
    from mmrag.reports import draw_modality_matrix, draw_strictness

    recs = deflection_records(tmp_path, n_questions=2)
    renames = dict(zip(MODELS, names))
    for r in recs:
        r.model = renames[r.model]
    frame = load(write_run(tmp_path / "run", recs))
    failed = frame[frame.error.notna()].model.value_counts()
    for draw in (draw_modality_matrix, draw_strictness):
        fig = draw(frame, FAST)
        boxes = _title_boxes(fig)
        assert len(boxes) >= 2
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert not a.overlaps(b), (draw.__name__, a, b)
    texts = [ax.get_title() for ax in draw_modality_matrix(frame, FAST).axes]
    for model, n in failed.items():
        assert any(f"FAILED: {n} request" in t and model in t.replace("\n", "") for t in texts)


@pytest.mark.parametrize("width", [100, 140])
def test_terminal_tables_keep_each_interval_whole(df, width):
    """In the terminal a rate is two lines, the value over ``[lo, hi]``: never an interval split
    over three lines by a narrow column."""
    from rich.console import Console

    from mmrag.reports import CIOptions, rate_table, to_rich

    table = rate_table(df, ["model", "kind"], opts=CIOptions(n_boot=100))
    console = Console(width=width, record=True, color_system=None)
    console.print(to_rich(table, "rates"))
    lines = console.export_text().splitlines()
    cells = [c.strip() for ln in lines for c in ln.split("│") if "[" in c or "]" in c]
    assert cells and all(c.startswith("[") and c.endswith("]") and ", " in c for c in cells), cells[:10]
