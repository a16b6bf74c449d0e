"""Retrievers: dense over the three index kinds, BM25, RRF hybrid, the SQLite cache, the registry
(built-ins, an entry-point plug-in installed from a package outside mmrag, a dotted path) and the
retrieval evaluation."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent / "plugins"))

import pytest  # noqa: E402
from retrieval_world import make_world, name  # noqa: E402

from mmrag.errors import InputError  # noqa: E402
from mmrag.registry import allow_code  # noqa: E402
from mmrag.retrieval import (  # noqa: E402
    RETRIEVERS,
    BM25Retriever,
    CachedRetriever,
    Hit,
    HybridRetriever,
    InMemoryDocStore,
    Query,
    build_world_miner,
    create_retriever,
    evaluate_retrieval,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("rworld")
    docs, samples = make_world(root / "w", 16)
    miner = build_world_miner(docs, root / "cache")
    return docs, samples, miner


class Counting:
    """Wraps a retriever and counts the queries that reach it."""

    def __init__(self, inner):
        self.inner, self.fingerprint, self.calls = inner, inner.fingerprint, 0

    def retrieve(self, queries, k):
        self.calls += len(queries)
        return self.inner.retrieve(queries, k)


def test_dense_text_visual_and_multimodal_queries(world):
    docs, samples, miner = world
    text, vis, mm = (miner.retrievers[k] for k in ("text", "visual", "multimodal"))
    hits = text.retrieve([Query(text=s.question) for s in samples], 3)
    assert sum(h[0].doc_id == f"t{i}a" for i, h in enumerate(hits)) >= 14
    assert all(isinstance(h, Hit) and h.modality in ("text", "multimodal") for hl in hits for h in hl)
    assert [h.score for h in hits[0]] == sorted((h.score for h in hits[0]), reverse=True)
    # a query image finds its own flag (image doc and image+caption doc share the file) first
    vh = vis.retrieve([Query(images=samples[6].images)], 4)[0]
    assert {h.doc_id for h in vh[:2]} == {"i6", "m6"} and vh[0].score == pytest.approx(1.0, abs=1e-5)
    # the text-only MiniLM index ignores a query image; the colour-layout index ignores the text
    q = Query(text=samples[2].question, images=samples[9].images)
    assert text.retrieve([q], 1)[0][0].doc_id == "t2a"
    assert vis.retrieve([q], 1)[0][0].doc_id in ("i9", "m9")
    # multimodal: text + image fused; image alone and text alone also work
    both = mm.retrieve([Query(text=f"The flag of {name(5)}.", images=samples[5].images)], 1)[0][0]
    assert both.doc_id == "m5" and both.modality == "multimodal"
    assert mm.retrieve([Query(text=f"The flag of {name(7)}.")], 1)[0][0].doc_id == "m7"
    assert text.retrieve([], 3) == []
    assert len(text.retrieve([Query(text="anything")], 500)[0]) == text.index.count  # fewer than k: no padding
    with pytest.raises(InputError, match="no text or image"):
        vis.retrieve([Query(text="only words")], 3)


def test_dense_retriever_from_folder_rebuilds_encoder_from_manifest(world):
    _, samples, miner = world
    path = miner.retrievers["text"].index.path
    r = RETRIEVERS.create("dense", str(path))
    assert r.fingerprint == miner.retrievers["text"].fingerprint
    assert r.retrieve([Query(text=samples[3].question)], 1)[0][0].doc_id == "t3a"


def test_bm25_lexical_hits_and_image_only_queries(world):
    docs, samples, _ = world
    bm = BM25Retriever(docs)
    assert len(bm) == 48
    hits = bm.retrieve(
        [
            Query(text=f"the island republic whose capital is {name(11)}"),
            Query(images=samples[0].images),
            Query(text="zzzqqq"),
        ],
        5,
    )
    assert hits[0][0].doc_id == "t11a" and hits[1] == [] and hits[2] == []
    assert all(h.score > 0 for h in hits[0])
    assert BM25Retriever(docs, k1=1.2).fingerprint != bm.fingerprint


class Fixed:
    def __init__(self, lists, fp):
        self.lists, self.fingerprint = lists, fp

    def retrieve(self, queries, k):
        return [[Hit(doc_id=d, score=1.0) for d in self.lists[:k]] for _ in queries]


def test_rrf_hybrid_follows_the_formula():
    a, b = Fixed(["x", "y", "z"], "a"), Fixed(["y", "w"], "b")
    out = HybridRetriever([a, b], k_rrf=60).retrieve([Query(text="q")], 3)[0]
    expect = {"x": 1 / 61, "y": 1 / 62 + 1 / 61, "z": 1 / 63, "w": 1 / 62}
    assert [h.doc_id for h in out] == ["y", "x", "w"]
    assert [h.score for h in out] == pytest.approx([expect["y"], expect["x"], expect["w"]])
    weighted = HybridRetriever([a, b], k_rrf=60, weights=[1.0, 0.0]).retrieve([Query(text="q")], 1)[0]
    assert weighted[0].doc_id == "x"
    with pytest.raises(InputError):
        HybridRetriever([])


def test_hybrid_of_dense_and_bm25_via_registry(world):
    docs, samples, miner = world
    hyb = create_retriever(
        {"name": "hybrid", "retrievers": [miner.retrievers["text"], {"name": "bm25"}], "weights": [2.0, 1.0]},
        documents=docs,
    )
    hits = hyb.retrieve([Query(text=s.question) for s in samples[:8]], 3)
    assert [h[0].doc_id for h in hits] == [f"t{i}a" for i in range(8)]


def test_cache_serves_repeats_and_keys_on_fingerprint_query_and_k(world, tmp_path):
    docs, samples, _ = world
    inner = Counting(BM25Retriever(docs))
    db = tmp_path / "cache.sqlite"
    cached = CachedRetriever(inner, db)
    qs = [Query(text=s.question) for s in samples[:5]]
    first = cached.retrieve(qs, 4)
    assert inner.calls == 5 and cached.misses == 5
    assert cached.retrieve(qs, 4) == first and inner.calls == 5 and cached.hits == 5
    cached.retrieve(qs[:2], 3)
    assert inner.calls == 7
    cached.close()
    again = CachedRetriever(inner, db)  # persisted across instances
    assert again.retrieve(qs, 4) == first and inner.calls == 7
    other = Counting(BM25Retriever(docs, k1=0.9))
    assert CachedRetriever(other, db).retrieve(qs[:1], 4) and other.calls == 1
    img_q = Query(text="x", images=samples[0].images)
    assert again.retrieve([img_q], 2) == again.retrieve([img_q], 2) and inner.calls == 8


def test_doc_store(world):
    docs, _, _ = world
    store = InMemoryDocStore(docs)
    assert len(store) == 64 and "t1a" in store and store.get("i3").modality == "image"
    assert {d.id for d in store.by_entity("E2")} == {"t2a", "t2b", "i2", "m2"}
    with pytest.raises(KeyError, match="unknown document id"):
        store.get("nope")
    with pytest.raises(InputError, match="duplicate"):
        InMemoryDocStore(docs + docs[:1])


def test_registry_unknown_name_and_dotted_path(world):
    docs, samples, _ = world
    with pytest.raises(InputError, match="unknown retriever 'nope'"):
        create_retriever("nope")
    sys.path.insert(0, str(Path(__file__).parent / "plugins" / "mmrag_extra_retriever"))
    try:
        with pytest.raises(InputError, match="--allow-code"):  # configs are data: no code by default
            create_retriever("mmrag_extra_retriever:KeywordOverlapRetriever", documents=docs)
        with allow_code():
            r = create_retriever("mmrag_extra_retriever:KeywordOverlapRetriever", documents=docs)
        assert r.retrieve([Query(text=f"capital {name(4)} republic")], 1)[0][0].doc_id == "t4a"
    finally:
        sys.path.pop(0)
        sys.modules.pop("mmrag_extra_retriever", None)


def test_entry_point_plugin_from_an_installed_package(world, tmp_path):
    docs, _, _ = world
    src = tmp_path / "src"
    shutil.copytree(Path(__file__).parent / "plugins" / "mmrag_extra_retriever", src)
    target = tmp_path / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "keyword-overlap" not in RETRIEVERS
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    try:
        assert "keyword-overlap" in RETRIEVERS and "keyword-overlap" in RETRIEVERS.names()
        r = create_retriever({"name": "keyword-overlap", "min_overlap": 2}, documents=docs)
        assert type(r).__module__ == "mmrag_extra_retriever" and r.min_overlap == 2
        assert r.retrieve([Query(text=f"capital of {name(9)} republic")], 1)[0][0].doc_id == "t9a"
    finally:
        sys.path.remove(str(target))
        sys.modules.pop("mmrag_extra_retriever", None)


def test_entry_points_are_read_once_per_sys_path(monkeypatch):
    """The judge asks `source in ANSWER_RULES` for every reply: the installed distributions' metadata
    is scanned once per sys.path, not per question (it cost the cold demo half its time)."""
    import mmrag.registry as registry

    calls = []
    real = registry.entry_points
    monkeypatch.setattr(registry, "entry_points", lambda **kw: calls.append(kw) or real(**kw))
    monkeypatch.setattr(registry, "_ENTRY_POINTS", {})
    for _ in range(50):
        assert "no-such-retriever" not in RETRIEVERS
    assert len(calls) == 1
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "plugins"))  # a new path: read again
    assert "no-such-retriever" not in RETRIEVERS
    assert len(calls) == 2


def test_evaluate_retrieval_recall_and_mrr(world):
    docs, samples, miner = world
    r = miner.retrievers["text"]
    modality_of = dict(zip(r.index.doc_ids.tolist(), r.index.modalities.tolist()))
    res = evaluate_retrieval(r, samples, modality_of, ks=(1, 5))
    g = res["groups"]["all"]
    assert g["n"] == 16 and res["skipped"] == 0
    assert g["recall@1"] >= 0.85 and g["recall@5"] >= g["recall@1"] and 0.85 <= g["mrr"] <= 1.0
    vis = miner.retrievers["visual"]
    vmod = dict(zip(vis.index.doc_ids.tolist(), vis.index.modalities.tolist()))
    vres = evaluate_retrieval(vis, samples, vmod, ks=(1, 2))
    assert vres["groups"]["image"]["recall@2"] == 1.0  # the query image is the gold image
    # an index that holds none of the gold documents skips every sample
    assert evaluate_retrieval(vis, samples, {"zz": "text"})["skipped"] == 16


def test_cli_eval_on_the_demo_benchmark(tmp_path, monkeypatch):
    """``mmrag index eval`` on the generated demo world (skipped until the demo benchmark exists)."""
    bench = pytest.importorskip("mmrag.benchmarks")
    from typer.testing import CliRunner

    from mmrag.commands.index import app

    if "demo" not in bench.BENCHMARKS:
        pytest.skip("demo benchmark not available")
    b = bench.BENCHMARKS.create("demo")
    kb = getattr(b, "kb_path", None)
    if kb is None or not kb.exists():
        pytest.skip("demo benchmark exposes no kb path")
    runner = CliRunner()
    res = runner.invoke(app, ["build", "--kb", str(kb), "--kind", "visual", "--out", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app, ["eval", str(tmp_path / "t"), "--benchmark", "demo", "--limit", "60", "--json", str(tmp_path / "e.json")]
    )
    assert res.exit_code == 0, res.output
    import json

    out = json.loads((tmp_path / "e.json").read_text())
    assert out["groups"]["all"]["n"] > 0 and 0.0 <= out["groups"]["all"]["mrr"] <= 1.0
    assert "recall@10" in res.output
