"""The slot checks on numbers, apart from the name and word checks of :mod:`.contradict` because they
read amounts (pint dimensions), bare counts and the nouns bound to each number:

* ``amount`` — an amount of a unit dimension the reference states that none of the reference's
  amounts is, after pint conversion ("1,200 feet" for 1,200 metres, "18.4 %" for 14.8 %); a
  restatement marked rough ("about 8,850") may be off by 15 %;
* ``count`` — a bare number (digits or words, years included) where the reference has others and
  none of the reply's agrees ("three arches" for five; "1902" for 1887);
* ``swap`` — two of the reference's numbers bound to each other's nouns ("60 % women, 40 % men");
* ``attribution`` — the reference's value given to another quantity ("$2 billion in dividends"
  where the $2 billion is buybacks).

One check, :func:`numbers`, returns the first of them: the caller counts one conflict per check.
"""

from __future__ import annotations

import re

from mmrag.judging.base import Conflict
from mmrag.judging.lexicon import NEGATORS, STOPWORDS, stem, stems, words
from mmrag.judging.numwords import digits_for_words
from mmrag.judging.quantity import Quantity, close, quantities

_APPROX = re.compile(
    r"\b(?:about|around|roughly|nearly|almost|approximately|approx|some|over|under|up to|by)\s*\W*$", re.I
)


#: a number that points at the evidence, not at the world ("page 2", "image 1", "passage 3")
_POINTER = re.compile(
    r"\b(?:pages?|p\.|pp\.|images?|img|passages?|documents?|docs?|text|figures?|fig\.|tables?|sections?|"
    r"rows?|columns?|charts?|quotes?|sources?|exhibits?|notes?|items?|steps?|options?|lines?|clauses?)\s*#?$",
    re.I,
)


def _new(qs: list[Quantity], question: str, text: str = "") -> list[Quantity]:
    """The reply's amounts the question does not hold and that do not point at a page or passage."""
    asked = quantities(question)
    return [
        q
        for q in qs
        if not any(q.dim == a.dim and q.number == a.number for a in asked)
        and not _POINTER.search(text[max(0, q.start - 12) : q.start])
    ]


def _bound(text: str) -> dict[float, set[str]]:
    """Each number's nouns: the content stems within three words after it (before the next number)."""
    toks = words(text)
    out: dict[float, set[str]] = {}
    for i, t in enumerate(toks):
        if t[:1].isdigit():
            try:
                value = float(t)
            except ValueError:
                continue
            nouns = set()
            for w in toks[i + 1 : i + 4]:
                if w[:1].isdigit():
                    break
                if w not in STOPWORDS and w not in NEGATORS and len(w) > 2:
                    nouns.add(stem(w))
            out.setdefault(value, set()).update(nouns)
    return out


def numbers(reference: str, reply: str, question: str) -> Conflict | None:
    ref = quantities(reference)
    text = digits_for_words(reply)
    said = _new(list(quantities(reply)), question, text)
    for q in said:  # an amount of a dimension the reference states, which none of its numbers is
        same = [r for r in ref if r.dim == q.dim]
        if q.dim == "count" or (
            _APPROX.search(text[max(0, q.start - 12) : q.start]) and any(close(r, q, 0.15) for r in same)
        ):  # "about 8,850" restated roughly
            continue
        if (
            same
            and not any(close(r, q) for r in same)
            and not any(r.number == q.number and r.dim != q.dim for r in ref)
        ):
            return Conflict(
                "amount", f"{q.number:g} ({q.dim}) where the reference has " + ", ".join(f"{r.number:g}" for r in same)
            )
    ref_counts = {r.number for r in ref if r.dim == "count"}
    said_counts = {q.number for q in said if q.dim == "count"}
    ref_all = {r.number for r in ref}
    if ref_counts and said_counts and not said_counts & ref_all:
        return Conflict(
            "count",
            f"{', '.join(f'{n:g}' for n in sorted(said_counts))} where the reference has "
            + ", ".join(f"{n:g}" for n in sorted(ref_counts)),
        )
    rb, pb = _bound(reference), _bound(reply)
    shared = [v for v in pb if v in rb]
    for v in shared:
        for w in shared:
            if v != w and pb[v] & rb[w] and rb[v] & pb[w] and not pb[v] & rb[v]:
                return Conflict("swap", f"{v:g} and {w:g} exchanged")
    for v in shared:  # the reply gives v the noun the reference binds to another of its numbers
        ours = pb[v] - rb[v]
        elsewhere = [w for w in rb if w != v and ours & rb[w]]
        if ours and elsewhere and not pb[v] & rb[v] and rb[v] and not rb[v] & set(stems(reply)):
            return Conflict(
                "attribution", f"{v:g} given to {'/'.join(sorted(ours))}, the reference's is {'/'.join(sorted(rb[v]))}"
            )
    return None
