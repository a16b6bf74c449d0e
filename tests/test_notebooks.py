"""The notebooks in notebooks/ run top to bottom on the demo world and are stored without outputs.

Each notebook is executed with nbclient in a fresh kernel running this interpreter (a kernel spec
written to a temporary folder, so no user-installed "python3" spec can pick another Python). All
of them share one temporary MMRAG_HOME, in file order: the first builds the demo world and its FAISS
indices, the others reuse them. A notebook's last cell prints one ``NOTEBOOK_RESULT {json}`` line;
the tests parse it and check values that a broken pipeline would get wrong, not merely that the
cells ran.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = [
    "01_language_over_vision_bias.ipynb",
    "02_distractor_count_ablation.ipynb",
    "03_custom_retriever.ipynb",
    "04_humblebench_stress.ipynb",
    "05_validate_judge.ipynb",
]
RESULT_PREFIX = "NOTEBOOK_RESULT "
CELL_TIMEOUT_S = 300
KERNEL_NAME = "mmrag-notebook-test"
OUTCOMES = ("correct", "deflection", "hallucination", "unparseable")


@pytest.fixture(scope="module")
def notebook_env(tmp_path_factory) -> dict[str, Any]:
    """One MMRAG_HOME for the notebooks, a kernel spec pinned to this Python, a scratch cwd."""
    root = tmp_path_factory.mktemp("notebooks")
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "mmrag tests",
                "language": "python",
            }
        )
    )
    env = dict(os.environ)
    env.update(
        {
            "MMRAG_HOME": str(root / "home"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "MPLBACKEND": "agg",
        }
    )
    env.pop("MMRAG_NOTEBOOK_LIMIT", None)  # the tests run what a reader runs
    cwd = root / "cwd"
    cwd.mkdir()
    return {"env": env, "kernel_dirs": [str(root / "kernels")], "cwd": str(cwd), "results": {}}


def _execute(name: str, ctx: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    if name in ctx["results"]:
        return ctx["results"][name]
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    km = AsyncKernelManager(
        kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=ctx["kernel_dirs"])
    )
    client = nbclient.NotebookClient(
        nb, km=km, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": ctx["cwd"]}}
    )
    client.execute(env=ctx["env"])  # raises CellExecutionError naming the failing cell
    result = _result_line(nb)
    ctx["results"][name] = (nb, result)
    return nb, result


def _result_line(nb) -> dict[str, Any]:
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.output_type == "stream")
    lines = [ln for ln in text.splitlines() if ln.startswith(RESULT_PREFIX)]
    assert len(lines) == 1, f"expected one {RESULT_PREFIX.strip()} line, got: {text[-500:]!r}"
    return json.loads(lines[0][len(RESULT_PREFIX) :])


def _sums_to_100(row: dict[str, Any], keys=OUTCOMES) -> bool:
    return math.isclose(sum(row[k] for k in keys), 100.0, abs_tol=1e-6)


def nota_of(res: dict[str, Any], model: str, setting: str) -> dict[str, Any]:
    return next(r for r in res["nota"] if r["model"] == model and r["setting"] == setting)


def _images_shown(nb) -> int:
    return sum(
        1
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type in ("display_data", "execute_result") and "image/png" in o.get("data", {})
    )


# -- stored form ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stored_without_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    assert code and len(markdown) >= 5, "each step is explained in a markdown cell"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    for cell in code:
        assert cell.outputs == [], f"cell {cell.get('id')} has stored outputs"
        assert cell.execution_count is None, f"cell {cell.get('id')} has an execution count"
    assert RESULT_PREFIX.strip() in code[-1].source


# -- executed ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_01_modality_matrix(notebook_env):
    nb, res = _execute(NAMES[0], notebook_env)
    cells = res["cells"]
    models = {c["model"] for c in cells}
    sims = set(res["simulated"].values())
    assert models == {"context-reader", "random-choice"} | sims
    for model in models:
        pairs = {(c["positive"], c["negative"]) for c in cells if c["model"] == model}
        assert pairs == {(p, n) for p in ("text", "image") for n in ("text", "image", "multimodal")}  # 2 x 3
    for c in cells:
        assert c["n"] > 0 and _sums_to_100(c), c
    reader = {(c["positive"], c["negative"]): c for c in cells if c["model"] == "context-reader"}
    for neg in ("text", "image", "multimodal"):
        # a reader that cannot see does well only when the evidence is text
        assert reader[("text", neg)]["correct"] > reader[("image", neg)]["correct"] + 20
    # image evidence + image negatives: only the captions of image+caption gold (the paper's Visual
    # row includes them) are left to read, so the reader deflects far more than in the text row
    assert (
        reader[("image", "image")]["deflection"]
        > max(reader[("text", n)]["deflection"] for n in ("text", "image", "multimodal")) + 10
    )
    # image evidence + text negatives: it reads the wrong entity's passage, an answer the rule judge
    # can show wrong only where the rival is of a checkable kind; the rest is undecided, never correct
    wrong_entity = reader[("image", "text")]
    assert wrong_entity["hallucination"] + wrong_entity["unparseable"] >= 50
    assert wrong_entity["correct"] < 25
    assert res["summary"]["context-reader"]["text_over_image_gap"] > 20
    run_dir = Path(res["run_dir"])
    assert run_dir.is_relative_to(Path(notebook_env["env"]["MMRAG_HOME"]))
    assert (run_dir / "records").is_dir() and (run_dir / "figures" / "modality_matrix.png").exists()
    assert _images_shown(nb) >= 3
    # the simulated VLMs show the bias they were given: the Table-5 gap grows with text_prior
    gaps = res["sim_gaps"]
    assert gaps["balanced"] < gaps["text-biased"], gaps
    sim = {(c["model"], c["positive"], c["negative"]): c for c in cells if c["model"] in sims}
    balanced, biased = res["simulated"]["balanced"], res["simulated"]["text-biased"]
    assert sim[(balanced, "image", "image")]["correct"] == sim[(biased, "image", "image")]["correct"]


@pytest.mark.slow
def test_02_distractor_curve(notebook_env):
    nb, res = _execute(NAMES[1], notebook_env)
    assert set(res["points"]) == {"context-reader", "random-choice", res["sim"]}
    for model, points in res["points"].items():
        assert [p["n_distractors"] for p in points] == [0, 1, 2, 4, 8]  # five points per curve
        for p in points:
            assert p["n"] > 0 and _sums_to_100(p), p
            assert p["correct_lo"] <= p["correct"] <= p["correct_hi"]
        assert _sums_to_100(res["oracle"][model])
    reader = res["points"]["context-reader"]
    assert reader[-1]["hallucination"] >= reader[0]["hallucination"]  # distractors never help it
    assert res["slopes"]["context-reader"]["hallucination"] > 0
    # realistic with 0 distractors shows the gold evidence only: it agrees with the oracle
    assert math.isclose(reader[0]["correct"], res["oracle"]["context-reader"]["correct"], abs_tol=1e-6)
    assert res["nested_share"] == 1.0  # the n-curve adds distractors to the same prompt
    # the strictness sweep: a real trade-off for the simulated VLM that acts on the instruction ...
    curve = res["tradeoff"][res["sim"]]
    adv = [p["adversarial_deflection"] for p in curve]
    acc = [p["realistic_accuracy"] for p in curve]
    assert adv == sorted(adv) and adv[-1] - adv[0] > 30, adv
    assert acc == sorted(acc, reverse=True) and acc[0] > acc[-1], acc
    # ... and a point for one that does not (strictness_gain 0) and for the baseline
    for model in ("sim-vlm:text_prior=0.5,strictness_gain=0", "context-reader"):
        assert len({p["adversarial_deflection"] for p in res["tradeoff"][model]}) == 1, model
    assert _images_shown(nb) >= 2


@pytest.mark.slow
def test_03_custom_retriever(notebook_env):
    nb, res = _execute(NAMES[2], notebook_env)
    assert res["protocol"] is True and res["fingerprint"].startswith("keyword-tfidf:")
    quality = res["quality"]
    assert set(quality) == {"keyword-tfidf (ours)", "bm25", "dense MiniLM"}
    for q in quality.values():
        assert q["n"] == res["n_samples"] and 0.0 <= q["mrr"] <= 1.0
        assert q["recall@1"] <= q["recall@5"] <= q["recall@10"]
    assert quality["keyword-tfidf (ours)"]["recall@10"] >= 0.9
    assert set(res["mining"]) == {"keyword", "dense"}
    for m in res["mining"].values():
        assert m["found"] == 2.0  # no shortfall on a 2,100-document knowledge base
        assert m["same_section"] >= 0.8  # both miners find template look-alikes of the gold passage
    li = res["llamaindex"]  # a llama-index VectorStoreIndex on the MiniLM embedding adapter
    assert li["fingerprint"].startswith("llamaindex:") and li["found"] == 2.0
    assert li["quality"]["n"] == res["n_samples"]
    assert abs(li["quality"]["recall@10"] - quality["dense MiniLM"]["recall@10"]) <= 0.1
    rows = res["evaluation"]
    assert {(r["miner"], r["scenario"]) for r in rows} == {
        (m, s) for m in ("keyword", "dense") for s in ("realistic", "adversarial")
    }
    for r in rows:
        assert r["n"] == res["n_samples"]
        assert math.isclose(r["correct"] + r["deflection"] + r["hallucination"] + r["undecided"], 100.0, abs_tol=1e-6)
        if r["scenario"] == "adversarial":  # no gold shown: a correct answer would be a leak
            assert r["correct"] <= 10.0
        else:
            assert r["correct"] >= 30.0


@pytest.mark.slow
def test_04_humblebench_stress(notebook_env):
    nb, res = _execute(NAMES[3], notebook_env)
    settings = [
        "common",
        "noise_image",
        "nota_only",
        "shuffle_options",
        "cautious_prompt",
        "noise_image+forced_grounding_prompt",
    ]
    official = {(r["model"], r["setting"]): r for r in res["official"]}
    assert set(official) == {(m, s) for m in ("always-nota", "first-option", "random-choice") for s in settings}
    assert {r["n"] for r in res["official"]} == {80}
    for s in settings:
        if s != "shuffle_options":
            assert official[("always-nota", s)]["E_proportion"] == 100.0
    # after shuffling, the NOTA option it always picks is mostly not at E (found by text, not letter)
    assert official[("always-nota", "shuffle_options")]["E_proportion"] < 50.0
    assert nota_of(res, "always-nota", "shuffle_options")["nota_hit_rate"] == 100.0
    assert official[("always-nota", "nota_only")]["Overall_accuracy"] == 100.0
    assert official[("first-option", "nota_only")]["Overall_accuracy"] == 0.0
    assert official[("first-option", "common")]["E_proportion"] == 0.0
    # NOTA-gold items are a minority: always choosing NOTA is right only on those
    assert official[("always-nota", "common")]["Overall_accuracy"] < 30.0
    nota = {(r["model"], r["setting"]): r for r in res["nota"]}
    assert nota[("always-nota", "common")]["nota_hit_rate"] == 100.0
    assert nota[("always-nota", "common")]["false_nota_rate"] == 100.0
    assert nota[("first-option", "common")]["nota_hit_rate"] == 0.0
    assert nota[("always-nota", "nota_only")]["non_nota_accuracy"] is None  # no non-NOTA items there
    assert res["panel_rows"] == 18
    assert _images_shown(nb) >= 1


@pytest.mark.slow
def test_05_validate_judge(notebook_env):
    nb, res = _execute(NAMES[4], notebook_env)
    assert res["n_labels"] == 80 and res["cells"] == 4 and res["confusion"] == "per source"
    assert 0.0 < res["kappa"] < 1.0 and res["kappa_ci"][0] <= res["kappa"] <= res["kappa_ci"][1]
    whole = res["whole"]
    for t, r in whole.items():
        assert r["lo"] <= r["true"] <= r["hi"], (t, r)  # the corrected interval holds the simulated truth
    # the judge credits a fifth of its "correct" replies wrongly: the judged rate is too high,
    # the corrected one is closer to the truth
    c = whole["correct"]
    assert c["judged"] > c["true"] + 3 and abs(c["corrected"] - c["true"]) < abs(c["judged"] - c["true"])
