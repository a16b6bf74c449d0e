"""Recovery tests: sim-vlm's biases are parameters, and mmrag's scenarios, judge and metrics recover them.

A measuring instrument is validated on a source whose true value is known.  Each test sweeps one
parameter of the simulated VLM with the others fixed, runs it through the real run path
(``mmrag run`` or :func:`mmrag.runs.execute`, the rule judge, the run directory) and reads the
numbers back with :func:`mmrag.runs.load` and the clustered bootstrap of :mod:`mmrag.metrics`: the
metric that should respond does, monotonically, and the ones that should not stay inside their
intervals.  Subsets of the demo world (``limit``) keep the wall time modest; the demo world and its
indices are built once for the module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmrag.errors import InputError
from mmrag.metrics import bootstrap_ci
from mmrag.models import GenerationSettings, create_model, parse_model_arg
from mmrag.models.sim_vlm import SimVLM, strictness_level
from mmrag.runs import RunConfig, execute, load
from mmrag.scenarios import ScenarioSpec
from mmrag.scenarios.templates import get_template
from mmrag.schema import DEFLECTION_PHRASE

REPO = Path(__file__).resolve().parents[1]


def _run(out: Path, specs: list[ScenarioSpec], models: list[str], limit: int, benchmark: str = "demo"):
    cfg = RunConfig(
        benchmarks=[{"name": benchmark}],
        scenarios=specs,
        models=[parse_model_arg(m) for m in models],
        limit=limit,
        cache={"enabled": False},
    )
    execute(cfg, out)
    return load(out)


def _rate(df, outcome: str) -> tuple[float, float, float]:
    """(value, lo, hi) in percent, clustered by question."""
    v = df[outcome].astype(float).to_numpy()
    lo, hi = bootstrap_ci(v, df["question_id"].to_numpy())
    return 100 * v.mean(), 100 * lo, 100 * hi


# -- the model itself ------------------------------------------------------------------------------


def test_named_with_inline_parameters_and_options():
    spec = parse_model_arg("sim-vlm:text_prior=0.9,vision=0.8")
    model = create_model(spec, cache=None)
    assert isinstance(model, SimVLM)
    assert model.params.text_prior == 0.9 and model.params.vision == 0.8
    assert "text_prior" in model.fingerprint and spec.label == "sim-vlm:text_prior=0.9,vision=0.8"
    other = create_model(parse_model_arg("sim-vlm", verbosity="reasoning"), cache=None)
    assert other.params.verbosity == "reasoning" and other.fingerprint != model.fingerprint
    with pytest.raises(InputError, match="vision"):
        create_model(parse_model_arg("sim-vlm:vision=1.5"), cache=None)
    with pytest.raises(InputError, match="eyesight"):
        create_model(parse_model_arg("sim-vlm:eyesight=1"), cache=None)
    with pytest.raises(InputError, match="NAME=VALUE"):
        create_model(parse_model_arg("sim-vlm:vision"), cache=None)


def test_strictness_is_read_from_the_rendered_templates():
    """The four shipped templates read as four increasing levels; the words matter, not the spec."""
    levels = [
        strictness_level(get_template(f"strictness-{s}").fill("text")) for s in ("none", "soft", "moderate", "severe")
    ]
    assert levels == sorted(levels) and len(set(levels)) == 4
    assert strictness_level("Answer only if completely certain; if in any doubt, say you cannot answer.") == 1.0


def test_outside_the_demo_world_it_deflects(module_home, tmp_path):
    from mmrag.benchmarks.demo import ensure_world
    from mmrag.schema import ContentPart, Message, Prompt

    prompt = Prompt(
        sample_id="x",
        metadata={"question": "Who painted the Mona Lisa?"},
        messages=[Message(role="user", content=[ContentPart(type="text", text="Who painted the Mona Lisa?")])],
    )
    model = create_model(parse_model_arg("sim-vlm", world=str(ensure_world(0))), cache=None)
    assert model.generate([prompt], GenerationSettings())[0].text == DEFLECTION_PHRASE
    with pytest.raises(InputError, match="entities.json"):
        create_model(parse_model_arg("sim-vlm", world=str(tmp_path)), cache=None).generate(
            [prompt], GenerationSettings()
        )


def test_behind_the_response_cache(module_home, tmp_path):
    """Same protocol and cache as every backend: a repeat is served from the cache, a different
    parameter is a different fingerprint (never a stale answer)."""
    from mmrag.benchmarks.base import BENCHMARKS
    from mmrag.scenarios import compose

    bench = BENCHMARKS.create("demo")
    store = {d.id: d for d in bench.documents()}
    prompts = [compose(s, ScenarioSpec(kind="oracle"), store=store) for s in list(bench.samples())[:6]]
    cache = tmp_path / "responses.sqlite"
    first = create_model(parse_model_arg("sim-vlm:vision=0.9"), cache=cache).generate(prompts, GenerationSettings())
    again = create_model(parse_model_arg("sim-vlm:vision=0.9"), cache=cache).generate(prompts, GenerationSettings())
    assert [r.text for r in first] == [r.text for r in again] and all(r.cached for r in again)
    other = create_model(parse_model_arg("sim-vlm:vision=0.1"), cache=cache)
    assert not any(r.cached for r in other.generate(prompts, GenerationSettings()))


# -- recovery through the real run path --------------------------------------------------------------


def test_table5_gap_grows_with_text_prior(module_home, tmp_path):
    """Image-positive accuracy with image negatives minus with text negatives grows with text_prior;
    the image-negative cell (no text to follow) does not move."""
    specs = [
        ScenarioSpec(kind="realistic", n_distractors=2, positive_modality="image", negative_modality=n)
        for n in ("image", "text")
    ]
    priors = (0.1, 0.5, 0.9)
    df = _run(tmp_path / "t5", specs, [f"sim-vlm:text_prior={p}" for p in priors], limit=160)
    gaps, image_cells = [], []
    for p in priors:
        d = df[df["model"] == f"sim-vlm:text_prior={p}"]
        img, txt = (_rate(d[d["negative_modality"] == n], "correct") for n in ("image", "text"))
        gaps.append(img[0] - txt[0])
        image_cells.append(img)
    assert gaps[0] < gaps[1] < gaps[2] and gaps[2] - gaps[0] > 20, gaps
    ref = image_cells[1]
    assert all(ref[1] <= v <= ref[2] for v, _, _ in image_cells), image_cells


def test_adversarial_deflection_grows_with_strictness_only_with_gain(module_home, tmp_path):
    """Through the CLI: four strictness levels x strictness_gain 0.5 and 0 in the adversarial scenario."""
    out = tmp_path / "strict"
    env = {**os.environ, "MMRAG_HOME": str(module_home), "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "mmrag.cli",
        "run",
        "-b",
        "demo",
        "--scenarios",
        "adversarial",
        "--negative-modality",
        "text",
        "--strictness",
        "none,soft,moderate,severe",
        "--limit",
        "80",
        "--model",
        "sim-vlm:strictness_gain=0.5,deflect_threshold=0.25",
        "--model",
        "sim-vlm:strictness_gain=0,deflect_threshold=0.25",
        "--no-cache",
        "--out",
        str(out),
    ]
    subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=600)
    df = load(out)
    order = ["none", "soft", "moderate", "severe"]
    curve = {m: [_rate(g[g["strictness"] == s], "deflection") for s in order] for m, g in df.groupby("model")}
    with_gain = [v for v, _, _ in curve["sim-vlm:strictness_gain=0.5,deflect_threshold=0.25"]]
    flat = curve["sim-vlm:strictness_gain=0,deflect_threshold=0.25"]
    assert all(a < b for a, b in zip(with_gain, with_gain[1:])), with_gain
    assert with_gain[-1] - with_gain[0] > 40
    assert all(flat[0][1] <= v <= flat[0][2] for v, _, _ in flat), flat


def test_parametric_accuracy_recovers_parametric(module_home, tmp_path):
    """No context: accuracy is the share of facts the model knows, within its bootstrap interval.
    (A high threshold turns every guess into a deflection; vision 1 recognises the query images.)"""
    shares = (0.2, 0.5, 0.8)
    models = [f"sim-vlm:parametric={p},deflect_threshold=0.5,vision=1" for p in shares]
    df = _run(tmp_path / "param", [ScenarioSpec(kind="parametric")], models, limit=200)
    values = []
    for p, m in zip(shares, models):
        v, lo, hi = _rate(df[df["model"] == m], "correct")
        assert lo <= 100 * p <= hi, (p, v, lo, hi)
        values.append(v)
    assert values == sorted(values)
    # it says what it knows and deflects the rest (a rare misrecognised query view aside)
    assert df["hallucination"].mean() < 0.05


def test_oracle_accuracy_grows_with_vision(module_home, tmp_path):
    """Image-only gold: accuracy rises with vision; text-only gold does not respond to it."""
    specs = [ScenarioSpec(kind="oracle", positive_modality=p) for p in ("image", "text")]
    levels = (0.0, 0.5, 1.0)
    df = _run(tmp_path / "vision", specs, [f"sim-vlm:vision={v}" for v in levels], limit=160)
    # the image row also holds image+caption gold (Table 5's visual row); the questions whose answer
    # is *seen* in a gold image are the demo's "-i-" (entity named) and "-x-" (flag shown) samples
    visual = df["sample_id"].str.contains(r"-[ix]-")
    image = [
        _rate(df[(df["model"] == f"sim-vlm:vision={v}") & (df["positive_modality"] == "image") & visual], "correct")
        for v in levels
    ]
    text = [
        _rate(
            df[
                (df["model"] == f"sim-vlm:vision={v}")
                & (df["positive_modality"] == "text")
                & df["sample_id"].str.contains("-t-")
            ],
            "correct",
        )
        for v in levels
    ]
    acc = [v for v, _, _ in image]
    assert acc[0] < acc[1] < acc[2] and acc[2] >= 90, acc
    assert all(text[0][1] <= v <= text[0][2] for v, _, _ in text), text


def test_humblebench_and_knowhal_items(module_home, tmp_path):
    """Letters for the scene MCQs (better with better vision); KnowHal false premises rejected at
    about 1 - text_prior, through the same run path and judges."""
    hb = _run(
        tmp_path / "hb",
        [ScenarioSpec(kind="humblebench")],
        ["sim-vlm:vision=1", "sim-vlm:vision=0"],
        limit=60,
        benchmark="demo-humblebench",
    )
    sharp, blind = (_rate(hb[hb["model"] == m], "correct")[0] for m in ("sim-vlm:vision=1", "sim-vlm:vision=0"))
    assert sharp >= 90 and blind < sharp - 30, (sharp, blind)
    assert (hb["response"].str.fullmatch(r"[A-E]") | (hb["response"] == DEFLECTION_PHRASE)).all()
    assert hb[hb["model"] == "sim-vlm:vision=1"]["response"].str.fullmatch(r"[A-E]").all()
    kh = _run(
        tmp_path / "kh",
        [ScenarioSpec(kind="knowhal")],
        ["sim-vlm:vision=1,text_prior=0.2", "sim-vlm:vision=1,text_prior=0.8"],
        limit=80,
        benchmark="demo-knowhal",
    )
    neg = kh[kh["polarity"] == "negative"]
    rejected = {m: 100 * neg[neg["model"] == m]["correct"].mean() for m in neg["model"].unique()}
    assert rejected["sim-vlm:vision=1,text_prior=0.2"] > rejected["sim-vlm:vision=1,text_prior=0.8"] + 30, rejected
    pos = kh[(kh["polarity"] == "positive")]
    assert 100 * pos["correct"].mean() >= 80


@pytest.mark.parametrize("verbosity", ["sentence", "reasoning"])
def test_verbosity_changes_words_not_verdicts(module_home, tmp_path, verbosity):
    """Longer answers still reach the judge as the same outcomes (they exercise its extraction)."""
    specs = [ScenarioSpec(kind="oracle"), ScenarioSpec(kind="adversarial", n_distractors=2)]
    df = _run(tmp_path / verbosity, specs, ["sim-vlm", f"sim-vlm:verbosity={verbosity}"], limit=40)
    short = df[df["model"] == "sim-vlm"].set_index(["sample_id", "scenario_id"])["outcome"]
    long = df[df["model"] != "sim-vlm"].set_index(["sample_id", "scenario_id"])
    assert (long["response"].str.len() > short.reindex(long.index).map(len)).all()
    agree = np.mean(long["outcome"] == short.reindex(long.index))
    assert agree >= 0.9, agree
