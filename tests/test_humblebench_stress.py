"""HumbleBench stress settings, built as the official code builds them, with the data's quirks."""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest
from PIL import Image

from mmrag.scenarios import ScenarioNotApplicable, ScenarioSpec, compose, get_template, noise_image, parse_question
from mmrag.schema import Choice, ImageRef, Sample, is_nota_text, sha256_file

OPTS = ["a red bicycle", "a wooden bench", "a street lamp", "a parked truck", "None of the above"]
SUFFIX = get_template("humblebench-suffix").text


@pytest.fixture(scope="module")
def photo(tmp_path_factory):
    path = tmp_path_factory.mktemp("hb") / "photo.png"
    Image.fromarray(np.full((20, 30, 3), 120, dtype=np.uint8)).save(path)
    return path


def loader_sample(photo, qid=7, label="B", opts=OPTS, sep=". ") -> Sample:
    """As mmrag's loader stores an item: stem in question, options in choices, raw text kept."""
    stem = "What is next to the wall?"
    raw = "\n".join([stem] + [f"{l}{sep}{t}" for l, t in zip("ABCDE", opts)])
    return Sample(
        id=f"humblebench-{qid}",
        benchmark="humblebench",
        question_id=str(qid),
        question=stem,
        images=[ImageRef(path=str(photo))],
        label=label,
        choices=[Choice(letter=l, text=t, is_nota=is_nota_text(t)) for l, t in zip("ABCDE", opts)],
        metadata={"type": "Object", "raw_question": raw},
    )


def raw_sample(photo, qid=7, label="B", opts=OPTS, sep=". ") -> Sample:
    """An item whose options live only in the question text (no choices)."""
    s = loader_sample(photo, qid, label, opts, sep)
    return s.model_copy(update={"question": s.metadata["raw_question"], "choices": [], "metadata": {}})


def spec(*stress, **kw) -> ScenarioSpec:
    return ScenarioSpec(kind="humblebench", stress=stress, **kw)


def body(prompt) -> str:
    assert [m.role for m in prompt.messages] == ["user"]
    return prompt.messages[0].text()


@pytest.mark.parametrize("make", [loader_sample, raw_sample])
def test_common_setting_is_question_then_suffix(photo, make):
    s = make(photo)
    p = compose(s, spec())
    raw = "\n".join(["What is next to the wall?"] + [f"{l}. {t}" for l, t in zip("ABCDE", OPTS)])
    assert body(p) == raw + "\n" + SUFFIX
    assert p.messages[0].content[0].type == "image" and p.messages[0].content[0].image.path == str(photo)
    assert p.label == "B" and [c.letter for c in p.choices] == list("ABCDE") and p.metadata["nota_letter"] == "E"
    assert p.template_id == "humblebench-suffix" and p.scenario_id.startswith("humblebench-common-")


def test_common_setting_keeps_a_dot_text_verbatim(photo):
    p = compose(loader_sample(photo, sep="."), spec())
    assert "\nA.a red bicycle\nB.a wooden bench" in body(p)  # sent as published
    assert p.choices[0].text == "a red bicycle"


def test_question_still_holding_options_is_not_duplicated(photo):
    s = loader_sample(photo)
    s = s.model_copy(update={"question": s.metadata["raw_question"]})
    assert body(compose(s, spec())).count("A. a red bicycle") == 1


def test_noise_image_properties(photo, tmp_path, monkeypatch):
    monkeypatch.setenv("MMRAG_HOME", str(tmp_path))
    a = compose(loader_sample(photo, qid=1, label="A"), spec("noise_image"))
    b = compose(loader_sample(photo, qid=2, label="C"), spec("noise_image"))
    ia, ib = a.images(), b.images()
    assert len(ia) == 1 and ia == ib  # one image for every question
    assert ia[0].path == str(tmp_path / "humblebench" / "noise-3720.png")
    with Image.open(ia[0].path) as im:
        assert im.mode == "L" and im.size == (256, 256)
        px = np.asarray(im)
    assert px.dtype == np.uint8 and px.min() == 0 and px.max() == 255
    assert abs(px.mean() - 127.5) < 2.0 and len(np.unique(px)) == 256  # uniform 0..255
    assert np.array_equal(px, np.random.RandomState(3720).randint(0, 256, (256, 256), dtype=np.uint8))
    assert ia[0].sha256 == sha256_file(ia[0].path)
    assert (a.label, b.label) == ("A", "C") and body(a) == body(compose(loader_sample(photo, 1, "A"), spec()))
    other = compose(loader_sample(photo), spec("noise_image", noise_seed=5)).images()[0]
    assert other.sha256 != ia[0].sha256 and other.path.endswith("noise-5.png")


def test_noise_image_cache_is_repaired(tmp_path):
    ref = noise_image(11, home=tmp_path)
    good = ref.sha256
    (tmp_path / "humblebench" / "noise-11.png").write_bytes(b"corrupt")
    from mmrag.scenarios import humblebench as hb

    hb._written.clear()
    assert noise_image(11, home=tmp_path).sha256 == good == sha256_file(ref.path)


@pytest.mark.parametrize("make", [loader_sample, raw_sample])
def test_nota_only_removes_gold_without_renumbering(photo, make):
    p = compose(make(photo, label="B"), spec("nota_only"))
    text = body(p)
    assert "B. a wooden bench" not in text and "\nB." not in text
    assert "\nA. a red bicycle\nC. a street lamp\nD. a parked truck\nE. None of the above\n" in text
    assert p.label == "E" and [c.letter for c in p.choices] == list("ACDE")
    assert p.metadata["original_label"] == "B"


def test_nota_only_keeps_an_item_already_nota(photo):
    p = compose(loader_sample(photo, label="E"), spec("nota_only"))
    assert [c.letter for c in p.choices] == list("ABCDE") and p.label == "E"
    assert body(p) == body(compose(loader_sample(photo, label="E"), spec()))


def test_nota_only_with_none_of_above_and_a_dot_text(photo):
    opts = OPTS[:4] + ["None of above"]
    p = compose(raw_sample(photo, label="A", opts=opts, sep="."), spec("nota_only"))
    assert p.label == "E" and [c.letter for c in p.choices] == list("BCDE")
    assert "\nB. a wooden bench" in body(p) and "red bicycle" not in body(p)  # rebuilt as "X. text"


def test_nota_found_by_text_not_letter(photo):
    opts = ["a red bicycle", "None of the above", "a street lamp", "a parked truck", "a bench"]
    p = compose(loader_sample(photo, label="D", opts=opts), spec("nota_only"))
    assert p.label == "B" and [c.letter for c in p.choices] == list("ABCE")
    no_nota = loader_sample(photo, label="A", opts=["w", "x", "y", "z", "v"])
    with pytest.raises(ScenarioNotApplicable, match="None of the above"):
        compose(no_nota, spec("nota_only"))


@pytest.mark.parametrize("qid", [0, 7, 123, 22830])
def test_shuffle_matches_official_permutation(photo, qid):
    s = loader_sample(photo, qid=qid, label="B")
    p = compose(s, spec("shuffle_options"))
    perm = list("ABCDE")
    random.Random(42 + qid).shuffle(perm)
    old = dict(zip("ABCDE", OPTS))
    assert [c.text for c in p.choices] == [old[o] for o in perm]
    assert p.label == "ABCDE"[perm.index("B")]
    assert next(c for c in p.choices if c.letter == p.label).text == "a wooden bench"
    nota = "ABCDE"[perm.index("E")]
    assert p.metadata["nota_letter"] == nota and next(c for c in p.choices if c.letter == nota).is_nota
    assert "\n".join(f"{c.letter}. {c.text}" for c in p.choices) in body(p)
    assert p.metadata["shuffle"]["permutation"] == "".join(perm)


def test_shuffle_seed_stability(photo):
    s = loader_sample(photo, qid=99)
    a, b = compose(s, spec("shuffle_options")), compose(copy.deepcopy(s), spec("shuffle_options"))
    assert a.choices == b.choices and a.id == b.id
    orders = {tuple(c.text for c in compose(s, spec("shuffle_options", shuffle_seed=k)).choices) for k in range(6)}
    assert len(orders) > 1
    assert spec("shuffle_options", shuffle_seed=1).id != spec("shuffle_options").id
    assert spec("nota_only", shuffle_seed=1).id == spec("nota_only").id  # the seed only matters when shuffling


def test_shuffle_leaves_items_without_five_options(photo):
    s = loader_sample(photo, label="A")
    s = s.model_copy(update={"choices": s.choices[:4], "metadata": {}})
    p = compose(s, spec("shuffle_options"))
    assert [c.text for c in p.choices] == OPTS[:4] and p.label == "A" and "shuffle_skipped" in p.metadata


def test_shuffle_with_non_numeric_question_id(photo):
    s = loader_sample(photo).model_copy(update={"question_id": "hb-x"})
    p = compose(s, spec("shuffle_options"))
    assert p.metadata["shuffle"]["seeded_from"] == "hash"
    assert p.choices == compose(s, spec("shuffle_options")).choices


def test_shuffle_then_nota_only_tracks_nota_text(photo):
    for qid in range(6):
        p = compose(loader_sample(photo, qid=qid, label="C"), spec("shuffle_options", "nota_only"))
        nota = next(c for c in p.choices if c.is_nota)
        assert p.label == nota.letter and len(p.choices) == 4
        assert "a street lamp" not in [c.text for c in p.choices]


@pytest.mark.parametrize(
    "stress,tpl",
    [
        ("cautious_prompt", "humblebench-cautious-prefix"),
        ("forced_grounding_prompt", "humblebench-forced-grounding-prefix"),
    ],
)
def test_prefixes(photo, stress, tpl):
    s = loader_sample(photo)
    p = compose(s, spec(stress))
    prefix = get_template(tpl).text
    assert body(p) == f"{prefix}\n\n{s.metadata['raw_question']}\n{SUFFIX}"
    assert p.template_id == f"{tpl}+humblebench-suffix" and len(p.metadata["templates"]) == 2
    assert "None of the above" in prefix and p.label == "B"


def test_noise_plus_forced_grounding(photo, tmp_path, monkeypatch):
    monkeypatch.setenv("MMRAG_HOME", str(tmp_path))
    p = compose(loader_sample(photo), spec("forced_grounding_prompt", "noise_image"))
    assert p.scenario["stress"] == ["noise_image", "forced_grounding_prompt"]
    assert p.scenario_id.startswith("humblebench-noise_image__forced_grounding_prompt-")
    assert p.images()[0].path.endswith("noise-3720.png") and p.label == "B"
    assert body(p).startswith(get_template("humblebench-forced-grounding-prefix").text + "\n\nWhat is next")


def test_prefix_applies_after_shuffle(photo):
    p = compose(loader_sample(photo, qid=3), spec("shuffle_options", "cautious_prompt"))
    text = body(p)
    assert text.index("\n\nWhat is next") < text.index(f"A. {p.choices[0].text}")


def test_stress_validation_and_canonical_order():
    with pytest.raises(ValueError, match="noise_image cannot be combined with nota_only"):
        spec("noise_image", "nota_only")
    with pytest.raises(ValueError, match="cautious_prompt cannot be combined"):
        spec("cautious_prompt", "forced_grounding_prompt")
    with pytest.raises(ValueError, match="only to kind 'humblebench'"):
        ScenarioSpec(kind="knowhal", stress=("noise_image",))
    with pytest.raises(ValueError, match="strictness does not apply"):
        spec(strictness="severe")
    assert spec("forced_grounding_prompt", "noise_image").id == spec("noise_image", "forced_grounding_prompt").id


def test_every_stress_setting_never_mutates(photo, tmp_path, monkeypatch):
    monkeypatch.setenv("MMRAG_HOME", str(tmp_path))
    settings = [
        (),
        ("noise_image",),
        ("nota_only",),
        ("shuffle_options",),
        ("cautious_prompt",),
        ("forced_grounding_prompt",),
        ("noise_image", "forced_grounding_prompt"),
        ("shuffle_options", "nota_only", "cautious_prompt"),
    ]
    for make in (loader_sample, raw_sample):
        s = make(photo, qid=5, label="D")
        before = copy.deepcopy(s)
        for st in settings:
            p = compose(s, spec(*st))
            assert p.label in {c.letter for c in p.choices}
        assert s == before


def test_parse_question_quirks():
    q = parse_question("Which?\nA.one\nB. two\nC.three\nD. four\nE. None of above\nAnswer carefully.")
    assert q.options == [("A", "one"), ("B", "two"), ("C", "three"), ("D", "four"), ("E", "None of above")]
    assert q.stem_lines == ["Which?"] and q.trailing_lines == ["Answer carefully."]
    assert parse_question("no options here") is None


def test_with_the_real_loader(photo, tmp_path):
    """Records in the published format, read by mmrag's HumbleBench loader, then composed."""
    from mmrag.benchmarks.humblebench import HumbleBenchBenchmark

    recs = [
        {
            "question_id": 4,
            "question": "What is on the table?\nA.a cup\nB.a plate\nC.a fork\nD.a knife\nE.None of above",
            "label": "C",
            "type": "Object",
            "file_name": str(photo),
        },
        {
            "question_id": 5,
            "question": "What color is the car?\nA. red\nB. blue\nC. green\nD. white\nE. None of the above",
            "label": "E",
            "type": "Attribute",
            "file_name": str(photo),
        },
    ]
    path = tmp_path / "hb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    samples = list(HumbleBenchBenchmark(source=path).samples())
    common = compose(samples[0], spec())
    assert body(common) == recs[0]["question"] + "\n" + SUFFIX
    nota = compose(samples[0], spec("nota_only"))
    assert nota.label == "E" and "C." not in body(nota) and "\nD. a knife\nE. None of above" in body(nota)
    kept = compose(samples[1], spec("nota_only"))
    assert len(kept.choices) == 5 and kept.label == "E"
    shuf = compose(samples[0], spec("shuffle_options"))
    perm = list("ABCDE")
    random.Random(42 + 4).shuffle(perm)
    assert shuf.label == "ABCDE"[perm.index("C")] and shuf.metadata["nota_letter"] == "ABCDE"[perm.index("E")]


def test_official_prompt_strings_verbatim(photo):
    """HumbleBench's own strings, character for character (benchmarks.md A.2b): the typo
    "optioins", curly quotes, and the prefix's trailing newline before the "\\n\\n" join."""
    caut = get_template("humblebench-cautious-prefix").text
    assert caut.startswith(
        "You are answering a visual multiple-choice question.\n\nBe highly cautious. It is better "
        "to choose E (\u201cNone of the above\u201d) than to select A-D"
    )
    assert "any of optioins, choose \u201cNone of the above\u201d.\nAvoid overconfident" in caut
    assert caut.endswith("Plausible options are not necessarily correct.\n")
    forced = get_template("humblebench-forced-grounding-prefix").text
    assert "If the image does not clearly support any of options, select \u201cNone of the above\u201d.\n" in forced
    assert forced.endswith("An option should be chosen only when it is directly grounded in the image.\n")
    assert SUFFIX == (
        "Please respond with only the letter of the correct choice (A, B, C, D, or E). "
        "Do not include the option text or any other explanation."
    )
    s = loader_sample(photo)
    text = body(compose(s, spec("cautious_prompt")))
    assert text == caut + "\n\n" + s.metadata["raw_question"] + "\n" + SUFFIX and "correct.\n\n\nWhat is" in text
    p = compose(s, spec("cautious_prompt"))
    assert [t.get("source") for t in p.metadata["templates"]] == [
        "HumbleBench main.py @ 6d33ea3",
        "HumbleBench/utils/constant.py @ 0a34e68 (NOT_REASONING_POST_PROMPT)",
    ]
