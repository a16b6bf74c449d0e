"""Baselines as models, including the MiniLM context-reader (real sentence-transformers, offline)."""

from __future__ import annotations

from collections import Counter

import pytest

from mmrag.errors import InputError
from mmrag.models import GenerationSettings, ResponseCache, create_model, parse_model_arg
from mmrag.models.context_reader import ContextReader, answer_span, split_sentences
from mmrag.schema import DEFLECTION_PHRASE, Choice, ContentPart, Context, Document, ImageRef, Message, Prompt

G = GenerationSettings()
Q = "What is the capital of Varnholt?"


def prompt(question: str = Q, choices=(), contexts=(), pid: str = "", meta: bool = True) -> Prompt:
    body = "\n".join(c.document.text for c in contexts) + "\n" + question
    return Prompt(
        id=pid,
        sample_id="s",
        messages=[Message(role="user", content=[ContentPart(type="text", text=body)])],
        choices=list(choices),
        contexts=list(contexts),
        metadata={"question": question} if meta else {},
    )


def ctx(text: str, role: str = "negative", modality: str = "text", i: int = 0) -> Context:
    return Context(document=Document(id=f"d{i}-{abs(hash(text))}", modality=modality, text=text), role=role)


MCQ = [
    Choice(letter="A", text="Quellmar"),
    Choice(letter="B", text="None of the above", is_nota=False),
    Choice(letter="C", text="Ostrava"),
    Choice(letter="D", text="Dunmere"),
]


def model(name: str, **opts):
    return create_model(parse_model_arg(name, **opts), cache=None)


def test_always_deflect_and_first_option():
    p_mcq, p_open = prompt(choices=MCQ), prompt()
    assert [r.text for r in model("always-deflect").generate([p_mcq, p_open], G)] == [DEFLECTION_PHRASE] * 2
    assert [r.text for r in model("first-option").generate([p_mcq, p_open], G)] == ["A", DEFLECTION_PHRASE]


def test_always_nota_finds_nota_by_text_not_position():
    m = model("always-nota")
    assert m.generate([prompt(choices=MCQ)], G)[0].text == "B"
    flagged = [Choice(letter="A", text="x"), Choice(letter="B", text="y"), Choice(letter="C", text="z", is_nota=True)]
    assert m.generate([prompt(choices=flagged)], G)[0].text == "C"
    no_nota = [Choice(letter="A", text="x"), Choice(letter="B", text="y")]
    assert [r.text for r in m.generate([prompt(choices=no_nota), prompt()], G)] == [DEFLECTION_PHRASE] * 2


def test_random_choice_is_seeded_per_prompt_and_uniform():
    m = model("random-choice")
    prompts = [prompt(question=f"Question {i}?", choices=MCQ) for i in range(400)]
    first = [r.text for r in m.generate(prompts, G)]
    assert first == [r.text for r in model("random-choice").generate(prompts, G)]  # reproducible
    counts = Counter(first)
    assert set(counts) == {"A", "B", "C", "D"} and min(counts.values()) > 60  # ~100 each
    other_seed = [r.text for r in m.generate(prompts, GenerationSettings(seed=7))]
    assert other_seed != first and sum(a == b for a, b in zip(first, other_seed)) < 200  # independent draws
    # open questions: a random word of the prompt that is not in the question, or deflection
    p = prompt(contexts=[ctx("The capital of Brennwald is Ostrava.")])
    word = model("random-choice").generate([p], G)[0].text
    assert word in {"Brennwald", "Ostrava"}
    assert model("random-choice", open="deflect").generate([p], G)[0].text == DEFLECTION_PHRASE
    with pytest.raises(InputError, match="options.open"):
        model("random-choice", open="maybe")


def test_answer_span_rules():
    assert answer_span(Q, "The capital of Varnholt is Quellmar.") == "Quellmar"
    assert (
        answer_span("Who founded the Ostrel Guild?", "The Ostrel Guild was founder by Anna of Brell.")
        == "Anna of Brell"
    )
    assert (
        answer_span("How many people live in Quellmar?", "Quellmar has a population of 40,000.")
        == "population of 40,000"
    )
    assert answer_span(Q, "What is the capital of Varnholt?") == ""
    assert split_sentences("One. Two!\nThree? four e.g. five") == ["One.", "Two!", "Three? four e.g. five"]


@pytest.fixture(scope="module")
def reader() -> ContextReader:
    return ContextReader()


def test_context_reader_three_behaviours(reader):
    gold = ctx("Varnholt is a mountain kingdom. The capital of Varnholt is Quellmar. It exports wool.", "gold")
    look_alike = [ctx("The capital of Brennwald is Ostrava.", i=1), ctx("The capital of Dorrin is Hallow Bay.", i=2)]
    unrelated = [ctx("Bananas are a yellow fruit. The river flows south.", i=3)]
    no_ctx, oracle, adversarial, junk = (
        prompt(),
        prompt(contexts=[gold, *look_alike]),
        prompt(contexts=look_alike),
        prompt(contexts=unrelated),
    )
    answers = [r.text for r in reader.generate([no_ctx, oracle, adversarial, junk], G)]
    assert answers[0] == DEFLECTION_PHRASE  # nothing to read
    assert answers[1] == "Quellmar"  # gold context
    assert answers[2] in {"Ostrava", "Hallow Bay"}  # confident, wrong: a hallucination
    assert answers[3] == DEFLECTION_PHRASE  # nothing matches well


def test_context_reader_reads_captions_not_images_and_falls_back_to_user_text(reader, tmp_path):
    img = ImageRef(path=str(tmp_path / "never-read.png"), sha256="0" * 64)
    only_image = Context(document=Document(id="i", modality="image", image=img), role="gold")
    caption = Context(
        document=Document(
            id="m", modality="multimodal", image=img, text="A photo of Quellmar, the capital of Varnholt."
        ),
        role="gold",
    )
    r_img, r_cap = reader.generate([prompt(contexts=[only_image]), prompt(contexts=[caption], meta=False)], G)
    assert r_img.text == DEFLECTION_PHRASE
    assert "Quellmar" in r_cap.text


def test_context_reader_mcq_and_threshold(reader):
    gold = ctx("The capital of Varnholt is Quellmar.", "gold")
    assert reader.generate([prompt(choices=MCQ, contexts=[gold])], G)[0].text == "A"
    strict = ContextReader(threshold=0.99)
    assert strict.generate([prompt(contexts=[gold])], G)[0].text == DEFLECTION_PHRASE
    sent, cos = reader.best_sentence(Q, ["The capital of Varnholt is Quellmar.", "Bananas are yellow."])
    assert sent.startswith("The capital") and cos > 0.7
    assert strict.fingerprint != reader.fingerprint
    with pytest.raises(InputError, match="threshold"):
        ContextReader(threshold=3)


def test_baselines_behind_the_cache_keep_per_prompt_answers(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    m = create_model(parse_model_arg("first-option"), cache=cache)
    a = prompt(choices=MCQ, pid="p1")
    b = prompt(choices=[Choice(letter="Z", text="q"), *MCQ], pid="p2")  # same messages, other options
    assert [r.text for r in m.generate([a, b], G)] == ["A", "Z"]
    again = m.generate([a, b], G)
    assert [r.text for r in again] == ["A", "Z"] and all(r.cached for r in again)
    assert m.model_calls == 2


def test_bare_names_are_registered():
    from mmrag.models import MODELS

    for name in ("always-deflect", "random-choice", "always-nota", "first-option", "context-reader"):
        assert name in MODELS
        assert parse_model_arg(name).backend == name
