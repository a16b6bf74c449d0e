"""Hard-negative mining: exclusions, answer-leak filter, de-duplication, seed stability, shortfall,
round-robin over modalities, and the cached world miner."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent / "plugins"))

import pytest  # noqa: E402
from retrieval_world import capital, make_world  # noqa: E402

from mmrag.errors import InputError  # noqa: E402
from mmrag.retrieval import Hit, IndexMiner, InMemoryDocStore, NegativeMiner, build_world_miner  # noqa: E402
from mmrag.retrieval.miner import leak_pattern  # noqa: E402
from mmrag.schema import Document  # noqa: E402


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("mworld")
    docs, samples = make_world(root / "w", 20)
    t0 = time.perf_counter()
    miner = build_world_miner(docs, root / "cache")
    return docs, samples, miner, root, time.perf_counter() - t0


def test_miner_satisfies_protocol_and_excludes_gold_entity(world):
    docs, samples, miner, _, _ = world
    assert isinstance(miner, NegativeMiner)
    for s in samples[:6]:
        for mod in ("text", "image", "multimodal", "any"):
            res = miner.negatives(s, 4, mod, seed=0)
            assert len(res.documents) == 4 and res.shortfall == 0 and res.requested == 4
            assert all(d.entity_id != s.entity_id for d in res.documents)
            assert not set(s.gold_doc_ids) & {d.id for d in res.documents}
            assert len({d.id for d in res.documents}) == 4
            assert len(res.scores) == len(res.sources) == 4


def test_strict_modality_and_hardness(world):
    _, samples, miner, _, _ = world
    s = samples[4]  # entities 4 and 5 share a flag palette
    img = miner.negatives(s, 3, "image")
    assert [d.modality for d in img.documents] == ["image"] * 3 and img.documents[0].id == "i5"
    assert img.scores == sorted(img.scores, reverse=True)
    txt = miner.negatives(s, 3, "text")
    assert {d.modality for d in txt.documents} == {"text"}
    mm = miner.negatives(s, 2, "multimodal")
    assert {d.modality for d in mm.documents} == {"multimodal"} and mm.documents[0].id == "m5"


def test_answer_leaks_are_dropped_and_counted(world, tmp_path):
    docs, samples, _, _, _ = world
    s = samples[3]
    leaky = [
        Document(
            id=f"leak{j}",
            modality="text",
            entity_id=f"X{j}",
            text=f"A travel guide: {s.question[len('What is the capital of ') : -1]} ... the port of "
            f"{capital(3).upper()} is lovely.",
        )
        for j in range(3)
    ]
    near_miss = Document(
        id="nm", modality="text", entity_id="X9", text=f"{capital(3)}ville is not the capital of anything."
    )  # no word boundary match
    all_docs = docs + leaky + [near_miss]
    miner = build_world_miner(all_docs, tmp_path / "cache")
    res = miner.negatives(s, 5, "text")
    ids = {d.id for d in res.documents}
    assert res.dropped_leaks == 3 and not ids & {"leak0", "leak1", "leak2"}
    pat = leak_pattern(["Port  Zed", "pz"])
    assert (
        pat.search("the PORT zed harbour")
        and pat.search("(pz)")
        and not pat.search("pzx")
        and not pat.search("Portzed")
    )


def test_sentence_answers_leak_through_their_key_phrase():
    from mmrag.retrieval.miner import key_phrases

    q = "What colour is the roof of the Golden Pavilion?"
    assert key_phrases("The roof of the Golden Pavilion is red.", q) == [
        "The roof of the Golden Pavilion is red",
        "red",
    ]
    assert key_phrases("Edward Whymper") == ["Edward Whymper"]
    yes = "Yes, both are home to trajinera boats."
    assert key_phrases(yes, "Are both Xochimilco and Cuemanco home to trajinera boats?") == [yes.rstrip(".")]
    pat = leak_pattern(["The roof of the Golden Pavilion is red."], q)
    assert pat.search("Its roof shingles are painted red every decade.")  # states the fact: a leak
    assert not pat.search("The roof is covered in gold leaf.") and not pat.search("Fred built it.")


def test_duplicates_of_gold_content_are_not_negatives(world, tmp_path):
    docs, samples, _, _, _ = world
    s = samples[2]
    gold = next(d for d in docs if d.id == "t2a")
    copy = Document(id="copy", modality="text", entity_id="Other", text=gold.text.replace(capital(2), "it"))
    exact = Document(id="exact", modality="text", entity_id="Other2", text="  " + gold.text.upper() + " ")
    s2 = s.model_copy(update={"answers": ["nothing-to-leak"]})
    miner = build_world_miner(docs + [copy, exact], tmp_path / "c2")
    ids = [d.id for d in miner.negatives(s2, 6, "text").documents]
    assert "exact" not in ids and "copy" in ids


def test_seed_stability_pool_sampling_and_round_robin(world):
    docs, samples, miner, _, _ = world
    s = samples[7]
    a = miner.negatives(s, 4, "any", seed=3)
    assert a == miner.negatives(s, 4, "any", seed=3)
    assert set(a.sources) == {"text", "visual", "multimodal"}
    # at n = 2 one prompt holds two kinds; across samples every kind appears (the start is per sample)
    seen = [k for t in samples[:12] for k in miner.negatives(t, 2, "any", seed=0).sources]
    assert {k: seen.count(k) > 0 for k in ("text", "visual", "multimodal")} == dict.fromkeys(
        ("text", "visual", "multimodal"), True
    )
    pooled = IndexMiner(miner.store, miner.retrievers, pool_factor=3.0)
    draws = {tuple(d.id for d in pooled.negatives(s, 3, "text", seed=k).documents) for k in range(6)}
    assert len(draws) > 1
    assert pooled.negatives(s, 3, "text", seed=1) == pooled.negatives(s, 3, "text", seed=1)
    top = {d.id for d in miner.negatives(s, 9, "text").documents}
    assert all(set(d) <= top for d in draws)


def test_shortfall_is_recorded(world):
    docs, samples, miner, _, _ = world
    res = miner.negatives(samples[0], 100, "multimodal")
    assert len(res.documents) == 19 and res.shortfall == 81 and res.requested == 100
    assert miner.negatives(samples[0], 0, "text").documents == []


def test_bad_requests(world):
    _, samples, miner, _, _ = world
    with pytest.raises(InputError, match="unknown negative modality"):
        miner.negatives(samples[0], 2, "audio")
    bad = samples[0].model_copy(update={"gold_doc_ids": ["missing-doc"]})
    with pytest.raises(InputError, match="missing-doc"):
        miner.negatives(bad, 2, "text")
    text_only = IndexMiner(miner.store, {"text": miner.retrievers["text"]})
    with pytest.raises(InputError, match="no visual index"):
        text_only.negatives(samples[0], 2, "image")


def test_any_retriever_can_back_a_modality(world):
    docs, samples, _, _, _ = world

    class Fixed:
        fingerprint = "fixed"

        def retrieve(self, queries, k):
            return [[Hit(doc_id=d.id, score=1.0) for d in docs if d.modality == "text"][:k] for _ in queries]

    res = IndexMiner(InMemoryDocStore(docs), {"text": Fixed()}).negatives(samples[0], 3, "text", seed=5)
    assert len(res.documents) == 3 and all(d.entity_id != "E0" for d in res.documents)
    assert res == IndexMiner(InMemoryDocStore(docs), {"text": Fixed()}).negatives(samples[0], 3, "text", seed=5)


def test_world_miner_reuses_indices_keyed_by_kb_and_encoders(world):
    docs, samples, miner, root, _ = world
    manifests = sorted((root / "cache").glob("indices-*/*/manifest.json"))
    assert len(manifests) == 3
    stamps = [m.stat().st_mtime_ns for m in manifests]
    again = build_world_miner(docs, root / "cache")
    assert [m.stat().st_mtime_ns for m in manifests] == stamps
    assert again.negatives(samples[1], 3, "any") == miner.negatives(samples[1], 3, "any")
    build_world_miner(docs[:-1], root / "cache")  # a changed KB gets its own indices
    assert len(list((root / "cache").glob("indices-*"))) == 2


def test_prefetch_batches_query_embedding_and_bridge_for_text_only_samples(world, tmp_path):
    docs, samples, _, root, _ = world
    vectors = tmp_path / "queries.sqlite"  # a vector cache of this test's own
    miner = build_world_miner(docs, root / "cache", vector_cache=vectors)
    calls = []
    enc = miner.retrievers["text"].encoder
    orig = enc.encode_text
    enc.encode_text = lambda texts: calls.append(len(texts)) or orig(texts)
    try:
        assert miner.prefetch(samples, ["text"]) == len(samples)
        assert calls == [len(samples)]
        before = [miner.negatives(s, 2, "text").documents for s in samples]
        assert calls == [len(samples)]  # negatives reused the prefetched vectors
        # another miner (another process) over the same indices reads the vectors from disk
        again = build_world_miner(docs, root / "cache", vector_cache=vectors)
        again.retrievers["text"].encoder.encode_text = enc.encode_text
        assert again.prefetch(samples, ["text"]) == 0
        assert [again.negatives(s, 2, "text").documents for s in samples] == before
        assert calls == [len(samples)]
    finally:
        enc.encode_text = orig
    fresh = build_world_miner(docs, root / "cache", vector_cache=None)  # no vector cache: embeds again
    assert [fresh.negatives(s, 2, "text").documents for s in samples] == before
    # a text-only sample (no gold image, no query image) still gets image negatives via the bridge
    s = samples[3].model_copy(update={"gold_doc_ids": ["t3a"], "images": []})
    q = miner.mining_query(s, "visual")
    assert q is not None and q.images and "flag_3" not in q.images[0].path
    res = miner.negatives(s, 2, "image")
    assert res.shortfall == 0 and all(d.modality == "image" and d.entity_id != "E3" for d in res.documents)


def test_an_unusable_vector_cache_only_means_embedding_again(world, tmp_path):
    """The vector cache is an accelerator: a damaged file is left as it is and mining goes on."""
    docs, samples, _, root, _ = world
    bad = tmp_path / "queries.sqlite"
    bad.write_bytes(b"not a database" * 100)
    miner = build_world_miner(docs, root / "cache", vector_cache=bad)
    clean = build_world_miner(docs, root / "cache", vector_cache=None)
    assert miner.prefetch(samples, ["text"]) == len(samples)
    assert [miner.negatives(s, 2, "text").documents for s in samples] == [
        clean.negatives(s, 2, "text").documents for s in samples
    ]
    assert bad.read_bytes() == b"not a database" * 100
