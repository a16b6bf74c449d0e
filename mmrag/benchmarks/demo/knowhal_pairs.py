"""KnowHal-style paired questions over the demo entities' emblem views.

KnowHal (arXiv 2608.03782) asks, for every entity image, one positive and one negative
(false-premise) question in each of four dimensions: Entity, Attribute, Relation (multiple choice)
and Knowledge.  Negatives are built by four strategies: attribute variant, object substitution,
spatial relation, action fabrication.  Here the image is an entity's emblem hanging on a wall, whose
drawn attributes are known exactly, so positives are answerable by looking and every negative's
premise is verifiably false:

* Entity: which symbol is inside the emblem / negative: ask about an absent symbol (object substitution).
* Attribute: the symbol's colour / negative: presuppose another colour (attribute variant).
* Relation (A-D): where the symbol sits inside the outline / negative: presuppose another place
  (spatial relation), also multiple choice: one option rejects the premise (the gold), three go
  along with it.  The paper scores Relation by direct option matching in both polarities, so a
  negative Relation question needs options too; they are drawn from a generator of their own so
  that the rest of the world stays as it was.
* Knowledge: the geometric name of the outline (knowing that six sides make a hexagon) / negative:
  a person holding the emblem (action fabrication) on even items, a wrong polygon (attribute variant)
  on odd items.

``domain`` follows the entity's kind (Nations, Cities, Guilds); ``category`` is the outline shape.
"""

from __future__ import annotations

import random
from typing import Any

from mmrag.benchmarks.demo.draw import EMBLEM_SHAPES, EMBLEM_SYMBOLS, PALETTE, SYMBOL_POSITIONS
from mmrag.benchmarks.demo.questions import image_path

DOMAINS = {"country": "Nations", "city": "Cities", "guild": "Guilds"}


def placed(position: str) -> str:
    """ "in the centre", "in the upper part", "on the left side"..."""
    return f"{'on' if position.endswith('side') else 'in'} the {position}"


#: answers to a Relation negative that go along with its false premise (the first one is the
#: simulated VLM's own going-along reply, see :mod:`mmrag.models.sim_knowhal`)
RELATION_PREMISE_ANSWERS = (
    "Placing it there balances the design.",
    "It leaves room for the outline.",
    "It follows the emblem's oldest pattern.",
    "It keeps the symbol away from the frame.",
)

SIDES = {"triangle": 3, "square": 4, "diamond": 4, "pentagon": 5, "hexagon": 6, "octagon": 8}


def _pair(e: dict[str, Any], dim: str, pos: dict[str, Any], neg: dict[str, Any]) -> list[dict[str, Any]]:
    pair_id = f"{e['id']}-{dim}"
    common = {
        "pair_id": pair_id,
        "entity_id": e["id"],
        "image": image_path(e["id"], "emblem_view"),
        "domain": DOMAINS[e["kind"]],
        "category": f"{e['emblem']['shape']} emblem",
        "dimension": dim,
    }
    p = {"id": f"{pair_id}-pos", **common, "polarity": "positive", **pos}
    n = {"id": f"{pair_id}-neg", **common, "polarity": "negative", **neg}
    return [p, n]


def knowhal_records(entities: list[dict[str, Any]], seed: int, every: int = 5) -> list[dict[str, Any]]:
    """Four pairs (E, A, R, K) for every ``every``-th entity (60 entities, 240 pairs by default)."""
    rng = random.Random(f"mmrag-demo:{seed}:knowhal")
    rows: list[dict[str, Any]] = []
    for j, e in enumerate(entities[::every]):
        em = e["emblem"]
        sym, col, place, shape = em["symbol"], em["symbol_colour"], em["symbol_position"], em["shape"]
        # Entity: what symbol is there / an absent symbol presupposed
        absent = rng.choice([s for s in EMBLEM_SYMBOLS if s != sym])
        rows += _pair(
            e,
            "E",
            {"question": "What symbol is drawn inside the emblem in this image?", "answers": [sym, f"a {sym}"]},
            {
                "question": f"What colour is the {absent} drawn inside the emblem in this image?",
                "answers": [f"There is no {absent} in the emblem; it shows a {sym}."],
                "false_premise": f"The emblem shows a {sym}, not a {absent}.",
                "strategy": "object substitution",
            },
        )
        # Attribute: the symbol's colour / a wrong colour presupposed
        wrong = rng.choice([c for c in PALETTE if c not in (col, em["fill"])])
        rows += _pair(
            e,
            "A",
            {"question": f"What colour is the {sym} inside the emblem in this image?", "answers": [col]},
            {
                "question": f"Why is the {wrong} {sym} inside the emblem drawn so small?",
                "answers": [f"The {sym} is {col}, not {wrong}."],
                "false_premise": f"The {sym} is {col}, not {wrong}.",
                "strategy": "attribute variant",
            },
        )
        # Relation (multiple choice): where the symbol sits / another place presupposed
        places = [p for p in sorted(SYMBOL_POSITIONS) if p != place]
        opts = rng.sample(places, 3)
        k = rng.randrange(4)
        opts.insert(k, place)
        letters = "ABCD"
        other = rng.choice(places)
        reject = f"The {sym} is {placed(place)} of the emblem, not {placed(other)}."
        nrng = random.Random(f"mmrag-demo:{seed}:knowhal:{e['id']}:relation-negative")
        neg_opts = [reject, RELATION_PREMISE_ANSWERS[0], *nrng.sample(RELATION_PREMISE_ANSWERS[1:], 2)]
        nrng.shuffle(neg_opts)
        rows += _pair(
            e,
            "R",
            {
                "question": f"Where is the {sym} placed within the emblem in this image?",
                "options": {letters[i]: placed(o).capitalize() for i, o in enumerate(opts)},
                "label": letters[k],
                "answers": [placed(place).capitalize()],
            },
            {
                "question": f"Why is the {sym} placed {placed(other)} of the emblem in this image?",
                "options": {letters[i]: o for i, o in enumerate(neg_opts)},
                "label": letters[neg_opts.index(reject)],
                "answers": [reject],
                "false_premise": f"The {sym} is {placed(place)} of the emblem, not {placed(other)}.",
                "strategy": "spatial relation",
            },
        )
        # Knowledge: the geometric name of the outline / a fabricated action or a wrong polygon
        if j % 2 == 0:
            neg = {
                "question": "What is the person holding up this emblem wearing?",
                "answers": ["Nobody is holding the emblem; it hangs alone in a frame on a wall."],
                "false_premise": "No person is in the image; the emblem hangs alone in a frame.",
                "strategy": "action fabrication",
            }
        else:
            fake = rng.choice([s for s in EMBLEM_SHAPES if s not in (shape, "circle")])
            neg = {
                "question": f"How many sides does the {fake} that forms this emblem's outline have?",
                "answers": [f"The outline is a {shape}, not a {fake}."],
                "false_premise": f"The emblem's outline is a {shape}, not a {fake}.",
                "strategy": "attribute variant",
            }
        rows += _pair(
            e,
            "K",
            {
                "question": "What is the geometric name of the outline shape of this emblem?",
                "answers": [shape, f"a {shape}"] + (["rhombus", "a rhombus"] if shape == "diamond" else []),
                "metadata": {"sides": SIDES.get(shape)},
            },
            neg,
        )
    return rows
