"""llama-index adapters both ways, offline (``Settings.llm = None``, local MiniLM embedding)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent / "plugins"))

import pytest  # noqa: E402

pytest.importorskip("llama_index.core")

import faiss  # noqa: E402
from llama_index.core import QueryBundle, Settings, StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.embeddings import BaseEmbedding  # noqa: E402
from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.schema import ImageNode, TextNode  # noqa: E402
from llama_index.vector_stores.faiss import FaissVectorStore  # noqa: E402
from retrieval_world import make_world, name  # noqa: E402

from mmrag.indices import SentenceTransformerEncoder  # noqa: E402
from mmrag.retrieval import (  # noqa: E402
    BM25Retriever,
    CachedRetriever,
    HybridRetriever,
    InMemoryDocStore,
    LlamaIndexRetriever,
    Query,
    as_llamaindex_embedding,
    as_llamaindex_retriever,
    build_world_miner,
)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("li")
    docs, samples = make_world(root / "w", 12)
    enc = SentenceTransformerEncoder()
    Settings.llm = None
    Settings.embed_model = as_llamaindex_embedding(enc)
    return docs, samples, enc, root


def test_embedding_adapter_gives_the_encoders_vectors(setup):
    docs, _, enc, _ = setup
    embed = Settings.embed_model
    assert isinstance(embed, BaseEmbedding) and embed.model_name == enc.fingerprint
    texts = [d.text for d in docs if d.modality == "text"][:3]
    want = enc.encode_text(texts)
    got = embed.get_text_embedding_batch(texts)
    assert len(got) == 3 and all(len(v) == enc.dim for v in got)
    assert max(abs(a - b) for row, ref in zip(got, want) for a, b in zip(row, ref)) < 1e-5
    q = embed.get_query_embedding(texts[0])
    assert sum(a * b for a, b in zip(q, want[0])) > 0.999  # queries embed like documents


def test_llamaindex_faiss_store_as_mmrag_retriever(setup, tmp_path):
    docs, samples, enc, _ = setup
    nodes = [
        TextNode(id_=d.id, text=d.text, metadata={"doc_id": d.id, "modality": d.modality})
        for d in docs
        if d.modality == "text"
    ]
    vs = FaissVectorStore(faiss_index=faiss.IndexFlatIP(enc.dim))
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=vs))
    li = index.as_retriever(similarity_top_k=5)
    r = LlamaIndexRetriever(li, name="faiss-text-v1")
    hits = r.retrieve([Query(text=s.question) for s in samples], 2)
    assert all(len(h) == 2 for h in hits)
    assert sum(h[0].doc_id == f"t{i}a" for i, h in enumerate(hits)) >= 11
    assert hits[0][0].modality == "text" and r.fingerprint.endswith(":faiss-text-v1")
    # it composes with mmrag's own pieces: RRF with BM25, and the SQLite cache
    hyb = HybridRetriever([r, BM25Retriever(docs)], weights=[2.0, 1.0])
    assert hyb.retrieve([Query(text=samples[3].question)], 1)[0][0].doc_id == "t3a"
    cached = CachedRetriever(r, tmp_path / "c.sqlite")
    assert cached.retrieve([Query(text=samples[1].question)], 2) == cached.retrieve(
        [Query(text=samples[1].question)], 2
    )
    assert cached.hits == 1


def test_mmrag_retriever_inside_a_llamaindex_query_engine(setup):
    docs, samples, _, root = setup
    miner = build_world_miner(docs, root / "cache")
    store = InMemoryDocStore(docs)
    li = as_llamaindex_retriever(miner.retrievers["text"], store, k=3)
    nodes = li.retrieve(samples[6].question)
    assert len(nodes) == 3 and nodes[0].node.node_id == "t6a" and isinstance(nodes[0].node, TextNode)
    assert nodes[0].node.metadata["entity_id"] == "E6" and nodes[0].score >= nodes[1].score
    engine = RetrieverQueryEngine.from_args(retriever=li)
    resp = engine.query(f"Which city is the capital of {name(6)}?")
    assert resp.source_nodes[0].node.node_id == "t6a"
    # an image query through llama-index's QueryBundle reaches the visual index
    vis = as_llamaindex_retriever(miner.retrievers["visual"], store, k=2)
    got = vis.retrieve(QueryBundle(query_str="", image_path=samples[4].images[0].path))
    assert {n.node.node_id for n in got} == {"i4", "m4"} and all(isinstance(n.node, ImageNode) for n in got)
    # and back again: the llama-index view wrapped as an mmrag retriever gives the same ranking
    round_trip = LlamaIndexRetriever(li, name="rt").retrieve([Query(text=samples[2].question)], 3)[0]
    direct = miner.retrievers["text"].retrieve([Query(text=samples[2].question)], 3)[0]
    assert [h.doc_id for h in round_trip] == [h.doc_id for h in direct]
