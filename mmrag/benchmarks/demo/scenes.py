"""HumbleBench-style five-option questions over drawn scenes with an exactly known scene graph.

A scene is 3-5 glyphs (shapes and simple animal/house glyphs, each kind at most once) on a 3x3 grid,
each with a colour and a size.  Relations follow from the grid: *left of* means a smaller column,
*above* a smaller row, *bigger than* large versus small.  Each question lists four candidate options
(A-D) and "None of the above" as E, as HumbleBench does; every option's truth is evaluated against
the scene graph, and a question is kept only when exactly one option is true (gold = that letter) or,
for the NOTA items, none is (gold = E).  NOTA items are assigned up front so that their share is
exactly ``nota_share`` (HumbleBench's published share is 14.57 %).

Two quirks of the published data are reproduced on purpose, so loaders meet them here first: a few
NOTA options read "None of above", and a few questions write options as "A.text" without a space.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from mmrag.benchmarks.demo.draw import GRID, PALETTE, SCENE_KINDS

SCENE_COLOURS = [c for c in PALETTE if c != "white"]
POSITION_NAMES = {
    (0, 0): "top-left corner",
    (0, 1): "top centre",
    (0, 2): "top-right corner",
    (1, 0): "middle of the left side",
    (1, 1): "centre",
    (1, 2): "middle of the right side",
    (2, 0): "bottom-left corner",
    (2, 1): "bottom centre",
    (2, 2): "bottom-right corner",
}
RELATIONS = ("left of", "right of", "above", "below", "bigger than", "smaller than")
LETTERS = "ABCD"


def relation_holds(a: dict[str, Any], rel: str, b: dict[str, Any]) -> bool:
    """The scene graph's relations, defined by grid cells and size classes."""
    return {
        "left of": a["col"] < b["col"],
        "right of": a["col"] > b["col"],
        "above": a["row"] < b["row"],
        "below": a["row"] > b["row"],
        "bigger than": a["size"] == "large" and b["size"] == "small",
        "smaller than": a["size"] == "small" and b["size"] == "large",
    }[rel]


def make_scene(rng: random.Random, index: int) -> dict[str, Any]:
    n = rng.randint(3, 5)
    kinds = rng.sample(SCENE_KINDS, n)
    cells = rng.sample([(r, c) for r in range(GRID) for c in range(GRID)], n)
    objects = []
    for k, (r, c) in zip(kinds, cells):
        objects.append(
            {
                "kind": k,
                "colour": rng.choice(SCENE_COLOURS),
                "size": rng.choice(["small", "large"]),
                "row": r,
                "col": c,
                "jx": rng.randint(-3, 3),
                "jy": rng.randint(-3, 3),
            }
        )
    relations = [
        {"subject": a["kind"], "relation": rel, "object": b["kind"]}
        for a in objects
        for b in objects
        if a is not b
        for rel in RELATIONS
        if relation_holds(a, rel, b)
    ]
    return {
        "scene_id": f"scene_{index:04d}",
        "file_name": f"images/scene_{index:04d}.png",
        "objects": objects,
        "relations": relations,
    }


# A generator returns (stem, {option text: truth}) or None when the scene cannot host it.
Gen = Callable[[random.Random, dict[str, Any]], "tuple[str, dict[str, bool]]"]


def _by_kind(scene: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in scene["objects"]}


def _g_presence(rng, scene):
    present = _by_kind(scene)
    return (
        "Which of the following objects can be seen in the image?",
        {k.capitalize(): k in present for k in SCENE_KINDS},
    )


def _g_position(rng, scene):
    o = rng.choice(scene["objects"])
    cell = (o["row"], o["col"])
    at = {(x["row"], x["col"]): x["kind"] for x in scene["objects"]}
    return (
        f"Which object is located in the {POSITION_NAMES[cell]} of the image?",
        {k.capitalize(): at.get(cell) == k for k in SCENE_KINDS},
    )


def _g_colour(rng, scene):
    o = rng.choice(scene["objects"])
    return (f"What colour is the {o['kind']} in the image?", {c.capitalize(): o["colour"] == c for c in SCENE_COLOURS})


def _g_which_colour(rng, scene):
    c = rng.choice(scene["objects"])["colour"]
    objs = _by_kind(scene)
    return (
        f"Which object in the image is {c}?",
        {k.capitalize(): k in objs and objs[k]["colour"] == c for k in SCENE_KINDS},
    )


def _g_size(rng, scene):
    objs = _by_kind(scene)
    return (
        "Which of these objects is drawn large?",
        {k.capitalize(): k in objs and objs[k]["size"] == "large" for k in SCENE_KINDS},
    )


def _g_relation_object(rng, scene):
    b = rng.choice(scene["objects"])
    rel = rng.choice(RELATIONS)
    objs = _by_kind(scene)
    phrase = {
        "left of": "to the left of",
        "right of": "to the right of",
        "above": "above",
        "below": "below",
        "bigger than": "bigger than",
        "smaller than": "smaller than",
    }[rel]
    return (
        f"Which object is {phrase} the {b['kind']}?",
        {k.capitalize(): k in objs and relation_holds(objs[k], rel, b) for k in SCENE_KINDS if k != b["kind"]},
    )


def _g_relation_where(rng, scene):
    a, b = rng.sample(scene["objects"], 2)
    opts = {
        "To the left of": "left of",
        "To the right of": "right of",
        "Above": "above",
        "Below": "below",
        "Bigger than": "bigger than",
        "Smaller than": "smaller than",
    }
    return (
        f"How is the {a['kind']} placed relative to the {b['kind']}?",
        {f"{t} the {b['kind']}": relation_holds(a, r, b) for t, r in opts.items()},
    )


GENERATORS: dict[str, list[Gen]] = {
    "Object": [_g_presence, _g_position],
    "Attribute": [_g_colour, _g_which_colour, _g_size],
    "Relation": [_g_relation_object, _g_relation_where],
}


def _pick_options(rng: random.Random, truth: dict[str, bool], nota: bool) -> tuple[list[str], int | None] | None:
    true = [t for t, v in truth.items() if v]
    false = [t for t, v in truth.items() if not v]
    if nota:
        if len(false) < 4:
            return None
        return rng.sample(false, 4), None
    if not true or len(false) < 3:
        return None
    opts = rng.sample(false, 3)
    pos = rng.randrange(4)
    opts.insert(pos, rng.choice(true))
    return opts, pos


def make_question(
    rng: random.Random, scene: dict[str, Any], qtype: str, nota: bool, nota_text: str, no_space: bool
) -> dict[str, Any]:
    """One five-option question of ``qtype`` over ``scene`` (NOTA correct iff ``nota``)."""
    gens = list(GENERATORS[qtype])
    for _ in range(40):
        gen = rng.choice(gens)
        stem, truth = gen(rng, scene)
        picked = _pick_options(rng, truth, nota)
        if picked is None:
            continue
        opts, pos = picked
        sep = "." if no_space else ". "
        lines = [f"{LETTERS[i]}{sep}{t}" for i, t in enumerate(opts)] + [f"E{sep}{nota_text}"]
        return {
            "stem": stem,
            "options": opts + [nota_text],
            "option_truth": [truth[t] for t in opts] + [nota],
            "label": "E" if pos is None else LETTERS[pos],
            "type": qtype,
            "generator": gen.__name__[3:],
            "question": stem + "\n" + "\n".join(lines),
        }
    raise RuntimeError(f"scene {scene['scene_id']} cannot host a {qtype} question")  # pragma: no cover


def humblebench_items(seed: int, n_scenes: int = 120, nota_share: float = 0.15) -> tuple[list[dict], list[dict]]:
    """``(scenes, questions)``: one Object, one Attribute and one Relation question per scene."""
    rng = random.Random(f"mmrag-demo:{seed}:scenes")
    scenes = [make_scene(rng, i) for i in range(n_scenes)]
    n_q = 3 * n_scenes
    nota_flags = [True] * round(nota_share * n_q) + [False] * (n_q - round(nota_share * n_q))
    rng.shuffle(nota_flags)
    questions = []
    qid = 0
    for scene in scenes:
        types = ["Object", "Attribute", "Relation"]
        rng.shuffle(types)
        for qtype in types:
            nota_text = "None of above" if rng.random() < 0.06 else "None of the above"
            no_space = rng.random() < 0.04
            q = make_question(rng, scene, qtype, nota_flags[qid], nota_text, no_space)
            qid += 1
            q.update(question_id=qid, scene_id=scene["scene_id"], file_name=scene["file_name"])
            questions.append(q)
    return scenes, questions
