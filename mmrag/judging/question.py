"""What a question asks for: a figure, a year, a member of a closed class, yes/no, a name.

The cut-off step needs it (a reply cut off mid-reasoning is held only to a contradiction of the
slot asked: a page number on the way is no answer to "who"), and so may any step that reads a
reply against the question's slot.
"""

from __future__ import annotations

import re

from mmrag.judging.lexicon import fold

#: what a question asks for, first match wins: a figure, a year or date, a member of a closed class,
#: yes/no or one of two, or a name; anything else ("why", "how do you") is ``other``
_ASKED = (
    ("year", re.compile(r"\b(?:when|what year|which year|in what year|what date|which date|which century)\b")),
    (
        "other",
        re.compile(
            r"\bwhy\b|\bhow (?:do|does|did|can|could|should|is|are|was|were|to)\b|\bwhat (?:is |was |were |are )?"
            r"(?:the )?(?:\w+ )?(?:reasons?|causes?|purpose|steps?|procedure|benefits?|risks?|factors?|effects?)\b"
        ),
    ),
    (
        "number",
        re.compile(
            r"\bhow (?:many|much|long|tall|high|far|old|deep|wide|big|large|heavy|fast)\b|\bwhat (?:is |was |were |are )?"
            r"(?:the )?(?:[\w-]+ ){0,3}(?:number|count|population|length|height|width|depth|area|weight|price|cost|"
            r"amount|percentage|proportion|share|fraction|rate|total|capacity|speed|distance|value|temperature|size|"
            r"revenue|profit|margin|dividend|fee|salary|tax|yield|budget|income|sales|earnings|wingspan|span)\b"
        ),
    ),
    ("class", re.compile(r"\b(?:what|which) (?:colou?r|shape|material|month|day|direction|pattern)\b")),
    (
        "polar",
        re.compile(r"^(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b|\bor\b.*\?\s*$"),
    ),
    ("name", re.compile(r"\b(?:who|whom|whose|where|which|what)\b")),
)


def asked_slot(question: str) -> str:
    """The kind of answer a question asks for: year | number | class | polar | name | other."""
    q = fold(question).split("\n")[0].strip()
    return next((slot for slot, rx in _ASKED if rx.search(q)), "other")
