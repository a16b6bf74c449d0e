"""The public API: ``import mmrag`` is cheap, its documented names run a demo end to end, and the
notebooks need nothing else from mmrag."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import mmrag
from mmrag.errors import InputError

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

PUBLIC = {
    "run",
    "RunConfig",
    "ScenarioSpec",
    "run_dir",
    "load",
    "report",
    "judge",
    "create_model",
    "load_benchmark",
    "knowledge_base",
    "export",
    "__version__",
}


def test_import_is_lazy_and_the_version_comes_from_the_package_metadata():
    code = (
        "import sys, mmrag; heavy = [m for m in ('torch', 'pandas', 'faiss', 'pydantic', 'mmrag.runs') "
        "if m in sys.modules]; print(heavy, mmrag.__version__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "[]" and out[1] == version("mmrag")
    assert set(mmrag.__all__) == PUBLIC and PUBLIC <= set(dir(mmrag))
    with pytest.raises(AttributeError):
        mmrag.no_such_name  # noqa: B018


def test_the_facade_names_run_a_demo_end_to_end(tmp_path, module_home):
    bench = mmrag.load_benchmark("demo")
    first = list(bench.samples())[0]
    model = mmrag.create_model("context-reader", cache=None)
    assert model.fingerprint.startswith("baseline:context-reader")

    config = mmrag.RunConfig(
        benchmarks=[{"name": "demo"}],
        models=["context-reader", "always-deflect"],
        scenarios=[mmrag.ScenarioSpec(kind="parametric"), mmrag.ScenarioSpec(kind="oracle")],
        limit=3,
    )
    where = mmrag.run_dir(config, "facade", root=tmp_path)
    assert where.parent == tmp_path and where.name.startswith("facade-")
    assert mmrag.run_dir(config.model_copy(update={"limit": 4}), "facade", root=tmp_path) != where
    result = mmrag.run(config, where)
    assert result.failure is None and result.new_records == 12
    assert mmrag.run(config, where).new_records == 0  # the same directory resumes: nothing left to do

    df = mmrag.load(where)
    assert len(df) == 12 and set(df["model"]) == {"context-reader", "always-deflect"}
    assert first.id in set(df["sample_id"])
    assert df[df["model"] == "always-deflect"]["deflection"].all()

    files = mmrag.report(where, n_boot=100, browser=False).files
    assert any(p.name == "report.md" for p in files) and all(p.exists() for p in files)
    summary = mmrag.judge(where, "rule")
    assert summary["changed_outcomes"] == 0  # the same judge again: the same verdicts

    [log] = [
        p
        for p in mmrag.export(where, "lmms-eval", tmp_path / "lmms")
        if p.name.endswith("_results.json") and "context-reader" in str(p)
    ]
    assert json.loads(log.read_text())["config"]["model"] == "context-reader"


def test_keyword_form_and_model_strings_in_configs(tmp_path, module_home):
    result = mmrag.run(
        benchmarks=[{"name": "demo"}],
        models=["always-deflect"],
        scenarios=[{"kind": "parametric"}],
        limit=2,
        out=str(tmp_path / "kw"),
    )
    assert result.run_dir == tmp_path / "kw" and result.new_records == 2
    with pytest.raises(ValueError, match="unknown model backend"):
        mmrag.RunConfig(benchmarks=[{"name": "demo"}], models=["no-such-model"])


# -- the notebooks use the facade only ------------------------------------------------------------


def facade_violations(code: str) -> list[str]:
    """What a notebook's code takes from mmrag beyond ``import mmrag`` and ``mmrag.PUBLIC_NAME``."""
    tree = ast.parse("\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad += [
                f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                for a in node.names
                if a.name.split(".")[0] == "mmrag" and (a.name != "mmrag" or a.asname not in (None, "mmrag"))
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mmrag":
            bad.append(f"from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "mmrag":
            if node.attr not in PUBLIC:
                bad.append(f"mmrag.{node.attr}")
    return bad


def test_the_checker_catches_each_way_around_the_facade():
    assert facade_violations("import mmrag\nmmrag.run(c)\nmmrag.RunConfig.builtin_sweeps()\n%matplotlib inline") == []
    assert facade_violations("from mmrag.reports import save_figure") == ["from mmrag.reports import save_figure"]
    assert facade_violations("import mmrag.labels as labels") == ["import mmrag.labels as labels"]
    assert facade_violations("from mmrag import load") == ["from mmrag import load"]
    assert facade_violations("import mmrag\nmmrag.reports.report(d)") == ["mmrag.reports"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_notebook_imports_nothing_from_mmrag_beyond_the_facade(path):
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert any("import mmrag" in c for c in code)
    assert [v for c in code for v in facade_violations(c)] == []


# -- what the facade's objects carry --------------------------------------------------------------


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, module_home):
    config = mmrag.RunConfig(
        benchmarks=[{"name": "demo"}],
        models=["context-reader", "always-deflect"],
        scenarios=[mmrag.ScenarioSpec(kind="parametric"), mmrag.ScenarioSpec(kind="oracle")],
        limit=6,
    )
    where = mmrag.run_dir(config, "objects", root=tmp_path_factory.mktemp("runs"))
    assert mmrag.run(config, where).failure is None
    return where


def test_report_without_writing_gives_figures_tables_rates_and_paired_tests(small_run, tmp_path):
    rep = mmrag.report(small_run, write=False, n_boot=200)
    assert rep.files == [] and not (small_run / "report").exists()  # nothing written
    df = rep.frame
    by_model = rep.rates(by=["model"]).set_index("model")
    for model, g in df.groupby("model"):
        assert by_model.loc[model, "correct"] == pytest.approx(100 * g["correct"].mean())
        assert by_model.loc[model, "correct_lo"] <= by_model.loc[model, "correct"] <= by_model.loc[model, "correct_hi"]
    assert by_model.loc["always-deflect", "deflection"] == 100.0
    [whole] = rep.rates().to_dict("records")
    assert whole["n"] == len(df)

    oracle = df[df["kind"] == "oracle"]
    a, b = oracle[oracle["model"] == "always-deflect"], oracle[oracle["model"] == "context-reader"]
    diff = rep.compare(a, b)  # B - A in points, paired on sample_id
    assert diff["n_pairs"] == 6
    assert diff["d_correct"] == pytest.approx(100 * (b["correct"].mean() - a["correct"].mean()))
    named = rep.compare(baseline=a, treatment=b)  # the sign named: treatment - baseline
    assert named["d_correct"] == diff["d_correct"] and named["correct_b"] == pytest.approx(100 * b["correct"].mean())
    assert rep.compare(baseline=b, treatment=a)["d_correct"] == pytest.approx(-diff["d_correct"])
    with pytest.raises(InputError, match="both baseline= and treatment="):
        rep.compare(baseline=a)
    with pytest.raises(InputError, match="not both"):
        rep.compare(a, baseline=a, treatment=b)
    assert "scenario" in rep.table_names and not rep.table("paired_models").empty

    fig = rep.figure("distractor_curve", frame=df)  # any frame; the figure carries what it draws
    assert set(fig.data["model"]) <= set(df["model"])
    saved = rep.save(fig, "curve", tmp_path / "figs")
    assert sorted(p.name for p in saved) == ["curve.png", "curve.svg"] and all(p.stat().st_size for p in saved)
    with pytest.raises(InputError, match="no figure"):
        rep.figure("no-such-figure")
    # a frame of outcomes made by hand gets the same intervals
    assert mmrag.report(df, write=False, n_boot=200).rates(by=["model"]).equals(rep.rates(by=["model"]))
    with pytest.raises(TypeError):
        mmrag.report(df)


def test_load_with_contexts_lists_the_documents_each_prompt_showed(small_run):
    df = mmrag.load(small_run, contexts=True)
    assert "contexts" not in mmrag.load(small_run).columns  # reading full records is asked for
    for row in df.itertuples():
        assert sum(c["role"] == "gold" for c in row.contexts) == row.n_gold
        assert len(row.contexts) == row.n_contexts
    assert (df[df["kind"] == "oracle"]["n_gold"] > 0).all()


def test_labels_through_the_report(small_run):
    rep = mmrag.report(small_run, write=False, n_boot=50)
    sample = rep.labels.sample(n=12, seed=0)
    verdict = dict(zip(rep.frame["key"], rep.frame["outcome"]))
    truth = {k: ("deflection" if verdict[k] == "unparseable" else verdict[k]) for k in sample.keys}
    path = rep.labels.add("tester", truth)
    assert path.parent == small_run / "labels" and len(path.read_text().splitlines()) == len(sample.keys)
    assert len(rep.labels.frame()) == len(sample.keys) and set(rep.labels.classes) >= set(truth.values())
    agree = rep.labels.agreement()
    assert agree["n"] == len(sample.keys) and "kappa" in str(agree)


def test_judge_takes_plain_replies_and_generate_defaults_to_greedy(module_home):
    bench = mmrag.load_benchmark("demo")
    kb = mmrag.knowledge_base(bench)
    sample = next(s for s in bench.samples() if s.metadata.get("positive_modality") == "text")
    prompt = mmrag.ScenarioSpec(kind="oracle").compose(sample, store=kb.store)
    assert [c.document.id for c in prompt.contexts] == list(sample.gold_doc_ids)
    [reply] = mmrag.create_model("context-reader", cache=None).generate([prompt])
    verdicts = mmrag.judge([(sample, prompt, reply), (sample, prompt, "I cannot tell from this evidence.")])
    assert [v.outcome for v in verdicts] == ["correct", "deflection"]


class DictHits:
    """A retriever written without importing mmrag: hits as plain dicts."""

    def __init__(self, documents):
        self.docs = [d for d in documents if d.modality == "text"]
        self.fingerprint = f"dict-hits:{len(self.docs)}"

    def retrieve(self, queries, k):
        out = []
        for q in queries:
            words = set((q.text or "").lower().split())
            scored = sorted(self.docs, key=lambda d: -len(words & set(d.text.lower().split())))
            out.append([{"doc_id": d.id, "score": 1.0 / (i + 1), "modality": "text"} for i, d in enumerate(scored[:k])])
        return out


def test_knowledge_base_takes_a_duck_typed_retriever(module_home):
    kb = mmrag.knowledge_base("demo")
    ours = kb.retriever(DictHits(kb.documents))
    assert ours.fingerprint.startswith("dict-hits:")
    hits = kb.search(ours, "What is the chief export of Ryneesk?", k=3)
    assert list(hits["rank"]) == [1, 2, 3] and (hits["modality"] == "text").all()
    samples = [s for s in mmrag.load_benchmark("demo").samples() if s.metadata.get("positive_modality") == "text"][:5]
    quality = kb.evaluate(ours, samples, ks=(1, 10))["groups"]["all"]
    assert quality["n"] == 5 and quality["recall@1"] <= quality["recall@10"]
    assert kb.evaluate(kb.retriever("bm25"), samples, ks=(10,))["groups"]["all"]["recall@10"] == 1.0
    mined = kb.miner({"text": ours}).negatives(samples[0], 2, "text", seed=0)
    assert len(mined.documents) == 2 and not set(samples[0].gold_doc_ids) & {d.id for d in mined.documents}
    with pytest.raises(InputError, match="retrieve"):
        kb.retriever(type("NoRetrieve", (), {"fingerprint": "x"})())
    with pytest.raises(InputError, match="index kind"):
        kb.miner({"textual": ours})


def test_runconfig_names_its_builtin_sweeps():
    sweeps = mmrag.RunConfig.builtin_sweeps()
    assert {"strictness", "distractor-curve", "modality-matrix"} <= set(sweeps)
    assert "strict=severe" in sweeps["strictness"]
    config = mmrag.RunConfig(benchmarks=[{"name": "demo"}], models=["context-reader"], sweeps=["strictness"])
    assert config.sweeps == ["strictness"]


def test_python_dash_m_mmrag_runs_the_command_line():
    out = subprocess.run([sys.executable, "-m", "mmrag", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "Usage: python -m mmrag" in out.stdout


def test_no_weight_loading_bars_leak_into_a_notebook(tmp_path):
    """transformers' 'Loading weights' bar is switched off while mmrag loads MiniLM (the CLI also
    sets HF_HUB_DISABLE_PROGRESS_BARS; a notebook imports mmrag without it)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import mmrag\n"
        "from mmrag.indices.encoders import SentenceTransformerEncoder\n"
        "SentenceTransformerEncoder().encode_text(['hello'])\n"
        "from transformers.utils import logging as tl\n"
        "assert tl.is_progress_bar_enabled()  # the user's own loads keep their bars\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Loading weights" not in res.stderr + res.stdout
