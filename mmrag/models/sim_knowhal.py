"""How ``sim-vlm`` reads and answers the demo's KnowHal-style questions about an emblem view.

Each question of :mod:`mmrag.benchmarks.demo.knowhal_pairs` is recognised by its wording: a
positive question asks for something the image shows (the symbol, its colour, its place — a
multiple-choice question —, the outline's geometric name); a negative one presupposes something
the image contradicts (an absent symbol, a wrong colour or place, a person holding the emblem, a
wrong polygon).  The model answers from the entity it *sees* (noisy recognition of the view).  When
what it sees contradicts the premise, it rejects the premise with probability ``1 - text_prior``
(the question's words against the image: the same language-over-vision bias), else it goes along
with the premise — a KnowHal hallucination.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmrag.models.sim_vlm import Answer, Situation

_E = " inside the emblem in this image"
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("E+", re.compile(r"^what symbol is drawn" + _E + r"\?$")),
    ("E-", re.compile(r"^what colour is the (?P<absent>\w+) drawn" + _E + r"\?$")),
    ("A+", re.compile(r"^what colour is the (?P<sym>\w+)" + _E + r"\?$")),
    ("A-", re.compile(r"^why is the (?P<wrong>\w+) (?P<sym>\w+) inside the emblem drawn so small\?$")),
    ("R+", re.compile(r"^where is the (?P<sym>\w+) placed within the emblem in this image\?$")),
    ("R-", re.compile(r"^why is the (?P<sym>\w+) placed (?P<place>.+) of the emblem in this image\?$")),
    ("K+", re.compile(r"^what is the geometric name of the outline shape of this emblem\?$")),
    ("K-person", re.compile(r"^what is the person holding up this emblem wearing\?$")),
    ("K-sides", re.compile(r"^how many sides does the (?P<fake>\w+) that forms this emblem's outline have\?$")),
)


def parse_knowhal(question: str) -> tuple[str, dict[str, str]] | None:
    q = " ".join(question.strip().lower().split())
    for kind, rx in PATTERNS:
        m = rx.match(q)
        if m:
            return kind, m.groupdict()
    return None


def _contradiction(kind: str, g: dict[str, str], em: dict[str, Any]) -> tuple[bool, str, str]:
    """(does the seen emblem contradict the premise, the rejection, the going-along answer)."""
    from mmrag.benchmarks.demo.knowhal_pairs import SIDES, placed

    sym, col, pos, shape = em["symbol"], em["symbol_colour"], em["symbol_position"], em["shape"]
    if kind == "E-":
        return (g["absent"] != sym, f"There is no {g['absent']} in the emblem; it shows a {sym}.", f"It is {col}.")
    if kind == "A-":
        return (
            g["wrong"] != col,
            f"The {sym} is {col}, not {g['wrong']}.",
            "It is drawn small to leave room for the outline.",
        )
    if kind == "R-":
        return (
            g["place"] != placed(pos),
            f"The {sym} is {placed(pos)} of the emblem, not {g['place']}.",
            "Placing it there balances the design.",
        )
    if kind == "K-person":
        return True, "Nobody is holding the emblem; it hangs alone in a frame on a wall.", "A dark blue coat."
    return (g["fake"] != shape, f"The outline is a {shape}, not a {g['fake']}.", str(SIDES.get(g["fake"], 5)))


def respond_knowhal(parsed: tuple[str, dict[str, str]], seen: dict[str, Any], s: Situation) -> Answer:
    from mmrag.benchmarks.demo.knowhal_pairs import placed
    from mmrag.models.sim_vlm import Answer

    kind, groups = parsed
    em = seen["emblem"]
    conf = 0.55 + 0.35 * s.p.vision
    if kind == "E+":
        return Answer(em["symbol"], conf, "The emblem shows a symbol.")
    if kind == "A+":
        return Answer(em["symbol_colour"], conf, f"I look at the {em['symbol']}.")
    if kind == "K+":
        return Answer(em["shape"], conf, "I count the outline's sides.")
    if kind == "R+":
        where = placed(em["symbol_position"]).lower()
        for c in s.prompt.choices:
            if c.text.strip().lower() == where:
                return Answer(c.letter, conf, f"The symbol sits {where}.", letter=True)
        pick = (
            s.prompt.choices[int(s.rng("knowhal-pick").integers(len(s.prompt.choices)))] if s.prompt.choices else None
        )
        return Answer(pick.letter if pick else None, 0.2, "None of the places fits well.", letter=True)
    contradicts, reject, accept = _contradiction(kind, groups, em)
    rejects = contradicts and s.uniform("premise") >= s.p.text_prior
    if kind == "R-" and s.prompt.choices:  # a multiple-choice negative: the letter of the option it means
        letter = _premise_option(s.prompt.choices, rejects, accept)
        if letter is not None:
            return Answer(letter, 0.8 if rejects else 0.6, "I compare the options with the image.", letter=True)
    if rejects:
        return Answer(reject, 0.8, "The question assumes something the image does not show.")
    return Answer(accept, 0.6, "I take the question as asked.")


def _premise_option(choices, rejects: bool, accept: str) -> str | None:
    """The option rejecting the premise (the one saying "..., not ...") or the going-along one."""
    for c in choices:
        text = c.text.strip()
        if (", not " in text) == rejects and (rejects or text == accept):
            return c.letter
    return None
