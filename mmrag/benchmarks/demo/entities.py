"""The demo world's entities: invented names, invented facts, and the visual attributes drawn.

Facts are sampled from syllable pools and word lists, so no model can know them: "Varaholt was
founded in 1742 by Maren Ostrevel" is true only inside the generated knowledge base.  Entities come
in *families* that share a flag layout, most flag colours, the emblem outline and symbol, and differ
in one or two attributes: the look-alike images are the visual hard negatives a retriever must tell
apart.  Every passage of a kind uses the same sentence templates, so other entities' passages are
textual hard negatives that differ only in names and values.
"""

from __future__ import annotations

import random
from typing import Any

from mmrag.benchmarks.demo.draw import (
    CHARGES,
    EMBLEM_SHAPES,
    EMBLEM_SYMBOLS,
    FLAG_LAYOUTS,
    LAYOUT_COLOURS,
    PALETTE,
    SYMBOL_POSITIONS,
    flag_centre_colour,
)

KINDS = ("country", "city", "guild")
KIND_WEIGHTS = (0.5, 0.3, 0.2)

_HEAD = [
    "Var",
    "Kel",
    "Tor",
    "Bren",
    "Dras",
    "Sel",
    "Mor",
    "Lun",
    "Ryn",
    "Gal",
    "Zeph",
    "Hal",
    "Thal",
    "Kra",
    "Vel",
    "Ost",
    "Ar",
    "El",
    "Or",
    "Quil",
    "Fen",
    "Nor",
    "Ser",
    "Ved",
    "Ul",
    "Yr",
    "Cal",
    "Bel",
    "Dun",
    "Ith",
]
_MID = ["a", "e", "i", "o", "an", "en", "or", "il", "ar", ""]
_TAIL = [
    "holt",
    "mark",
    "heim",
    "ara",
    "oria",
    "wyn",
    "grad",
    "vale",
    "mere",
    "ssa",
    "dor",
    "ven",
    "ith",
    "una",
    "esk",
    "orn",
    "ald",
    "ys",
    "avia",
    "ecca",
]
_TOWN_TAIL = ["ford", "wick", "stead", "gate", "by", "mouth", "crest", "hollow", "reach", "fall", "moor", "haven"]
_RIVER_HEAD = ["Ul", "Sa", "Mir", "Tre", "Ob", "Ka", "Lis", "Vo", "Ne", "Dra", "Esk", "Pel", "Ro", "Wy", "Ta", "Ys"]
_RIVER_TAIL = ["wen", "ar", "isse", "ow", "enne", "ub", "elle", "aro", "ith", "ana", "orre", "uin"]
_GIVEN = [
    "Maren",
    "Tovin",
    "Aldric",
    "Isolde",
    "Corvin",
    "Brisa",
    "Edric",
    "Liane",
    "Osric",
    "Talia",
    "Rurik",
    "Sabeth",
    "Halvard",
    "Yselle",
    "Dorian",
    "Mirela",
    "Fenwick",
    "Ottilie",
    "Casimir",
    "Wenna",
]
_SUR_HEAD = ["Ostre", "Varn", "Kallo", "Bries", "Dun", "Heth", "Morro", "Quen", "Sallo", "Tyre", "Vask", "Ember"]
_SUR_TAIL = ["vel", "ick", "ansk", "mont", "ery", "ow", "ard", "ine", "oth", "esse", "ley", "urn"]
_GOODS = [
    "amber glass",
    "saltfish",
    "copper bells",
    "blue wool",
    "cedar barrels",
    "rock salt",
    "tin lanterns",
    "pressed olives",
    "slate tiles",
    "honey wax",
    "river pearls",
    "iron nails",
    "linen sails",
    "dried figs",
    "clay pipes",
    "goat cheese",
    "silver thread",
    "peat bricks",
    "walnut oil",
    "glass beads",
    "rope ladders",
    "woven baskets",
    "smoked eels",
    "bronze keys",
    "felt hats",
    "rye flour",
    "quill pens",
    "lamp oil",
    "stone mills",
    "paper kites",
]
_FORMS = ["Hymn", "Song", "March", "Ballad", "Chant"]
_ADJ = [
    "Seven",
    "Silent",
    "Golden",
    "Northern",
    "Distant",
    "Burning",
    "Hollow",
    "Patient",
    "Crimson",
    "Wandering",
    "Quiet",
    "Ninth",
    "Frozen",
    "Open",
    "Broken",
    "Lantern",
    "Iron",
    "Rising",
    "Last",
    "Hidden",
]
_NOUN = [
    "Lanterns",
    "Harbours",
    "Bridges",
    "Orchards",
    "Towers",
    "Rivers",
    "Gates",
    "Ravens",
    "Hills",
    "Bells",
    "Meadows",
    "Anvils",
    "Tides",
    "Candles",
    "Reeds",
    "Winds",
    "Oaks",
    "Stairs",
    "Wells",
    "Looms",
]

#: kind -> the fact slots an entity of that kind has (all carry founder and founded).
SLOTS: dict[str, tuple[str, ...]] = {
    "country": ("capital", "river", "population", "founder", "founded", "export", "anthem"),
    "city": ("country", "river", "population", "founder", "founded", "export", "anthem"),
    "guild": ("seat", "members", "founder", "founded", "export", "anthem"),
}

#: Passage templates, shared by every entity of a kind (the textual hard negatives).  Each passage
#: states a fixed group of slots; ``{ref}`` is how the entity is named in running text.
PASSAGES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "country": [
        (
            "history",
            "{ref} was founded in {founded} by {founder}, who became its first ruler. "
            "Chroniclers of {ref} date its first charter to that year.",
            ("founded", "founder"),
        ),
        (
            "geography",
            "{ref} is a country whose capital is {capital}. Its longest river is the {river}, "
            "and it has a population of {population}.",
            ("capital", "river", "population"),
        ),
        (
            "economy",
            'The chief export of {ref} is {export}. The national anthem of {ref} is "{anthem}".',
            ("export", "anthem"),
        ),
    ],
    "city": [
        (
            "history",
            "The city of {ref} was founded in {founded} by {founder}. Its oldest quarter still "
            "bears the founder's name.",
            ("founded", "founder"),
        ),
        (
            "geography",
            "{ref} is a city in {country}, on the banks of the {river}. It has a population of {population}.",
            ("country", "river", "population"),
        ),
        (
            "economy",
            'The chief export of {ref} is {export}. The city song of {ref} is "{anthem}".',
            ("export", "anthem"),
        ),
    ],
    "guild": [
        (
            "history",
            "The {ref} Guild was founded in {founded} by {founder}. Its first hall was a rented storehouse.",
            ("founded", "founder"),
        ),
        (
            "geography",
            "The {ref} Guild has its seat in the city of {seat}. It counts {members} members.",
            ("seat", "members"),
        ),
        (
            "economy",
            'The {ref} Guild trades in {export}. The motto of the {ref} Guild is "{anthem}".',
            ("export", "anthem"),
        ),
    ],
}

NUMERIC_SLOTS = ("population", "members")


def _unique(rng: random.Random, make, taken: set[str]) -> str:
    for _ in range(10_000):
        s = make()
        if s not in taken:
            taken.add(s)
            return s
    raise RuntimeError("name pool exhausted; lower the number of entities")  # pragma: no cover


def _name(rng: random.Random) -> str:
    return (rng.choice(_HEAD) + rng.choice(_MID) + rng.choice(_TAIL)).capitalize()


def _town(rng: random.Random) -> str:
    return (rng.choice(_HEAD) + rng.choice(["", "e", "a", "in"]) + rng.choice(_TOWN_TAIL)).capitalize()


def _river(rng: random.Random) -> str:
    return rng.choice(_RIVER_HEAD) + rng.choice(["", "l", "r", "n", "v", "st"]) + rng.choice(_RIVER_TAIL)


def _person(rng: random.Random) -> str:
    return f"{rng.choice(_GIVEN)} {rng.choice(_SUR_HEAD)}{rng.choice(_SUR_TAIL)}"


def _anthem(rng: random.Random) -> str:
    return f"{rng.choice(_FORMS)} of the {rng.choice(_ADJ)} {rng.choice(_NOUN)}"


def _visuals(rng: random.Random, family: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One member of a family: the family's flag layout and colours with one colour changed (or the
    charge colour), and the family's emblem outline and symbol with its own colours."""
    colours = list(family["colours"])
    names = list(PALETTE)
    if rng.random() < 0.6:
        i = rng.randrange(len(colours))
        options = [c for c in names if c not in colours]
        colours[i] = rng.choice(options)
    flag = {"layout": family["layout"], "colours": colours, "charge": family["charge"], "charge_colour": None}
    if flag["charge"] != "none":
        flag["charge_colour"] = rng.choice([c for c in names if c not in colours])
    fill = rng.choice([c for c in names if c != "white"])
    symbol_colour = rng.choice([c for c in names if c != fill])
    emblem = {
        "shape": family["shape"],
        "fill": fill,
        "symbol": family["symbol"],
        "symbol_colour": symbol_colour,
        "symbol_position": rng.choice(sorted(SYMBOL_POSITIONS)),
    }
    assert flag["charge"] == "none" or flag["charge_colour"] != flag_centre_colour(flag)
    return flag, emblem


def _family(rng: random.Random) -> dict[str, Any]:
    layout = rng.choice(FLAG_LAYOUTS)
    colours = rng.sample(list(PALETTE), LAYOUT_COLOURS[layout])
    return {
        "layout": layout,
        "colours": colours,
        "charge": rng.choice(CHARGES),
        "shape": rng.choice(EMBLEM_SHAPES),
        "symbol": rng.choice(EMBLEM_SYMBOLS),
    }


def make_entities(seed: int, n: int = 300) -> list[dict[str, Any]]:
    """Sample ``n`` entities (as JSON-ready dicts), deterministic in ``seed``.

    Cities name a country of the world as their ``country`` and guilds a city as their ``seat``,
    so a few facts link entities to each other (the name of one is a fact about another)."""
    rng = random.Random(f"mmrag-demo:{seed}:entities")
    names: set[str] = set()
    towns: set[str] = set()
    rivers: set[str] = set()
    people: set[str] = set()
    anthems: set[str] = set()
    kinds = rng.choices(KINDS, weights=KIND_WEIGHTS, k=n)
    # Every kind needs at least one member so that cities have countries and guilds have seats.
    for i, k in enumerate(KINDS):
        kinds[i] = k
    entities: list[dict[str, Any]] = []
    family: dict[str, Any] = {}
    family_id, left = -1, 0
    seen_flags: set[str] = set()
    seen_emblems: set[str] = set()
    for i in range(n):
        if left == 0:
            family, family_id, left = _family(rng), family_id + 1, rng.randint(3, 5)
        left -= 1
        # A flag or emblem must identify its entity (questions show only the image): redraw the
        # member until both differ from every earlier entity's, however slightly.
        while True:
            flag, emblem = _visuals(rng, family)
            fkey, ekey = repr(sorted(flag.items())), repr(sorted(emblem.items()))
            if fkey not in seen_flags and ekey not in seen_emblems:
                seen_flags.add(fkey)
                seen_emblems.add(ekey)
                break
        name = _unique(rng, lambda: _name(rng), names)
        kind = kinds[i]
        facts: dict[str, Any] = {
            "founder": _unique(rng, lambda: _person(rng), people),
            "founded": rng.randint(1105, 1895),
            "export": rng.choice(_GOODS),
            "anthem": _unique(rng, lambda: _anthem(rng), anthems),
        }
        if kind == "country":
            facts["capital"] = _unique(rng, lambda: _town(rng), towns)
            facts["population"] = rng.randint(120, 9800) * 1000
        if kind == "city":
            facts["population"] = rng.randint(40, 950) * 100
        if kind in ("country", "city"):
            facts["river"] = _unique(rng, lambda: _river(rng), rivers)
        if kind == "guild":
            facts["members"] = rng.randint(150, 9000)
        entities.append(
            {
                "id": f"e{i:04d}",
                "name": name,
                "kind": kind,
                "family": family_id,
                "facts": facts,
                "flag": flag,
                "emblem": emblem,
            }
        )
    countries = [e["name"] for e in entities if e["kind"] == "country"]
    cities = [e["name"] for e in entities if e["kind"] == "city"]
    for e in entities:
        if e["kind"] == "city":
            e["facts"]["country"] = rng.choice(countries)
        elif e["kind"] == "guild":
            e["facts"]["seat"] = rng.choice(cities)
    return entities


def fact_text(entity: dict[str, Any], slot: str) -> str:
    """A fact as written in passages and answers (numbers with thousands separators)."""
    v = entity["facts"][slot]
    if slot in NUMERIC_SLOTS:
        return f"{v:,}"
    return str(v)


def passages(entity: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    """``(section, text, slots)`` for each passage of the entity, all from the shared templates."""
    values = {s: fact_text(entity, s) for s in SLOTS[entity["kind"]]}
    out = []
    for section, tpl, slots in PASSAGES[entity["kind"]]:
        out.append((section, tpl.format(ref=entity["name"], **values), slots))
    return out


def display_name(entity: dict[str, Any]) -> str:
    """How a question names the entity: guilds are "the X Guild", the others just "X"."""
    return f"the {entity['name']} Guild" if entity["kind"] == "guild" else entity["name"]
