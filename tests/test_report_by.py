"""``mmrag report RUN --by n_distractors,negative_modality`` on a real distractor x modality sweep:
the crossed table holds the rates pandas computes from the run's rows, the faceted figure draws
exactly those numbers (realistic n = 0, one scenario, shared by every modality panel), nothing is
clipped at 0 or 100 %, no text overlaps, and the distractor curve says what it pools."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from figcheck import assert_readable
from matplotlib.container import ErrorbarContainer

from mmrag.cli import main
from mmrag.reports import PLOTS, CIOptions
from mmrag.reports.crossed import Y_LIMITS, draw_crossed
from mmrag.runs import load

FAST = CIOptions(n_boot=200)
BY = ["n_distractors", "negative_modality"]
COUNTS, MODALITIES = (0, 1, 2), ("text", "image", "multimodal")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, module_home):
    tmp = tmp_path_factory.mktemp("by")
    cfg = tmp / "sweep.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "dxm",
                "base": {"kind": "realistic", "positive_modality": "any"},
                "axes": {"n_distractors": list(COUNTS), "negative_modality": list(MODALITIES)},
            }
        )
    )
    run = tmp / "run"
    argv = ["sweep", "--config", str(cfg), "--model", "sim-vlm,context-reader", "--limit", "6", "--out", str(run)]
    assert main(argv) == 0
    return run, tmp


def test_realistic_n0_is_one_scenario(sweep):
    df = load(sweep[0])
    zero = df[(df["kind"] == "realistic") & (df["n_distractors"] == 0)]
    assert zero["scenario_id"].nunique() == 1 and zero["negative_modality"].isna().all()
    assert set(zero["scenario"]) == {"realistic n=0"}
    assert df["scenario_id"].nunique() == 1 + (len(COUNTS) - 1) * len(MODALITIES)


def test_report_by_writes_the_crossed_table_and_the_figure_draws_it(sweep, capsys):
    run, tmp = sweep
    out = tmp / "report"
    assert main(["report", str(run), "--by", ",".join(BY), "--out", str(out), "--n-boot", "200"]) == 0
    assert "Rates by n_distractors × negative_modality" in capsys.readouterr().out
    df = load(run)
    table = pd.read_csv(out / "tables" / "by_n_distractors_negative_modality.csv")
    assert len(table) == df.groupby(["model", *BY], dropna=False).ngroups == 2 * 7
    for row in table.itertuples():
        neg = None if pd.isna(row.negative_modality) else row.negative_modality
        rows = df[(df.model == row.model) & (df.n_distractors == row.n_distractors)]
        rows = rows[rows.negative_modality.isna()] if neg is None else rows[rows.negative_modality == neg]
        assert row.n == len(rows) and row.correct == pytest.approx(100 * rows.correct.mean())
        assert row.correct_lo <= row.correct <= row.correct_hi
    md = (out / "report.md").read_text()
    assert "## By n_distractors × negative_modality" in md and "figures/by_n_distractors_negative_modality.png" in md
    drawn = pd.read_csv(out / "figures" / "by_n_distractors_negative_modality.csv")
    assert (
        set(drawn["panel"]) == set(MODALITIES) and (out / "figures" / "by_n_distractors_negative_modality.svg").exists()
    )
    for r in drawn.itertuples():  # every point drawn is the rate of its cell; n = 0 is shared by every panel
        rows = df[(df.model == r.model) & (df.n_distractors == r.x)]
        rows = rows[rows.negative_modality.isna()] if r.x == 0 else rows[rows.negative_modality == r.panel]
        assert r.shared == (r.x == 0) and r.n == len(rows)
        assert r.rate == pytest.approx(100 * rows[r.outcome].mean())


def test_the_figure_is_readable_and_draws_its_numbers_unclipped(sweep):
    df = load(sweep[0])
    fig = draw_crossed(df, BY, FAST)
    assert_readable(fig, "by_n_distractors_negative_modality")
    data = fig.data
    checked = 0
    for ax in fig.axes:
        if not ax.get_visible() or not ax.get_title():
            continue
        model_line, panel_line = ax.get_title().rsplit("\n", 1)
        panel = panel_line.split(" = ")[1]
        assert ax.get_ylim()[0] <= Y_LIMITS[0] < 0 and ax.get_ylim()[1] >= Y_LIMITS[1] > 100
        for c in (c for c in ax.containers if isinstance(c, ErrorbarContainer)):
            line = c.lines[0]
            ys = line.get_ydata().astype(float)
            cell = data[(data.panel == panel) & (data.model == model_line.strip())]
            rates = {round(v, 6) for v in cell["rate"]}
            assert {round(v, 6) for v in ys} <= rates
            checked += len(ys)
    assert checked == len(data)


def test_the_distractor_curve_says_what_it_pools(sweep):
    df = load(sweep[0])
    fig = PLOTS["distractor_curve"].draw(df, FAST)
    assert "negative_modality" in fig.data.attrs["pooled"]
    assert "--by n_distractors,negative_modality" in fig.get_suptitle().replace("\n", " ")
    assert_readable(fig, "distractor_curve")


def test_an_unknown_knob_is_one_clear_error(sweep, capsys):
    assert main(["report", str(sweep[0]), "--by", "nope", "--out", str(sweep[1] / "bad")]) != 0
    err = capsys.readouterr().err
    assert "no knob or column 'nope'" in err and "n_distractors" in err and "Traceback" not in err
