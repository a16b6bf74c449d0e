"""Every figure a researcher sees is readable and draws the numbers its data says.

Readable (:mod:`figcheck`): no two drawn texts overlap, nothing lies outside the canvas, no label
sits on a bar.  Checked for each built-in figure over runs with two short model names, five long
ones that share a prefix (the case that once made a 3234 x 301 px strip) and one model, and for
every figure the notebooks display (their code cells run in this process on a small sample).

Faithful: the lines, error bars, bars and heatmap cells read back from the matplotlib artists
equal the figure's ``.data`` (the numbers the report's CSV holds), and every point that has an
interval has an error bar.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd
import pytest
from figcheck import assert_readable, layout_problems, render, text_over_bars
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from runfactory import MODELS, deflection_records, humblebench_records, knowhal_records, write_run

from mmrag.reports import PLOTS, CIOptions
from mmrag.reports.plotkit import OUTCOME_LABELS, failures, model_label
from mmrag.reports.plots import MATRIX_OUTCOMES, series_label
from mmrag.reports.plots_family import HB_METRICS
from mmrag.runs.frame import load
from mmrag.runs.records import record_key

FAST = CIOptions(n_boot=200)
LONG = tuple(f"openai:org/vision-language-model-{size}-instruct" for size in ("7b", "13b", "34b", "70b", "110b"))


def _records(tmp_path, names):
    recs = (
        deflection_records(tmp_path, n_questions=3)
        + humblebench_records(tmp_path, n_questions=3)
        + knowhal_records(tmp_path, n_questions=4)
    )
    if len(names) == 1:
        recs = [r for r in recs if r.model == MODELS[0]]
    out = []
    for i, name in enumerate(names):  # more names than the factory's two models: copies under new names
        for r in recs:
            if r.model == MODELS[i % len(MODELS)]:
                fp = f"{name}@fp"
                out.append(
                    r.model_copy(
                        update={
                            "model": name,
                            "model_fingerprint": fp,
                            "key": record_key(r.sample.id, r.scenario_id, fp),
                        }
                    )
                )
    return out


@pytest.fixture(
    scope="module",
    params=[("good-vlm", "weak-vlm"), LONG, ("only-model",)],
    ids=["two-models", "five-long-names", "one-model"],
)
def frame(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("figs")
    return load(write_run(tmp / "run", _records(tmp, request.param)))


@pytest.mark.parametrize("name", list(PLOTS))
def test_builtin_figure_is_readable(frame, name):
    spec = PLOTS[name]
    if not spec.applies(frame):
        pytest.skip(f"{name} does not apply to this run")
    fig = spec.draw(frame, FAST)
    assert_readable(fig, name)
    assert not text_over_bars(fig), text_over_bars(fig)


def test_modality_matrix_wraps_to_at_most_three_panels_a_row(tmp_path):
    frame = load(write_run(tmp_path / "run", _records(tmp_path, LONG)))
    fig = PLOTS["modality_matrix"].draw(frame, FAST)
    renderer, _ = render(fig)
    heat = [ax for ax in fig.axes if ax.images]
    rows: dict[float, int] = {}
    for ax in heat:
        y = round(ax.get_window_extent(renderer).y0)
        rows[y] = rows.get(y, 0) + 1
    assert max(rows.values()) <= 3
    assert len(heat) == len(LONG) * len(MATRIX_OUTCOMES)  # one compact grid per model and outcome
    assert "deflection" in MATRIX_OUTCOMES
    counts = frame.loc[frame.kind == "realistic", "n_distractors"].nunique()
    assert len(heat[0].get_yticklabels()) == counts * 2  # rows: distractor count x positive modality
    w, h = fig.get_size_inches()
    assert w < 12 and 0.5 < h / w  # a page, not a strip


def test_modality_matrix_of_one_model_is_one_compact_page(tmp_path):
    frame = load(write_run(tmp_path / "run", _records(tmp_path, ("only-model",))))
    fig = PLOTS["modality_matrix"].draw(frame, FAST)
    w, h = fig.get_size_inches()
    assert w <= 12 and h <= 8, (w, h)  # three counts x two positive modalities, three outcomes: one page
    assert len([ax for ax in fig.axes if ax.images]) == len(MATRIX_OUTCOMES)


# -- the numbers drawn --------------------------------------------------------------------------


def _errorbars(ax) -> list[ErrorbarContainer]:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def _bar_extent(container: ErrorbarContainer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, lower and upper end of each error bar of a container."""
    segments = container.lines[2][0].get_segments()
    return (
        np.array([s[0][0] for s in segments]),
        np.array([min(s[0][1], s[1][1]) for s in segments]),
        np.array([max(s[0][1], s[1][1]) for s in segments]),
    )


def _assert_line(container: ErrorbarContainer, rows: pd.DataFrame, x_of) -> None:
    line = container.lines[0]
    assert np.allclose(line.get_ydata().astype(float), rows["rate"].astype(float), equal_nan=True)
    assert np.allclose(line.get_xdata().astype(float), x_of(rows), atol=0.5)
    x, lo, hi = _bar_extent(container)
    assert len(x) == len(rows), "every point has an error bar"
    assert np.allclose(lo, rows["lo"].astype(float)) and np.allclose(hi, rows["hi"].astype(float))


def test_distractor_curve_draws_its_data_with_an_error_bar_on_every_point(frame):
    fig = PLOTS["distractor_curve"].draw(frame, FAST)
    data, failed = fig.data, failures(frame)
    drawn = 0
    for ax in fig.axes:
        outcome = next(o for o, label in OUTCOME_LABELS.items() if label == ax.get_title())
        for c in _errorbars(ax):
            model, kind = next(
                (m, k)
                for m in data.model.unique()
                for k in data.kind.unique()
                if series_label(k, m, failed) == c.get_label()
            )
            rows = data[(data.outcome == outcome) & (data.model == model) & (data.kind == kind)]
            _assert_line(c, rows, lambda r: r["n_distractors"].astype(float))
            drawn += len(rows)
    assert drawn == len(data)
    # the adversarial kind has one distractor count: its single point has its bar too
    adv = data[data.kind == "adversarial"]
    assert adv.n_distractors.nunique() == 1 and len(adv) > 0


def test_strictness_draws_its_data(frame):
    spec = PLOTS["strictness"]
    if not spec.applies(frame):
        pytest.skip("no strictness sweep")
    fig = spec.draw(frame, FAST)
    data, drawn = fig.data, 0
    models = sorted(data.model.unique())
    kinds = list(dict.fromkeys(data.kind))
    grid = np.array([ax for ax in fig.axes if _errorbars(ax)]).reshape(len(models), len(kinds))
    for mi, model in enumerate(models):
        for ki, kind in enumerate(kinds):
            for c in _errorbars(grid[mi, ki]):
                outcome = next(o for o, label in OUTCOME_LABELS.items() if label == c.get_label())
                rows = data[(data.model == model) & (data.kind == kind) & (data.outcome == outcome)]
                levels = [s for s in ("none", "soft", "moderate", "severe") if s in set(rows.strictness)]
                rows = rows.set_index("strictness").loc[levels].reset_index()
                _assert_line(c, rows, lambda r: np.arange(len(r), dtype=float))
                drawn += len(rows)
    assert drawn == len(data)


def test_modality_matrix_cells_show_their_numbers(frame):
    fig = PLOTS["modality_matrix"].draw(frame, FAST)
    data = fig.data
    shown = 0
    for ax in fig.axes:
        images = [im for im in ax.get_children() if isinstance(im, AxesImage)]
        if not images:
            continue
        model_part, outcome_label = ax.get_title().rsplit("\n", 1)
        outcome = next(o for o, label in OUTCOME_LABELS.items() if label == outcome_label)
        cells = data[
            (data.outcome == outcome)
            & (data.model.map(lambda m, part=model_part: model_label(m, failures(frame)) == part))
        ]
        texts = sorted(t.get_text() for t in ax.texts)
        expected = sorted(f"{r.rate:.0f} [{r.lo:.0f}–{r.hi:.0f}]\nn={r.n}" for r in cells.itertuples())
        assert [t for t in texts if t != "n/a"] == expected
        values = np.asarray(images[0].get_array(), dtype=float)
        assert sorted(values[~np.isnan(values)].tolist()) == pytest.approx(sorted(cells.rate.tolist()))
        shown += len(cells)
    assert shown == len(data)


def _tick_order(panels) -> list[str]:
    """The x categories in drawing order, read from the (bottom) panel that shows tick labels;
    wrapped labels are joined again."""
    labels = next(labels for ax in reversed(panels) if (labels := [t.get_text() for t in ax.get_xticklabels()]))
    return [re.sub(r"\s+", "", t) for t in labels]


def _bars_of(ax) -> list[BarContainer]:
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def test_humblebench_bars_are_the_panel(frame):
    spec = PLOTS["humblebench_stress"]
    if not spec.applies(frame):
        pytest.skip("no HumbleBench stress settings")
    fig = spec.draw(frame, FAST)
    render(fig)  # tick label texts are set when drawn
    data = fig.data
    models = sorted(data.model.unique())
    stresses = list(dict.fromkeys(data.stress))
    panels = [ax for ax in fig.axes if _bars_of(ax)]
    assert [ax.get_title() for ax in panels] == [title for _, title in HB_METRICS]
    order = _tick_order(panels)  # shared x: the bottom panels carry the labels
    assert sorted(order) == sorted(stresses)
    for ax, (metric, _) in zip(panels, HB_METRICS):
        assert len(_bars_of(ax)) == len(models)
        for model, bars in zip(models, _bars_of(ax)):
            rows = data[(data.metric == metric) & (data.model == model)].set_index("stress")
            heights = [p.get_height() for p in bars.patches]
            expected = [rows.loc[s, "rate"] for s in order]
            assert heights == pytest.approx(np.nan_to_num(np.array(expected, dtype=float)))
    # the random-guess reference is a legend entry, not text over the bars
    legend_texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "random guess (20 %)" in legend_texts
    assert not any("random" in t.get_text() for ax in fig.axes for t in ax.texts)


def test_knowhal_bars_are_the_table(frame):
    spec = PLOTS["knowhal"]
    if not spec.applies(frame):
        pytest.skip("no KnowHal pairs")
    fig = spec.draw(frame, FAST)
    render(fig)
    data = fig.data
    panels = [ax for ax in fig.axes if _bars_of(ax)]
    dims = _tick_order(panels)
    assert sorted(dims) == sorted(set(data.dimension))
    for ax, model in zip(panels, sorted(data.model.unique())):
        for polarity, bars in zip(("positive", "negative"), _bars_of(ax)):
            rows = data[(data.model == model) & (data.polarity == polarity)].set_index("dimension")
            expected = np.nan_to_num(rows.loc[dims, "rate"].to_numpy(dtype=float))
            assert [p.get_height() for p in bars.patches] == pytest.approx(expected.tolist())


def test_the_checker_catches_overlaps_and_escapes():
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.text(0.5, 0.5, "one label", transform=ax.transAxes)
    ax.text(0.52, 0.5, "another label", transform=ax.transAxes)
    ax.set_title("a title much too long for a figure only three inches wide " * 2)
    problems = layout_problems(fig)
    assert any("overlap" in p for p in problems) and any("outside" in p for p in problems)
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.bar([0], [50])
    ax.text(0, 20, "on the bar")
    assert text_over_bars(fig)


# -- the notebooks' figures -------------------------------------------------------------------

NOTEBOOKS = ("01_language_over_vision_bias.ipynb", "02_distractor_count_ablation.ipynb", "04_humblebench_stress.ipynb")


def run_notebook_figures(name: str, monkeypatch) -> list[Figure]:
    """Run a notebook's code cells here (magics dropped) and return every Figure it displays."""
    nbformat = pytest.importorskip("nbformat")
    from pathlib import Path

    import IPython.display

    shown: list[Figure] = []

    def display(*objs, **_):
        shown.extend(o for o in objs if isinstance(o, Figure))

    monkeypatch.setattr(IPython.display, "display", display)
    nb = nbformat.read(Path(__file__).resolve().parents[1] / "notebooks" / name, as_version=4)
    scope: dict = {"__name__": "__notebook__"}
    for cell in nb.cells:
        if cell.cell_type == "code":
            code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            exec(compile(code, f"{name}:{cell.get('id', '?')}", "exec"), scope)  # noqa: S102 - our own notebook
    return shown


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_figures_are_readable(name, module_home, monkeypatch, capsys):
    monkeypatch.setenv("MMRAG_NOTEBOOK_LIMIT", os.environ.get("MMRAG_FIGURE_TEST_LIMIT", "16"))
    monkeypatch.chdir(module_home)
    figures = run_notebook_figures(name, monkeypatch)
    assert figures, f"{name} displays no figure"
    for i, fig in enumerate(figures):
        assert_readable(fig, f"{name} figure {i + 1}")
        assert not text_over_bars(fig), (name, i, text_over_bars(fig))
        legend_texts = [
            t.get_text()
            for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
            if leg is not None
            for t in leg.get_texts()
        ]
        if name.startswith("02") and i == 0:  # the oracle reference lines are named in the legend
            assert any("oracle" in t for t in legend_texts), legend_texts
