"""The scenario composer: every kind x modality x strictness, determinism, non-mutation, gold
position, positive-modality filtering, mining shortfall, the context budget, templates."""

from __future__ import annotations

import copy
import itertools

import pytest
from scenario_doubles import OverlapMiner, make_world, mcq_sample

from mmrag.errors import InputError
from mmrag.scenarios import ScenarioNotApplicable, ScenarioSpec, applicable, compose, get_template, load_template
from mmrag.schema import DEFLECTION_PHRASE, Choice, Sample

MODS = ("text", "image", "multimodal", "any")
STRICT = ("none", "soft", "moderate", "severe")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"))


def _all_specs() -> list[ScenarioSpec]:
    specs, seen = [], set()
    for kind, pos, neg, s in itertools.product(
        ("parametric", "oracle", "realistic", "adversarial"), MODS, MODS, STRICT
    ):
        spec = ScenarioSpec(kind=kind, n_distractors=2, positive_modality=pos, negative_modality=neg, strictness=s)
        if spec.id not in seen:
            seen.add(spec.id)
            specs.append(spec)
    return specs


def test_spec_grid_is_canonical():
    # parametric 4 strictness, oracle 4 pos x 4, realistic 4x4x4, adversarial 4 neg x 4
    assert len(_all_specs()) == 4 + 16 + 64 + 16


def _user_images(prompt):
    return [p.image for p in prompt.messages[-1].content if p.type == "image"]


@pytest.mark.parametrize("spec", _all_specs(), ids=lambda s: s.id.rsplit("-", 1)[0])
def test_every_kind_modality_strictness(world, spec):
    sample, store, miner = world
    prompt = compose(sample, spec, miner=miner)
    gold = [c for c in prompt.contexts if c.role == "gold"]
    negs = [c for c in prompt.contexts if c.role == "negative"]
    gold_mods = {"g-text": "text", "g-img": "image", "g-mm": "multimodal"}
    if spec.uses_gold:
        rows = {"any": set(gold_mods.values()), "image": {"image", "multimodal"}}  # image row: gold with an image
        want = [g for g, m in gold_mods.items() if m in rows.get(spec.positive_modality, {spec.positive_modality})]
        assert sorted(c.document.id for c in gold) == sorted(want)
    else:
        assert gold == []
    if spec.uses_negatives:
        assert len(negs) == 2
        assert all(spec.negative_modality in ("any", c.document.modality) for c in negs)
        assert all(c.document.entity_id != "varnholt" and c.document.id != "n-leak" for c in negs)
    else:
        assert negs == []
    assert prompt.metadata["gold_positions"] == [i for i, c in enumerate(prompt.contexts) if c.role == "gold"]
    assert prompt.metadata["question"] == sample.question
    assert prompt.metadata["mining"]["requested"] == (2 if spec.uses_negatives else 0)
    assert prompt.scenario == spec.model_dump(mode="json") and prompt.scenario_id == spec.id

    # rendering: system message, then one user message: query image first, evidence numbered in order
    assert [m.role for m in prompt.messages] == ["system", "user"]
    user = prompt.messages[-1]
    assert user.content[0].type == "image" and user.content[0].image.path == sample.images[0].path
    text = user.text()
    for i, _ctx in enumerate(prompt.contexts, start=1):
        assert f"[{i}]" in text
    assert f"[{len(prompt.contexts) + 1}]" not in text
    n_ctx_images = sum(c.document.modality in ("image", "multimodal") for c in prompt.contexts)
    assert len(_user_images(prompt)) == 1 + n_ctx_images
    assert text.index("Question: " + sample.question) > (text.index("Context:") if prompt.contexts else -1)
    assert ("Context:" in text) == bool(prompt.contexts)

    # the strictness template, its wording and its stamp
    tpl = get_template(f"strictness-{spec.strictness}")
    assert (prompt.template_id, prompt.template_version, prompt.template_hash) == (tpl.id, tpl.version, tpl.sha256)
    assert text.endswith(tpl.fill("text"))
    assert (DEFLECTION_PHRASE in text) == (spec.strictness != "none")


def test_evidence_layout_interleaves_images_and_captions(world):
    sample, store, miner = world
    prompt = compose(sample, ScenarioSpec(kind="oracle"), store=store)
    parts = prompt.messages[-1].content
    kinds = [p.type for p in parts]
    # query image, "[1] text ... [2] Title", image, "[3]", image, caption + question
    assert kinds == ["image", "text", "image", "text", "image", "text"]
    assert parts[1].text.startswith("Context:\n[1] Varnholt Tower: Varnholt Tower is a stone lighthouse")
    assert parts[1].text.endswith("[2] Varnholt Tower")
    assert parts[2].image.path.endswith("g-img.png")
    assert parts[3].text == "[3]" and parts[4].image.path.endswith("g-mm.png")
    assert parts[5].text.startswith("The lighthouse of Ossel, whose construction ended in 1887.\n\nQuestion: ")


def test_parametric_has_no_evidence(world):
    sample, store, miner = world
    calls = miner.calls
    prompt = compose(sample, ScenarioSpec(kind="parametric", strictness="severe"), miner=miner)
    assert prompt.contexts == [] and miner.calls == calls  # no mining for a no-context scenario
    assert len(_user_images(prompt)) == 1 and "[1]" not in prompt.messages[-1].text()


def test_deterministic_and_seeded(world):
    sample, store, miner = world
    spec = ScenarioSpec(kind="realistic", n_distractors=4, negative_modality="any")
    a, b = compose(sample, spec, miner=miner), compose(sample, spec, miner=miner)
    assert a.model_dump() == b.model_dump() and a.id == b.id
    orders = {
        tuple(c.document.id for c in compose(sample, spec.model_copy(update={"seed": s}), miner=miner).contexts)
        for s in range(8)
    }
    assert len(orders) > 1  # the seed really moves the gold position / negatives


def test_never_mutates_the_sample(tmp_path):
    sample, store, miner = make_world(tmp_path)  # fresh: no image hash cached yet
    store_before = copy.deepcopy(list(store))
    before = copy.deepcopy(sample)
    mcq = mcq_sample()
    mcq_before = copy.deepcopy(mcq)
    for spec in _all_specs()[::7] + [ScenarioSpec(kind="knowhal", strictness="soft")]:
        compose(sample, spec, miner=miner)
        p = compose(
            mcq, spec.model_copy(update={"kind": "parametric"}) if spec.kind != "knowhal" else spec, miner=miner
        )
        p.choices[0].text = "changed"  # the prompt's choices must not alias the sample's
    assert sample == before and mcq == mcq_before
    assert sample.images[0].sha256 is None and list(store) == store_before  # no hash written back


@pytest.mark.parametrize(
    "position,expected", [("first", [0, 1, 2]), ("last", [2, 3, 4]), (1, [1, 2, 3]), (9, [2, 3, 4])]
)
def test_gold_position(world, position, expected):
    sample, store, miner = world
    spec = ScenarioSpec(kind="realistic", n_distractors=2, gold_position=position)
    prompt = compose(sample, spec, miner=miner)
    assert prompt.metadata["gold_positions"] == expected
    assert [c.document.id for c in prompt.contexts if c.role == "gold"] == ["g-text", "g-img", "g-mm"]
    assert ("gold_position_clamped_to" in prompt.metadata) == (position == 9)


def test_random_gold_position_varies_across_samples(world):
    sample, store, miner = world
    spec = ScenarioSpec(kind="realistic", n_distractors=2, positive_modality="text")
    positions = {
        tuple(compose(sample.model_copy(update={"id": f"s{i}"}), spec, miner=miner).metadata["gold_positions"])
        for i in range(12)
    }
    assert positions == {(0,), (1,), (2,)}


def test_positive_modality_without_matching_gold_is_not_applicable(world):
    sample, store, miner = world
    text_only = sample.model_copy(update={"gold_doc_ids": ["g-text"]})
    spec = ScenarioSpec(kind="oracle", positive_modality="image")
    assert "modality 'image'" in applicable(text_only, spec, store)
    with pytest.raises(ScenarioNotApplicable, match="no gold document of modality 'image'"):
        compose(text_only, spec, store=store)
    assert applicable(sample, spec, store) is None


def test_missing_inputs_are_named(world):
    sample, store, miner = world
    with pytest.raises(InputError, match="document store") as e:
        compose(sample, ScenarioSpec(kind="oracle"))
    assert e.value.field == "store"
    with pytest.raises(InputError, match="negative miner"):
        compose(sample, ScenarioSpec(kind="adversarial", n_distractors=1), store=store)
    bad = sample.model_copy(update={"gold_doc_ids": ["g-text", "nope"]})
    with pytest.raises(InputError, match="'nope'") as e:
        compose(bad, ScenarioSpec(kind="oracle"), store=store)
    assert e.value.field == "gold_doc_ids"


def test_shortfall_and_leaks_are_recorded(world):
    sample, store, miner = world
    prompt = compose(sample, ScenarioSpec(kind="adversarial", n_distractors=8, negative_modality="image"), miner=miner)
    assert prompt.metadata["mining"] == {
        "requested": 8,
        "found": 3,
        "shortfall": 5,
        "dropped_leaks": 0,
        "negatives": "curated",
        "from_curated": 0,
        "from_miner": 3,
        "filled": False,
    }
    prompt = compose(sample, ScenarioSpec(kind="adversarial", n_distractors=2, negative_modality="text"), miner=miner)
    assert prompt.metadata["mining"]["dropped_leaks"] == 1
    assert [c.document.id for c in prompt.contexts] == ["n-text-1", "n-text-2"]  # ranked by overlap


def test_a_miner_returning_gold_is_caught(world):
    sample, store, _ = world
    prompt = compose(
        sample, ScenarioSpec(kind="adversarial", n_distractors=2), miner=OverlapMiner(store, leak_gold=True)
    )
    assert all(c.document.id not in sample.gold_doc_ids for c in prompt.contexts)
    assert prompt.metadata["mining"]["dropped_gold"] == 1 and len(prompt.contexts) == 2


def test_token_budget_drops_negatives_first(world):
    sample, store, miner = world
    spec = ScenarioSpec(
        kind="realistic", n_distractors=3, negative_modality="text", positive_modality="text", max_context_tokens=31
    )
    prompt = compose(sample, spec, miner=miner)
    budget = prompt.metadata["budget"]
    # gold passage: 2 title + 14 text words = 16; negatives ranked n-text-1 (15), n-text-2 (10), n-text-3 (8):
    # 49 -> drop the last-ranked (41) -> drop the next (31 fits)
    assert [c.document.id for c in prompt.contexts if c.role == "gold"] == ["g-text"]
    assert [c.document.id for c in prompt.contexts if c.role == "negative"] == ["n-text-1"]
    assert [d["doc_id"] for d in budget["dropped"]] == ["n-text-3", "n-text-2"]
    assert all(d["role"] == "negative" and d["reason"] == "max_context_tokens" for d in budget["dropped"])
    assert budget["context_tokens"] == 31 and not budget["over_budget"]
    assert prompt.metadata["mining"]["found"] == 3  # mining is reported before the budget


def test_image_budget_keeps_text_and_gold(world):
    sample, store, miner = world
    spec = ScenarioSpec(kind="realistic", n_distractors=6, negative_modality="any", max_images=3)
    prompt = compose(sample, spec, miner=miner)
    imgs = [c for c in prompt.contexts if c.document.modality != "text"]
    assert len(_user_images(prompt)) == 3 == 1 + len(imgs)
    assert {c.document.id for c in prompt.contexts if c.role == "gold"} == {"g-text", "g-img", "g-mm"}
    assert all(c.document.modality == "text" for c in prompt.contexts if c.role == "negative")
    assert all(d["role"] == "negative" and d["modality"] != "text" for d in prompt.metadata["budget"]["dropped"])


def test_budget_drops_gold_only_when_no_negative_is_left(world):
    sample, store, miner = world
    prompt = compose(
        sample, ScenarioSpec(kind="realistic", n_distractors=1, negative_modality="image", max_images=2), miner=miner
    )
    dropped = prompt.metadata["budget"]["dropped"]
    assert [d["role"] for d in dropped] == ["negative", "gold"] and dropped[1]["doc_id"] == "g-mm"
    over = compose(sample, ScenarioSpec(kind="oracle", max_images=0), store=store)
    assert over.metadata["budget"]["over_budget"] is True  # the query image alone exceeds it


def test_mcq_deflection_sample_lists_options(world):
    _, store, miner = world
    sample = mcq_sample()
    prompt = compose(sample, ScenarioSpec(kind="oracle", positive_modality="text"), store=store)
    assert "A. 1887\nB. 1902\nC. 1850" in prompt.messages[-1].text()
    assert prompt.label == "A" and [c.letter for c in prompt.choices] == ["A", "B", "C"]


def test_user_template_override(tmp_path, world):
    sample, store, miner = world
    path = tmp_path / "mine.yaml"
    path.write_text('id: my-terse\nversion: 3\nquestion: "Q: {question}"\ntext: "One word, or {deflection_phrase}"\n')
    prompt = compose(sample, ScenarioSpec(kind="parametric", template=str(path)))
    assert [m.role for m in prompt.messages] == ["user"]
    assert prompt.messages[0].text().endswith(f"Q: {sample.question}\nOne word, or {DEFLECTION_PHRASE}")
    assert (prompt.template_id, prompt.template_version) == ("my-terse", "3")
    assert prompt.template_hash == load_template(path).sha256


@pytest.mark.parametrize(
    "content,field,line",
    [
        ('id: t\nversion: "1"\ntext: "Reply {deflection}"\n', "text", None),
        ('id: t\nversion: "1"\nquestion: "no placeholder"\n', "question", None),
        ('id: t\nversion: "1"\ntext: [unclosed\n', None, 4),
        ("id: t\ntext: hi\n", "version", None),
    ],
)
def test_bad_templates_are_named(tmp_path, content, field, line):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(InputError) as e:
        load_template(path)
    assert e.value.path == str(path) and e.value.field == field
    if line is not None:
        assert e.value.line == line


def test_template_hash_tracks_wording_not_description():
    tpl = get_template("strictness-severe")
    assert tpl.model_copy(update={"description": "other words"}).sha256 == tpl.sha256
    assert tpl.model_copy(update={"text": tpl.text + "!"}).sha256 != tpl.sha256


def test_knowhal_open_and_relation(world):
    sample, _, _ = world
    open_q = sample.model_copy(
        update={
            "question": "What is the name of this lighthouse?",
            "metadata": {"dimension": "E", "polarity": "positive"},
        }
    )
    p = compose(open_q, ScenarioSpec(kind="knowhal"))
    assert p.template_id == "knowhal-open" and p.contexts == [] and p.metadata["format"] == "open"
    assert p.messages[0].content[0].type == "image"
    assert p.messages[0].text() == "What is the name of this lighthouse?\n" + get_template("knowhal-open").text
    rel = open_q.model_copy(
        update={
            "question": "Where is the boat relative to the tower?",
            "choices": [Choice(letter="A", text="left of it"), Choice(letter="B", text="behind it")],
            "label": "B",
        }
    )
    p = compose(rel, ScenarioSpec(kind="knowhal", strictness="moderate"))
    assert p.template_id == "knowhal-relation-mcq+strictness-moderate"
    assert "A. left of it\nB. behind it" in p.messages[0].text() and DEFLECTION_PHRASE in p.messages[0].text()
    assert p.label == "B" and len(p.metadata["templates"]) == 2


def test_spec_canonical_form():
    assert ScenarioSpec(kind="oracle", n_distractors=5).id == ScenarioSpec(kind="oracle", n_distractors=0).id
    assert ScenarioSpec(kind="adversarial", positive_modality="image").id == ScenarioSpec(kind="adversarial").id
    assert ScenarioSpec(kind="realistic", n_distractors=2).id != ScenarioSpec(kind="realistic", n_distractors=4).id
    # model_copy skips validators; the id is canonicalised all the same
    copied = ScenarioSpec(kind="realistic", n_distractors=4, gold_position="last").model_copy(update={"kind": "oracle"})
    assert copied.id == ScenarioSpec(kind="oracle").id
    with pytest.raises(ValueError, match="stress"):
        ScenarioSpec(kind="humblebench", stress=5)
    with pytest.raises(ValueError, match="nota_onli"):
        ScenarioSpec(kind="humblebench", stress=["nota_onli"])
    with pytest.raises(ValueError, match="n_distractors >= 1"):
        ScenarioSpec(kind="adversarial", n_distractors=0)
    with pytest.raises(ValueError, match="gold_position"):
        ScenarioSpec(kind="realistic", gold_position=-1)
    assert isinstance(Sample(id="x", benchmark="b", question="q").question_id, str)


def test_curated_negatives_are_the_negatives_with_a_counted_flagged_fill(world):
    sample, store, miner = world
    curated = ["n-text-3", "n-img-3", "n-mm-3"]  # the least similar ones: the miner would never pick them
    s = sample.model_copy(update={"metadata": {"negative_doc_ids": curated}})
    for kind in ("realistic", "adversarial"):
        for seed in range(4):
            p = compose(s, ScenarioSpec(kind=kind, n_distractors=2, negative_modality="any", seed=seed), miner=miner)
            negs = [c.document.id for c in p.contexts if c.role == "negative"]
            assert len(negs) == 2 and set(negs) <= set(curated) and len({store.get(d).modality for d in negs}) == 2
            assert p.metadata["mining"]["from_curated"] == 2 and p.metadata["mining"]["from_miner"] == 0
    calls = miner.calls
    p = compose(s, ScenarioSpec(kind="adversarial", n_distractors=5, negative_modality="any"), miner=miner)
    negs = [c.document.id for c in p.contexts]
    assert set(negs[:3]) == set(curated) and not set(negs[3:]) & set(curated) and miner.calls == calls + 1
    assert {k: p.metadata["mining"][k] for k in ("from_curated", "from_miner", "filled", "shortfall")} == {
        "from_curated": 3,
        "from_miner": 2,
        "filled": True,
        "shortfall": 0,
    }
    # a modality filter applies to curated negatives too; with no miner the shortfall is recorded
    p = compose(s, ScenarioSpec(kind="adversarial", n_distractors=2, negative_modality="image"), store=store)
    assert [c.document.id for c in p.contexts] == ["n-img-3"] and p.metadata["mining"]["shortfall"] == 1
    # regenerate: always mined, the curated ones ignored
    p = compose(s, ScenarioSpec(kind="adversarial", n_distractors=2, negatives="regenerate"), miner=miner)
    assert not {c.document.id for c in p.contexts} & set(curated) and p.metadata["mining"]["from_curated"] == 0
    assert ScenarioSpec(kind="oracle", negatives="regenerate").id == ScenarioSpec(kind="oracle").id


def test_paper_preset_and_the_visual_positive_row(world):
    from mmrag.scenarios import load_sweep

    specs = load_sweep("deflectionbench-paper").expand()
    assert [s.kind for s in specs] == ["parametric", "oracle", "realistic", "adversarial"]
    assert all(s.strictness == "moderate" for s in specs)
    assert [(s.n_distractors, s.negative_modality, s.negatives) for s in specs[2:]] == [(2, "any", "curated")] * 2
    sample, store, miner = world
    # Table 5's "visual positive" row: gold that carries an image, image+caption included
    p = compose(sample, ScenarioSpec(kind="oracle", positive_modality="image"), miner=miner)
    assert [c.document.id for c in p.contexts] == ["g-img", "g-mm"]
    mm_only = sample.model_copy(update={"gold_doc_ids": ["g-text", "g-mm"]})
    assert applicable(mm_only, ScenarioSpec(kind="realistic", positive_modality="image"), store) is None
    assert [
        c.document.id
        for c in compose(mm_only, ScenarioSpec(kind="oracle", positive_modality="text"), miner=miner).contexts
    ] == ["g-text"]
