"""The demo world: determinism, counts, speed, and the invariants every question relies on."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from PIL import Image

from mmrag.benchmarks import load_benchmark
from mmrag.benchmarks.demo import GENERATOR_VERSION, ensure_world, generate_world
from mmrag.benchmarks.demo.draw import PALETTE, charge_centre, symbol_centre
from mmrag.benchmarks.demo.knowhal_pairs import placed
from mmrag.schema import Document, Sample


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    home = tmp_path_factory.mktemp("mmrag_home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MMRAG_HOME", str(home))
        path = ensure_world(seed=0)
        yield {"path": path, "home": home}


def _read_jsonl(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def data(world):
    p = world["path"]
    return {
        "entities": {e["id"]: e for e in json.loads((p / "entities.json").read_text())},
        "scenes": json.loads((p / "scenes.json").read_text()),
        "kb": {d["id"]: d for d in _read_jsonl(p / "kb.jsonl")},
        "questions": _read_jsonl(p / "deflection.jsonl"),
        "knowhal": _read_jsonl(p / "knowhal.jsonl"),
        "hb": _read_jsonl(p / "humblebench" / "metadata.jsonl"),
    }


def test_world_location_and_counts(world, data):
    # (generation speed is a benchmark figure, perf/README.md, not a timed test)
    assert world["path"] == world["home"] / "demo" / f"world-v{GENERATOR_VERSION}-seed0"
    assert len(data["entities"]) >= 300
    assert len({q["question_id"] for q in data["questions"]}) >= 500
    assert len(data["hb"]) >= 300
    assert len({r["pair_id"] for r in data["knowhal"]}) >= 200
    per_entity = Counter(d["entity_id"] for d in data["kb"].values() if d["modality"] == "text")
    assert min(per_entity.values()) >= 3 and len(per_entity) == len(data["entities"])
    images = Counter(d["entity_id"] for d in data["kb"].values() if d["modality"] == "image")
    assert min(images.values()) >= 2
    assert all(d["entity_id"] for d in data["kb"].values())


def test_generation_is_byte_identical_and_seeded(world, tmp_path):
    again = tmp_path / "again"
    generate_world(0, again)
    first, second = _hashes(world["path"]), _hashes(again)
    assert first == second and len(first) > 1300
    other = tmp_path / "seed1"
    generate_world(1, other, n_entities=30, n_scenes=10)
    assert (other / "kb.jsonl").read_bytes() != (world["path"] / "kb.jsonl").read_bytes()


def test_manifest_lists_every_file_with_its_hash(world):
    manifest = json.loads((world["path"] / "MANIFEST.json").read_text())
    on_disk = {k: v for k, v in _hashes(world["path"]).items() if k != "MANIFEST.json"}
    assert manifest["files"] == on_disk


def test_ensure_world_reuses_complete_and_replaces_incomplete(world, tmp_path):
    before = (world["path"] / "kb.jsonl").stat().st_mtime_ns
    assert ensure_world(seed=0) == world["path"]
    assert (world["path"] / "kb.jsonl").stat().st_mtime_ns == before
    assert not [p for p in world["path"].parent.iterdir() if p.name.startswith(".")]  # no temp leftovers
    broken = tmp_path / "root" / f"world-v{GENERATOR_VERSION}-seed0"
    broken.mkdir(parents=True)
    (broken / "kb.jsonl").write_text("half")
    out = ensure_world(seed=0, root=tmp_path / "root")
    assert (out / "MANIFEST.json").is_file() and (out / "kb.jsonl").read_text() != "half"
    assert _hashes(out) == _hashes(world["path"])


def _colour_counts(img: Image.Image) -> Counter:
    return Counter({rgb: n for n, rgb in img.convert("RGB").getcolors(maxcolors=1 << 16)})


def _dominant_colour(img: Image.Image, ignore: set) -> tuple:
    return next(c for c, _ in _colour_counts(img).most_common() if c not in ignore)


def _visual_value(entity: dict, attr: str):
    part, key = attr.split(".")
    return entity[part][key]


def test_every_question_has_gold_documents_that_carry_the_answer(world, data):
    kb, ents = data["kb"], data["entities"]
    for q in data["questions"]:
        e = ents[q["entity_id"]]
        answers = [q["answer"], *q["aliases"]]
        golds = [kb[g["doc_id"]] for g in q["gold_contexts"]]  # KeyError = missing gold document
        for g, doc in zip(q["gold_contexts"], golds):
            assert doc["modality"] == g["modality"] and doc["entity_id"] == e["id"]
        meta = q["metadata"]
        if "text" in meta["needs"]:
            assert any(d["modality"] == "text" and q["answer"] in d["text"] for d in golds), q["sample_id"]
        if meta["answer_kind"] == "visual":
            attr = meta["visual_attribute"]
            assert _visual_value(e, attr) == q["answer"]
            img = Image.open(world["path"] / meta["answer_image"]).convert("RGB")
            gold_image = next(d for d in golds if d["modality"] == "image")
            assert gold_image["image"] == meta["answer_image"]
            if attr == "emblem.fill":  # the emblem's most frequent colour is the answer's RGB
                assert _dominant_colour(img, {(236, 230, 214)}) == PALETTE[q["answer"]]
            elif attr == "flag.charge_colour":
                flag_rgb = {PALETTE[c] for c in e["flag"]["colours"]}
                assert PALETTE[q["answer"]] not in flag_rgb
                assert _colour_counts(img)[PALETTE[q["answer"]]] >= 20
        if meta["entity_in_question"]:
            assert e["name"] in q["question"] and not q["query_images"]
        else:
            assert e["name"] not in q["question"] and q["query_images"]
            assert any(d["modality"] == "multimodal" and e["name"] in d["text"] for d in golds)
            for rel in q["query_images"]:
                assert (world["path"] / rel).is_file()
                assert rel not in {d.get("image") for d in kb.values()}  # query views are not in the KB
        for r in q["numeric_ranges"]:
            v = float(q["answer"].replace(",", ""))
            assert r[0] <= v <= r[1]
        for neg in q["negative_doc_ids"]:  # ready-made negatives never state the answer
            d = kb[neg]
            assert d["entity_id"] != e["id"]
            assert not any(a.lower() in d.get("text", "").lower() for a in answers)


def test_question_mix_covers_modalities_views_and_shared_questions(data):
    qs = data["questions"]
    mods = Counter(q["metadata"]["positive_modality"] for q in qs)
    assert mods["text"] >= 200 and mods["image"] >= 100 and mods["multimodal"] >= 200
    assert Counter(q["question_type"] for q in qs)["numerical"] > 10
    groups = defaultdict(list)
    for q in qs:
        groups[q["question_id"]].append(q)
    shared = [g for g in groups.values() if len(g) > 1]
    assert len(shared) >= 100
    for g in shared:
        assert len({q["question"] for q in g}) == 1 and len({tuple(q["query_images"]) for q in g}) == len(g)
    assert any("1" in a for q in qs if q["question_type"] == "time" for a in q["aliases"])


def test_look_alike_images_and_shared_text_templates(data):
    ents = list(data["entities"].values())
    flags = {json.dumps(e["flag"], sort_keys=True) for e in ents}
    emblems = {json.dumps(e["emblem"], sort_keys=True) for e in ents}
    assert len(flags) == len(ents) and len(emblems) == len(ents)  # each image identifies its entity
    fam = defaultdict(list)
    for e in ents:
        fam[e["family"]].append(e)
    assert all(len({m["flag"]["layout"] for m in f}) == 1 and len(f) >= 2 for f in fam.values())
    # Hard text negatives: removing the names and values of two entities' passages leaves the same text.
    kb = data["kb"]
    skeletons = defaultdict(set)
    for d in kb.values():
        if d["modality"] != "text":
            continue
        e = data["entities"][d["entity_id"]]
        t = d["text"].replace(e["name"], "<N>")
        for slot, v in e["facts"].items():
            t = t.replace(f"{v:,}" if slot in ("population", "members") else str(v), "<V>")
        skeletons[(e["kind"], d["metadata"]["section"])].add(t)
    assert all(len(s) == 1 for s in skeletons.values()), skeletons


_REL = {
    "to the left of": lambda a, b: a["col"] < b["col"],
    "to the right of": lambda a, b: a["col"] > b["col"],
    "above": lambda a, b: a["row"] < b["row"],
    "below": lambda a, b: a["row"] > b["row"],
    "bigger than": lambda a, b: (a["size"], b["size"]) == ("large", "small"),
    "smaller than": lambda a, b: (a["size"], b["size"]) == ("small", "large"),
}
_POS = {
    "top-left corner": (0, 0),
    "top centre": (0, 1),
    "top-right corner": (0, 2),
    "middle of the left side": (1, 0),
    "centre": (1, 1),
    "middle of the right side": (1, 2),
    "bottom-left corner": (2, 0),
    "bottom centre": (2, 1),
    "bottom-right corner": (2, 2),
}


def _truth(stem: str, option: str, objs: dict) -> bool:
    """An independent re-reading of each question family against the scene graph."""
    o = option.lower()
    if stem.startswith("Which of the following objects can be seen"):
        return o in objs
    if m := re.match(r"Which object is located in the (.+) of the image\?", stem):
        return o in objs and (objs[o]["row"], objs[o]["col"]) == _POS[m.group(1)]
    if m := re.match(r"What colour is the (\w+) in the image\?", stem):
        return objs[m.group(1)]["colour"] == o
    if m := re.match(r"Which object in the image is (\w+)\?", stem):
        return o in objs and objs[o]["colour"] == m.group(1)
    if stem == "Which of these objects is drawn large?":
        return o in objs and objs[o]["size"] == "large"
    if m := re.match(r"Which object is (.+) the (\w+)\?", stem):
        return o in objs and _REL[m.group(1)](objs[o], objs[m.group(2)])
    m = re.match(r"How is the (\w+) placed relative to the (\w+)\?", stem)
    assert m, stem
    rel = re.match(r"(.+) the (\w+)$", o).group(1)
    return _REL[rel](objs[m.group(1)], objs[m.group(2)])


def test_humblebench_items_are_true_to_their_scenes(world, data):
    hb = data["hb"]
    nota = sum(r["label"] == "E" for r in hb) / len(hb)
    assert 0.12 <= nota <= 0.18
    assert {r["type"] for r in hb} == {"Object", "Attribute", "Relation"}
    assert any("E. None of above" in r["question"] or "E.None of above" in r["question"] for r in hb)
    assert any(re.search(r"\nA\.\S", r["question"]) for r in hb)
    by_id = {r["question_id"]: r for r in hb}
    for sc in data["scenes"]:
        objs = {o["kind"]: o for o in sc["objects"]}
        img = Image.open(world["path"] / "humblebench" / sc["file_name"]).convert("RGB")
        step = 128 // 3
        for o in sc["objects"]:
            if o["kind"] != "ring":  # a ring's centre is its hole
                xy = (step // 2 + o["col"] * step + o["jx"], step // 2 + o["row"] * step + o["jy"])
                assert img.getpixel(xy) == PALETTE[o["colour"]], (sc["scene_id"], o)
        for q in sc["questions"]:
            truth = [_truth(q["stem"], opt, objs) for opt in q["options"][:4]]
            assert truth == q["option_truth"][:4], (q["stem"], q["options"])
            expected = "ABCD"[truth.index(True)] if any(truth) else "E"
            assert sum(truth) <= 1 and q["label"] == expected == by_id[q["question_id"]]["label"]


def test_knowhal_pairs_are_complete_and_true_to_the_image(world, data):
    ents = data["entities"]
    pairs = defaultdict(list)
    for r in data["knowhal"]:
        pairs[r["pair_id"]].append(r)
    assert {r["dimension"] for r in data["knowhal"]} == {"E", "A", "R", "K"}
    assert {r["strategy"] for r in data["knowhal"] if r["polarity"] == "negative"} == {
        "attribute variant",
        "object substitution",
        "spatial relation",
        "action fabrication",
    }
    for members in pairs.values():
        assert sorted(m["polarity"] for m in members) == ["negative", "positive"]
        pos = next(m for m in members if m["polarity"] == "positive")
        neg = next(m for m in members if m["polarity"] == "negative")
        assert (pos["entity_id"], pos["image"], pos["dimension"]) == (neg["entity_id"], neg["image"], neg["dimension"])
        em = ents[pos["entity_id"]]["emblem"]
        assert neg["false_premise"] and pos["domain"] and pos["category"]
        dim = pos["dimension"]
        if dim == "E":
            assert pos["answers"][0] == em["symbol"] and em["symbol"] not in neg["question"]
        elif dim == "A":
            assert pos["answers"] == [em["symbol_colour"]]
            img = Image.open(world["path"] / pos["image"]).convert("RGB")
            assert _colour_counts(img)[PALETTE[em["symbol_colour"]]] > 0
        elif dim == "R":
            assert pos["options"][pos["label"]] == placed(em["symbol_position"]).capitalize()
            assert em["symbol_position"] not in neg["question"]
        else:
            assert pos["answers"][0] == em["shape"]


def test_drawn_positions_match_the_recorded_attributes(world, data):
    for e in list(data["entities"].values())[:60]:
        emblem = Image.open(world["path"] / f"images/entities/{e['id']}_emblem.png").convert("RGB")
        if e["emblem"]["symbol"] not in ("ring", "cross"):
            assert emblem.getpixel(symbol_centre(e["emblem"])) == PALETTE[e["emblem"]["symbol_colour"]]
        if e["flag"]["charge"] not in ("none", "ring"):
            flag = Image.open(world["path"] / f"images/entities/{e['id']}_flag.png").convert("RGB")
            assert flag.getpixel(charge_centre(e["flag"])) == PALETTE[e["flag"]["charge_colour"]]


def test_demo_benchmarks_round_trip_through_the_schema(world):
    for name, kind in (("demo", "deflection"), ("demo-humblebench", "humblebench"), ("demo-knowhal", "knowhal")):
        b = load_benchmark(name)
        assert b.kind == kind
        samples = b.samples()
        assert samples and all(s.benchmark == name for s in samples)
        for s in samples:
            assert Sample.model_validate(json.loads(s.model_dump_json())) == s
        for d in b.documents():
            assert Document.model_validate(json.loads(d.model_dump_json())) == d
        assert len(b.fingerprint()) == 64
    demo = load_benchmark("demo")
    assert len(list(demo.documents())) >= 300 * 7
    mods = Counter(s.metadata["positive_modality"] for s in demo.samples())
    assert set(mods) == {"text", "image", "multimodal"}
    hb = load_benchmark("demo-humblebench").samples()
    assert all(s.nota_letter() == "E" for s in hb)
