"""`mmrag curate` end to end on the demo world: the three stages of VLM-DeflectionBench's dynamic
curation, their recorded decisions, the report, the curated benchmark as input to `mmrag run`,
Stage III semantics re-checked independently, and resumption without paying for a model call twice.

Gating models are real: the context-reader (MiniLM) and the first-option baseline, plus OpenAI-
compatible models served over real HTTP by the loopback server, whose responders play a model that
knows some answers.  One MMRAG_HOME per module, so the demo world and its indices are built once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from loopback_core import last_user_text
from loopback_server import LoopbackServer

from mmrag.cli import main
from mmrag.retrieval.base import MiningResult

DEFLECT = "I don't know."
FILES = (
    "stage1_parametric.jsonl",
    "stage2_mining.jsonl",
    "stage3_oracle.jsonl",
    "curated.jsonl",
    "curated.kb.jsonl",
    "report.json",
    "report.md",
    "config.json",
    "manifest.json",
)


# -- shared fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def home(module_home):
    return module_home


@pytest.fixture(scope="module")
def bench(home):
    from mmrag.benchmarks import load_benchmark

    b = load_benchmark("demo")
    return b, list(b.samples())


@pytest.fixture(scope="module")
def answers_by_question(bench):
    """question -> the distinct answer lists of the demo samples asking it (several when the
    question only makes sense with its image, e.g. "the city represented in the image")."""
    out: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for s in bench[1]:
        if tuple(s.answers) not in out[s.question]:
            out[s.question].append(tuple(s.answers))
    return dict(out)


def _question(body: dict) -> tuple[str, str]:
    text = last_user_text(body)
    m = re.search(r"Question: (.*)", text)
    assert m, text
    return m.group(1).strip(), text.split("Question:")[0]


def leaky(context: str) -> bool:
    """The negatives the 'leaky' gating model happens to answer from (a fixed quarter of contexts)."""
    return int(hashlib.sha256(context.strip().encode()).hexdigest(), 16) % 4 == 0


def write_config(path: Path, **overrides) -> Path:
    cfg = {
        "benchmark": {"name": "demo"},
        "judge": {"mode": "rule"},
        "modalities": ["text", "image", "multimodal"],
        "negatives_per_modality": 2,
        "k_min": 2,
        "seed": 0,
        "negatives": "regenerate",
        "gating_models": [{"backend": "context-reader"}, {"backend": "first-option"}],
        "limit": 30,
    }
    cfg.update(overrides)
    path.write_text(yaml.safe_dump(cfg))
    return path


def curate(config: Path, out: Path) -> None:
    assert main(["curate", "--config", str(config), "--out", str(out)]) == 0


def rows(out: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (out / name).read_text().splitlines() if line.strip()]


def snapshot(out: Path) -> dict[str, bytes]:
    return {f: (out / f).read_bytes() for f in FILES}


class OneNegative:
    """A miner that shows exactly the one negative under test (Stage III checks them one by one)."""

    def __init__(self, store, doc) -> None:
        self.store = store
        self.doc = doc

    def negatives(self, sample, n, modality, seed=0) -> MiningResult:
        return MiningResult(documents=[self.doc][:n], requested=n, shortfall=max(0, n - 1))


def _spec(kind: str, n: int = 0):
    from mmrag.scenarios.spec import ScenarioSpec

    return ScenarioSpec(kind=kind, n_distractors=n, negative_modality="any", negatives="regenerate", seed=0)


def verdicts_of(model, samples_prompts) -> list[str]:
    from mmrag.judging.modes import RuleJudge
    from mmrag.models.base import GenerationSettings

    responses = model.generate([p for _, p in samples_prompts], GenerationSettings())
    judge = RuleJudge()
    return [judge.judge(s, p, r).outcome for (s, p), r in zip(samples_prompts, responses)]


# -- the demo configuration: weight-free gating models ---------------------------------------------
@pytest.fixture(scope="module")
def plain(home, tmp_path_factory):
    root = tmp_path_factory.mktemp("curate_plain")
    out = root / "out"
    curate(write_config(root / "curate.yaml"), out)
    return out


def test_every_stage_records_a_decision_for_every_sample(plain, bench):
    first30 = [s.id for s in bench[1][:30]]
    s1, s2, s3 = (rows(plain, f) for f in FILES[:3])
    assert [r["sample_id"] for r in s1] == first30
    assert [r["sample_id"] for r in s2] == [r["sample_id"] for r in s1 if r["kept"]]
    assert [r["sample_id"] for r in s3] == [r["sample_id"] for r in s2 if r["kept"]]
    for r in s1 + s2 + s3:
        assert isinstance(r["kept"], bool)
        assert bool(r["reason"]) == (not r["kept"]), r  # a reason exactly for every removal
    # Stage I: both gating models were asked and neither can answer without context
    assert all(len(r["outcomes"]) == 2 and "correct" not in r["outcomes"].values() for r in s1)
    # Stage II: negatives from each modality's index, k_min respected
    for r in s2:
        assert set(r["negatives"]) == {"text", "image", "multimodal"}
        assert r["kept"] == (len({d for ids in r["negatives"].values() for d in ids}) >= 2)
    # Stage III removed some samples (no gating model reads images) and kept some
    assert any(r["kept"] for r in s3) and any(not r["kept"] for r in s3)
    assert all(
        r["reason"] == "every gating model fails with gold evidence"
        for r in s3
        if not r["kept"] and "correct" not in r["oracle_outcomes"].values()
    )


def test_report_counts_are_consistent(plain):
    report = json.loads((plain / "report.json").read_text())
    t = report["totals"]
    assert t["input"] == 30
    assert t["input"] >= t["stage1_parametric"] >= t["stage2_mining"] >= t["stage3_oracle"] > 0
    for stage, name in zip(("stage1_parametric", "stage2_mining", "stage3_oracle"), FILES[:3]):
        rs = rows(plain, name)
        assert t[stage] == sum(r["kept"] for r in rs)
        assert sum(report["removal_reasons"][stage].values()) == sum(not r["kept"] for r in rs)
    for key in ("input", "stage1_parametric", "stage2_mining", "stage3_oracle"):
        assert sum(src.get(key, 0) for src in report["per_source"].values()) == t[key]
    assert report["removal_reasons"]["stage3_oracle"]["every gating model fails with gold evidence"] >= 1
    md = (plain / "report.md").read_text()
    assert f"| stage3_oracle | {t['stage3_oracle']} |" in md


def test_curated_file_is_a_deflection_benchmark_that_runs(plain, tmp_path, capsys):
    curated = plain / "curated.jsonl"
    recs = [json.loads(line) for line in curated.read_text().splitlines()]
    s3 = {r["sample_id"]: r for r in rows(plain, "stage3_oracle.jsonl") if r["kept"]}
    assert [r["sample_id"] for r in recs] == list(s3)
    for r in recs:
        assert r["negative_doc_ids"] == s3[r["sample_id"]]["negatives"]
    kb_ids = {json.loads(line)["id"] for line in (plain / "curated.kb.jsonl").read_text().splitlines()}
    assert all({g["doc_id"] for g in r["gold_contexts"]} | set(r["negative_doc_ids"]) <= kb_ids for r in recs)

    assert main(["benchmark", "validate", str(curated), "--benchmark", "deflection"]) == 0
    assert "valid deflection file" in capsys.readouterr().out
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--benchmark",
                "deflection",
                "--source",
                str(curated),
                "--model",
                "context-reader",
                "--scenarios",
                "oracle,adversarial",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    from mmrag.runs import read_records

    records = [r.model_dump(mode="json") for r in read_records(out)]
    summary = json.loads((out / "summary.json").read_text())
    assert records and len(records) == summary["n_records"]
    assert len(records) + sum(summary["not_applicable"].values()) == 2 * len(recs)
    assert {r["sample"]["id"] for r in records} == set(s3)
    # the survivors were kept because the context-reader answers them with gold evidence
    oracle = [r for r in records if r["scenario"]["kind"] == "oracle"]
    assert oracle and all(r["verdict"]["outcome"] == "correct" for r in oracle)


def test_stage3_semantics_hold_when_rechecked_independently(plain, bench):
    """Recompose the prompts Stage III judged and ask the gating models again, outside the pipeline."""
    from mmrag.models import create_model
    from mmrag.models.base import ModelSpec
    from mmrag.retrieval import InMemoryDocStore
    from mmrag.scenarios import compose

    b, samples = bench
    by_id = {s.id: s for s in samples}
    store = InMemoryDocStore(list(b.documents()))
    reader = create_model(ModelSpec(backend="context-reader"), cache=None)
    first = create_model(ModelSpec(backend="first-option"), cache=None)
    s3 = rows(plain, "stage3_oracle.jsonl")
    kept = [r for r in s3 if r["kept"]]
    failed = [r for r in s3 if r["reason"] == "every gating model fails with gold evidence"]
    # no surviving negative lets a gating model answer correctly when shown alone
    shown = [(by_id[r["sample_id"]], d) for r in kept[:3] for d in r["negatives"]]
    checks = [
        (s, compose(s, _spec("adversarial", 1), miner=OneNegative(store, store.get(d)), store=store)) for s, d in shown
    ]
    assert len(checks) >= 6
    assert all([c.document.id for c in p.contexts] == [d] for (_, p), (_, d) in zip(checks, shown))
    assert "correct" not in verdicts_of(reader, checks)
    assert "correct" not in verdicts_of(first, checks)
    # a removed sample really is failed by every gating model with its gold evidence
    oracle = [(by_id[r["sample_id"]], compose(by_id[r["sample_id"]], _spec("oracle"), store=store)) for r in failed[:4]]
    assert oracle
    assert "correct" not in verdicts_of(reader, oracle) + verdicts_of(first, oracle)
    # and a kept one is answered by at least one of them
    kept_oracle = [
        (by_id[r["sample_id"]], compose(by_id[r["sample_id"]], _spec("oracle"), store=store)) for r in kept[:2]
    ]
    assert all(o == "correct" for o in verdicts_of(reader, kept_oracle))


# -- a gating model over HTTP: dropped negatives and resumption ------------------------------------
@pytest.fixture(scope="module")
def leaky_gate(answers_by_question):
    """Deflects without context; answers when the gold answer is in the context; and, for a
    question it can attribute, also answers from a fixed quarter of contexts (those negatives leak)."""

    def respond(body: dict) -> str:
        question, context = _question(body)
        if "Context:" not in context:
            return DEFLECT
        cands = answers_by_question.get(question, [])
        for answers in cands:
            if any(a.lower() in context.lower() for a in answers):
                return answers[0]
        if len(cands) == 1 and leaky(context):
            return cands[0][0]
        return DEFLECT

    with LoopbackServer(responder=respond) as srv:
        yield srv


@pytest.fixture(scope="module")
def http_config(leaky_gate, tmp_path_factory):
    root = tmp_path_factory.mktemp("curate_http")
    cfg = write_config(
        root / "curate.yaml",
        limit=20,
        k_min=5,
        gating_models=[
            {"backend": "context-reader"},
            {"backend": "openai", "model": "gate", "base_url": leaky_gate.url},
        ],
    )
    return root, cfg


@pytest.fixture(scope="module")
def http_run(http_config, leaky_gate):
    root, cfg = http_config
    out = root / "first"
    curate(cfg, out)
    return out, leaky_gate.stats()["requests"]


def test_negatives_a_gating_model_answers_from_are_dropped(http_run):
    out, requests = http_run
    assert requests > 20  # Stage I for 20 samples, then oracle and one-negative checks
    s2 = {r["sample_id"]: r for r in rows(out, "stage2_mining.jsonl") if r["kept"]}
    s3 = rows(out, "stage3_oracle.jsonl")
    dropped = [(r, d) for r in s3 for d in r["dropped_negatives"]]
    assert dropped, "the leaky gating model should have answered from some negatives"
    for _r, d in dropped:
        assert "openai:gate" in d["answered_by"]
    for r in s3:
        mined = list(dict.fromkeys(d for ids in s2[r["sample_id"]]["negatives"].values() for d in ids))
        gone = [d["doc_id"] for d in r["dropped_negatives"]]
        assert sorted(r["negatives"] + gone) == sorted(mined)  # every mined negative was tested
        assert not set(r["negatives"]) & set(gone)
        if any(v == "correct" for v in r["oracle_outcomes"].values()):
            assert r["kept"] == (len(r["negatives"]) >= 5)
            if not r["kept"]:
                assert r["reason"] == f"only {len(r['negatives'])} negatives survive the oracle check (k_min=5)"
    assert any(r["reason"].startswith("only ") for r in s3), "k_min=5 should remove a sample that lost negatives"
    curated = [json.loads(line) for line in (out / "curated.jsonl").read_text().splitlines()]
    assert curated and all(len(c["negative_doc_ids"]) >= 5 for c in curated)
    reasons = json.loads((out / "report.json").read_text())["removal_reasons"]["stage3_oracle"]
    assert sum(reasons.values()) == sum(not r["kept"] for r in s3)


def test_rerun_makes_no_model_calls_and_gives_identical_files(http_run, http_config, leaky_gate, tmp_path):
    out, _ = http_run
    _, cfg = http_config
    requests = leaky_gate.stats()["requests"]
    before = snapshot(out)
    curate(cfg, out)  # finished stages are loaded from disk
    assert leaky_gate.stats()["requests"] == requests
    assert snapshot(out) == before
    # an interrupted curation (Stage III and the outputs missing) resumes from the response cache
    for name in ("stage3_oracle.jsonl", "curated.jsonl", "curated.kb.jsonl", "report.json"):
        (out / name).unlink()
    curate(cfg, out)
    assert leaky_gate.stats()["requests"] == requests
    assert snapshot(out) == before
    # a fresh directory recomputes every stage, all answers come from the cache
    fresh = tmp_path / "fresh"
    curate(cfg, fresh)
    assert leaky_gate.stats()["requests"] == requests
    assert snapshot(fresh) == before


def test_surviving_negatives_do_not_let_the_http_gate_answer(http_run, bench, leaky_gate):
    """Ask the HTTP gating model again, uncached, with each surviving negative alone."""
    from mmrag.judging.modes import RuleJudge
    from mmrag.models import create_model
    from mmrag.models.base import GenerationSettings, ModelSpec
    from mmrag.retrieval import InMemoryDocStore
    from mmrag.scenarios import compose

    out, _ = http_run
    b, samples = bench
    by_id = {s.id: s for s in samples}
    store = InMemoryDocStore(list(b.documents()))
    gate = create_model(ModelSpec(backend="openai", model="gate", base_url=leaky_gate.url), cache=None)
    items = [(by_id[r["sample_id"]], d) for r in rows(out, "stage3_oracle.jsonl") for d in r["negatives"]]
    items += [
        (by_id[r["sample_id"]], d["doc_id"]) for r in rows(out, "stage3_oracle.jsonl") for d in r["dropped_negatives"]
    ]
    prompts = [
        (s, compose(s, _spec("adversarial", 1), miner=OneNegative(store, store.get(d)), store=store)) for s, d in items
    ]
    n_kept = sum(len(r["negatives"]) for r in rows(out, "stage3_oracle.jsonl"))
    before = leaky_gate.stats()["requests"]
    responses = gate.generate([p for _, p in prompts], GenerationSettings())
    assert leaky_gate.stats()["requests"] - before == len(prompts)
    outcomes = [RuleJudge().judge(s, p, r).outcome for (s, p), r in zip(prompts, responses)]
    assert "correct" not in outcomes[:n_kept]
    assert outcomes[n_kept:] and all(o == "correct" for o in outcomes[n_kept:])


# -- Stage I: a gating model that knows the answers without context --------------------------------
def test_stage1_removes_samples_a_gating_model_answers_without_context(bench, answers_by_question, tmp_path):
    knowable = {q: a[0][0] for q, a in answers_by_question.items() if len(a) == 1}

    def respond(body: dict) -> str:
        question, _ = _question(body)
        return knowable.get(question, DEFLECT)

    samples = bench[1][:12]
    expected = {s.id for s in samples if s.question in knowable}
    assert expected and len(expected) < len(samples)
    with LoopbackServer(responder=respond) as srv:
        cfg = write_config(
            tmp_path / "c.yaml", limit=12, gating_models=[{"backend": "openai", "model": "know", "base_url": srv.url}]
        )
        out = tmp_path / "out"
        curate(cfg, out)
        assert srv.stats()["requests"] >= len(samples)
    s1 = rows(out, "stage1_parametric.jsonl")
    assert {r["sample_id"] for r in s1 if not r["kept"]} == expected
    for r in s1:
        if not r["kept"]:
            assert r["reason"].startswith("answered without context by openai:know")
            assert list(r["outcomes"].values()) == ["correct"]
    assert [r["sample_id"] for r in rows(out, "stage2_mining.jsonl")] == [s.id for s in samples if s.id not in expected]
    report = json.loads((out / "report.json").read_text())
    assert report["totals"]["stage1_parametric"] == len(samples) - len(expected)
    assert report["removal_reasons"]["stage1_parametric"] == {"answered without context": len(expected)}


def test_curated_negatives_feed_stage3_and_the_manifest_names_the_retriever(home, bench, tmp_path):
    """Stage II starts from the samples' own negatives; the configured retriever (bm25 for text)
    is the one the miner used, and the manifest says so; a run of the curated file shows only the
    Stage III survivors."""
    out = tmp_path / "out"
    curate(
        write_config(
            tmp_path / "c.yaml", negatives="curated", limit=12, k_min=1, retrieval={"retrievers": {"text": "bm25"}}
        ),
        out,
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["negatives"] == "curated" and manifest["retrieval"]["retrievers"] == {"text": "bm25"}
    assert manifest["index_hashes"]["text"].startswith("retriever:") and set(manifest["retrievers"]) == {
        "text",
        "visual",
        "multimodal",
    }
    by_id = {s.id: s for s in bench[1]}
    s2 = [r for r in rows(out, "stage2_mining.jsonl") if "curated" in r["negatives"]]
    assert s2 and all(r["negatives"]["curated"] == by_id[r["sample_id"]].metadata["negative_doc_ids"] for r in s2)
    from mmrag.benchmarks import load_benchmark
    from mmrag.scenarios import compose
    from mmrag.scenarios.spec import ScenarioSpec

    cur = load_benchmark("deflection", str(out / "curated.jsonl"))
    store = {d.id: d for d in cur.documents()}
    from mmrag.retrieval import InMemoryDocStore

    st = InMemoryDocStore(list(store.values()))
    s3 = {r["sample_id"]: r for r in rows(out, "stage3_oracle.jsonl")}
    for s in cur.samples():
        for kind in ("realistic", "adversarial"):
            p = compose(s, ScenarioSpec(kind=kind, n_distractors=2, negative_modality="any"), store=st)
            shown = {c.document.id for c in p.contexts if c.role == "negative"}
            assert shown and shown <= set(s3[s.id]["negatives"])
