"""FAISS indices on disk: streaming build, factories, shards, manifest verification, atomic
writes, and the ``mmrag index`` CLI."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent / "plugins"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from retrieval_world import make_world  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from mmrag.commands.index import app  # noqa: E402
from mmrag.errors import IndexMismatchError, InputError  # noqa: E402
from mmrag.indices import (  # noqa: E402
    ColorLayoutImageEncoder,
    SentenceTransformerEncoder,
    build_index,
    build_index_from_embeddings,
    kb_content_hash,
    load_index,
)
from mmrag.schema import Document, ImageRef  # noqa: E402


def clustered(n: int, dim: int = 64, clusters: int = 50, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    x = centres[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def batches(x: np.ndarray, size: int = 1000, prefix: str = "d"):
    for i in range(0, len(x), size):
        yield (
            [f"{prefix}{j}" for j in range(i, min(len(x), i + size))],
            ["text"] * len(x[i : i + size]),
            x[i : i + size],
        )


def exact_topk(x: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-(q @ x.T), axis=1, kind="stable")[:, :k]


def build_vectors(x, out, factory="Flat", **kw):
    return build_index_from_embeddings(
        batches(x),
        out,
        dim=x.shape[1],
        kind="text",
        encoder_fingerprint="test:v",
        kb_content_hash="kb0",
        factory=factory,
        **kw,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"), 16)


@pytest.fixture(scope="module")
def minilm():
    return SentenceTransformerEncoder()


def test_flat_index_matches_exact_search_and_maps_ids(tmp_path):
    x = clustered(3000)
    m = build_vectors(x, tmp_path / "ix")
    assert (m.count, m.dim, m.factory, m.kind) == (3000, 64, "Flat", "text")
    idx = load_index(tmp_path / "ix")
    q = x[:50] + 0.01
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores, rows = idx.search(q, 10)
    np.testing.assert_array_equal(rows, exact_topk(x, q, 10))
    assert idx.doc_ids[rows[0, 0]] == "d0" and idx.row_of("d123") == 123
    assert sorted(p.name for p in (tmp_path / "ix").iterdir()) == [
        "doc_ids.parquet",
        "manifest.json",
        "shard_000.faiss",
    ]


def test_sharded_search_equals_single_index(tmp_path):
    x = clustered(2500, seed=1)
    build_vectors(x, tmp_path / "one")
    m = build_vectors(x, tmp_path / "sharded", shard_size=700)
    assert [s.count for s in m.shards] == [700, 700, 700, 400]
    q = clustered(40, seed=9)
    s1, r1 = load_index(tmp_path / "one").search(q, 8)
    s2, r2 = load_index(tmp_path / "sharded").search(q, 8)
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_allclose(s1, s2, atol=1e-6)


@pytest.mark.parametrize(
    "factory,params", [("IVF32,Flat", {"nprobe": 8}), ("HNSW32", {"efSearch": 256}), ("IVF32,SQ8", {"nprobe": 8})]
)
def test_trained_and_graph_factories_reach_recall(tmp_path, factory, params):
    x = clustered(12000, seed=2)
    m = build_vectors(x, tmp_path / "ix", factory=factory, train_size=4000, search_params=params, shard_size=5000)
    assert m.search_params == params and len(m.shards) == 3
    if factory.startswith("IVF"):
        assert m.params["train_size"] == 4000
    idx = load_index(tmp_path / "ix")
    q = clustered(200, seed=3)
    _, rows = idx.search(q, 10)
    truth = exact_topk(x, q, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows, truth)])
    assert recall >= (0.85 if "SQ" in factory else 0.9), recall


def test_auto_factory_picks_flat_for_small_collections(tmp_path):
    m = build_vectors(clustered(500), tmp_path / "ix", factory="auto")
    assert m.factory == "Flat" and m.params["requested_factory"] == "auto"


def test_text_index_over_documents_with_minilm(world, minilm, tmp_path):
    docs, samples = world
    m = build_index(docs, minilm, "text", out=tmp_path / "text")
    assert m.count == 32 + 16  # two passages + one caption per entity
    assert m.encoder_fingerprint == minilm.fingerprint and m.kb_content_hash == kb_content_hash(docs)
    assert m.encoder_spec == {
        "name": "sentence-transformers",
        "kwargs": {"name_or_path": None, "precision": minilm.precision},
    }
    idx = load_index(tmp_path / "text", minilm, kb_hash=kb_content_hash(reversed(docs)))  # order-independent
    _, rows = idx.search(minilm.encode_text([samples[4].question]), 1)
    assert idx.doc_ids[rows[0, 0]] == "t4a"


def test_visual_and_multimodal_kinds_hold_the_right_documents(world, minilm, tmp_path):
    from mmrag.indices import FusionEncoder

    docs, _ = world
    vis = build_index(docs, ColorLayoutImageEncoder(), "visual", out=tmp_path / "vis")
    mm = build_index(docs, FusionEncoder(minilm, ColorLayoutImageEncoder()), "multimodal", out=tmp_path / "mm")
    assert vis.count == 32 and mm.count == 16
    assert set(load_index(tmp_path / "vis").modalities.tolist()) == {"image", "multimodal"}
    assert set(load_index(tmp_path / "mm").doc_ids.tolist()) == {f"m{i}" for i in range(16)}
    with pytest.raises(InputError, match="FusionEncoder or a joint-space"):
        build_index(docs, minilm, "multimodal", out=tmp_path / "bad")


def test_load_refuses_mismatched_encoder_kb_and_damaged_files(world, minilm, tmp_path):
    docs, _ = world
    build_index(docs, ColorLayoutImageEncoder(), "visual", out=tmp_path / "vis")
    with pytest.raises(IndexMismatchError, match="dimension"):
        load_index(tmp_path / "vis", minilm)
    with pytest.raises(IndexMismatchError, match="built with encoder"):
        load_index(tmp_path / "vis", ColorLayoutImageEncoder(layout_weight=2.0))
    with pytest.raises(IndexMismatchError, match="knowledge base changed"):
        load_index(tmp_path / "vis", kb_hash=kb_content_hash(docs[:-1]))
    shard = tmp_path / "vis" / "shard_000.faiss"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(IndexMismatchError, match="corrupt") as ei:
        load_index(tmp_path / "vis")
    assert "shard_000.faiss" in str(ei.value)
    shard.write_bytes(bytes(data[:-100]))
    with pytest.raises(IndexMismatchError, match="truncated"):
        load_index(tmp_path / "vis", verify="size")
    with pytest.raises(IndexMismatchError, match="FAISS cannot read"):
        load_index(tmp_path / "vis", verify="none")
    with pytest.raises(InputError, match="manifest.json is missing"):
        load_index(tmp_path)


def test_bad_input_leaves_nothing_half_written(world, minilm, tmp_path):
    docs, _ = world
    out = tmp_path / "vis"
    build_index(docs, ColorLayoutImageEncoder(), "visual", out=out)
    before = (out / "manifest.json").read_text()
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG garbage")
    bad = docs + [Document(id="bad", modality="image", image=ImageRef(path=str(broken)))]
    with pytest.raises(InputError, match="broken.png"):
        build_index(bad, ColorLayoutImageEncoder(), "visual", out=out, batch_size=8)
    assert (out / "manifest.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.png", "vis"]  # no temp folders left
    with pytest.raises(InputError, match="empty knowledge base"):
        build_index([d for d in docs if d.modality == "text"], ColorLayoutImageEncoder(), "visual", out=tmp_path / "e")
    with pytest.raises(InputError, match="duplicate document id 't0a'"):
        build_index(docs + docs[:1], minilm, "text", out=tmp_path / "dup")
    with pytest.raises(InputError, match="invalid FAISS factory"):
        build_index(docs, minilm, "text", factory="NotAnIndex99", out=tmp_path / "f")
    with pytest.raises(InputError, match="cannot train"):
        build_vectors(clustered(100), tmp_path / "ivf", factory="IVF256,Flat")
    with pytest.raises(InputError, match="not an mmrag index"):
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "keep.txt").write_text("mine")
        build_vectors(clustered(100), tmp_path / "other")
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"
    assert not list(tmp_path.glob(".*tmp*"))


def test_streaming_build_never_holds_the_matrix(tmp_path, monkeypatch):
    """Vectors are added in chunks read back from the spool, at most ``add_batch`` rows at a time."""
    import mmrag.indices.spool as spool

    seen = []
    orig = spool.EmbeddingSpool.read
    monkeypatch.setattr(spool.EmbeddingSpool, "read", lambda self, a, b: seen.append(b - a) or orig(self, a, b))
    build_vectors(clustered(5000), tmp_path / "ix", add_batch=1024)
    assert max(seen) <= 1024 and sum(seen) == 5000


def _write_kb(world_dir: Path, docs: list[Document]) -> Path:
    kb = world_dir / "kb.jsonl"
    with open(kb, "w") as fh:
        for d in docs:
            rec = {"id": d.id, "modality": d.modality, "text": d.text, "title": d.title, "entity_id": d.entity_id}
            if d.image is not None:
                rec["image"] = Path(d.image.path).name
            fh.write(json.dumps(rec) + "\n")
    return kb


def test_cli_build_info_and_bad_records(world, tmp_path):
    docs, _ = world
    world_dir = Path(docs[2].image.path).parent
    kb = _write_kb(world_dir, docs)
    runner = CliRunner()
    res = runner.invoke(app, ["build", "--kb", str(kb), "--kind", "visual", "--out", str(tmp_path / "vis")])
    assert res.exit_code == 0, res.output
    assert "32 vectors" in res.output
    res = runner.invoke(app, ["info", str(tmp_path / "vis")])
    assert res.exit_code == 0 and json.loads(res.output)["count"] == 32
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"id": "x1", "modality": "text", "text": "ok"})
        + "\n"
        + json.dumps({"id": "x2", "modality": "multimodal", "text": "caption"})
        + "\n"
    )
    res = runner.invoke(app, ["build", "--kb", str(bad), "--kind", "text", "--out", str(tmp_path / "t")])
    assert isinstance(res.exception, InputError) and "bad.jsonl:2" in str(res.exception)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    res = runner.invoke(app, ["build", "--kb", str(empty), "--kind", "visual", "--out", str(tmp_path / "t")])
    assert isinstance(res.exception, InputError) and "empty knowledge base" in str(res.exception)
    assert not (tmp_path / "t").exists()
