"""Step 4 of the judge: does the answer contradict a slot of the reference?

A reply may carry the reference's words and still change one of its claims.  Each check reads
one kind of slot and returns a :class:`Conflict` (kind, what it saw) or None; the decide step turns
any conflict into ``hallucination``.  Words and numbers the question already holds never count.

* ``amount`` — an amount of a unit dimension the reference states that none of the reference's
  amounts is, after pint conversion ("1,200 feet" for 1,200 metres, "18.4 %" for 14.8 %);
* ``count`` — a bare number (digits or words, years included) where the reference has others and
  none of the reply's agrees ("three arches" for five; "1902" for 1887);
* ``swap`` — two of the reference's numbers bound to each other's nouns ("60 % women, 40 % men");
* ``attribution`` — the reference's value given to another quantity ("$2 billion in dividends"
  where the $2 billion is buybacks);
* ``direction`` — the other side of an opposite pair (rose / fell, taller / shorter, before /
  after, ...);
* ``class`` — another member of a closed class (colour, month, weekday, compass direction, ...);
* ``entity`` — a name sharing a word with the reference's name but not it (another king with the
  same name, a sister species, "Lund University" for Uppsala University), unless an alias phrase
  introduces it ("travertine, also called tufa");
* ``order`` — two of the reference's names in the reverse order around its relation word ("B
  owns A" for "A owns B").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from mmrag.judging.lexicon import (
    ALIAS,
    NEGATORS,
    STOPWORDS,
    canonical,
    closed_class,
    content_stems,
    fold,
    polarity,
    stem,
    stems,
    words,
)
from mmrag.judging.numwords import digits_for_words
from mmrag.judging.quantity import Quantity, close, quantities

_RUN = re.compile(
    r"\b(?:[A-Z][\w'-]*|[MDCLXVI]+\b)(?:\s+(?:(?:of|de|la|the|von|van|del)\s+)?(?:[A-Z][\w'-]*|[MDCLXVI]+\b))*"
)


@dataclass(frozen=True)
class Conflict:
    kind: str  # amount | count | swap | attribution | direction | class | entity | order
    detail: str


def _new(qs: list[Quantity], question: str) -> list[Quantity]:
    asked = quantities(question)
    return [q for q in qs if not any(q.dim == a.dim and q.number == a.number for a in asked)]


def _bound(text: str) -> dict[float, set[str]]:
    """Each number's nouns: the content stems within three words after it (before the next number)."""
    toks, out = words(text), {}
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


_APPROX = re.compile(
    r"\b(?:about|around|roughly|nearly|almost|approximately|approx|some|over|under|up to|by)\s*\W*$", re.I
)


def numbers(reference: str, reply: str, question: str) -> Conflict | None:
    ref = quantities(reference)
    said = _new(list(quantities(reply)), question)
    text = digits_for_words(reply)
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


_NEGATED_FORM = re.compile(r"^(?:non-?|un|in|dis|il|ir|im)(\w{4,})$")


def direction(reference: str, reply: str, question: str) -> Conflict | None:
    q = set(words(question))
    ref_words, said_words = set(words(reference)) - q, set(words(reply)) - q
    for a, b in ((ref_words, said_words), (said_words, ref_words)):
        for w in sorted(b - a):  # "non-refundable" for refundable, "unpaid" for paid
            m = _NEGATED_FORM.match(w.replace("-", "") if w.startswith("non-") else w)
            if m and m.group(1) in a:
                return Conflict("direction", f"{w!r} against {m.group(1)!r}")
    ref = {polarity(t) for t in words(reference) if t not in q} - {None}
    said = {polarity(t) for t in words(reply) if t not in q} - {None}
    for pair, side in sorted(said):
        if (pair, 1 - side) in ref and (pair, 1 - side) not in said and (pair, side) not in ref:
            return Conflict("direction", f"the other side of an opposite pair ({pair})")
    return None


def closed_member(reference: str, reply: str, question: str) -> Conflict | None:
    q = {canonical(t) for t in words(question)}
    ref = {canonical(t) for t in words(reference)} - q
    said = [
        canonical(t)
        for i, t in enumerate(words(reply))
        if not any(n in NEGATORS for n in words(reply)[max(0, i - 2) : i])
    ]
    for cls in sorted({closed_class(t) for t in ref} - {None}):
        gold = {t for t in ref if closed_class(t) == cls}
        other = {t for t in said if closed_class(t) == cls and t not in q} - gold
        if other and not gold & set(said):
            return Conflict("class", f"{'/'.join(sorted(other))} where the reference has {'/'.join(sorted(gold))}")
    return None


def _runs(text: str) -> list[tuple[str, ...]]:
    out = []
    for m in _RUN.finditer(text):
        toks = tuple(fold(t) for t in m.group(0).split() if fold(t) not in STOPWORDS)
        if toks and (len(toks) > 1 or m.start() > 0 and text[: m.start()].rstrip()[-1:] not in ".!?"):
            out.append(toks)
    return out


def _abbreviates(a: str, b: str) -> bool:
    """ "ltd" / "limited", "st" / "saint": the shorter's letters in order in the longer, same first letter."""
    short, long_ = sorted((a, b), key=len)
    if len(short) < 2 or short[0] != long_[0] or len(short) == len(long_):
        return False
    it = iter(long_)
    return all(c in it for c in short)


def entity(reference: str, reply: str, question: str) -> Conflict | None:
    q = set(words(question))
    ref_runs, said_runs = _runs(reference), _runs(reply)
    ref_words = {t for r in ref_runs for t in r} | set(words(reference))
    said_words = set(words(reply))
    for p in said_runs:
        if set(p) <= ref_words:
            continue
        for r in ref_runs:
            shared = set(p) & set(r) - q
            if not shared or set(r) <= said_words:
                continue
            odd = [t for t in p if t not in ref_words and not any(_abbreviates(t, w) for w in ref_words)]
            if not odd:
                continue
            at = reply.lower().find(odd[0])
            if at > 0 and ALIAS.search(reply[max(0, at - 40) : at]):
                continue
            return Conflict("entity", f"{' '.join(p)!r} where the reference names {' '.join(r)!r}")
    return None


def order(reference: str, reply: str, question: str) -> Conflict | None:
    ref_names = [r for r in _runs(reference) if len(r) >= 1]
    said = words(reply)
    pos = {}
    for r in ref_names:
        for i in range(len(said)):
            if tuple(said[i : i + len(r)]) == r:
                pos[r] = i
                break
    if len(pos) != 2:
        return None
    (a, ia), (b, ib) = sorted(
        pos.items(), key=lambda kv: words(reference).index(kv[0][0]) if kv[0][0] in words(reference) else 0
    )
    rw = words(reference)
    try:
        ra, rb = rw.index(a[0]), rw.index(b[0])
    except ValueError:
        return None
    between = {stem(t) for t in rw[ra + len(a) : rb] if t not in STOPWORDS}
    said_between = {stem(t) for t in said[min(ia, ib) : max(ia, ib)] if t not in STOPWORDS}
    if ia > ib and between and between & said_between and "by" not in said[ib:ia]:
        return Conflict("order", f"{' '.join(a)!r} and {' '.join(b)!r} in reverse order")
    return None


_ITEMS = re.compile(
    r",?\s*\b(?:though|although|but)\s+(?:it\s+|this\s+)?(?:could|might|may)\s+(?:also\s+)?be\b\s*|\s*(?:,\s*)?\b(?:and|or|and/or|as well as|plus)\b\s*|\s*[&/;]\s*|,\s*(?:or\s+)?(?:possibly|perhaps|maybe)\s+"
)


def rival(references: list[str], reply: str, question: str) -> Conflict | None:
    """A short reference beside another candidate of its kind ("Socrates and Plato" for Plato,
    "12 metres, or possibly 18.8 metres"): two answers where one is asked for.  Items in
    parentheses, negated items, items naming another accepted answer and "between X and Y" are no
    rivals."""
    refs = [norm(r) for r in references if r.strip() and len(norm(r).split()) <= 4]
    if not refs or re.search(r"\b(?:and|or)\b", question.lower()):
        return None
    for sentence in re.split(r"(?<=[.!?])\s+", re.sub(r"\([^)]*\)", " ", reply)):
        items = [i.strip(" .,:;()") for i in _ITEMS.split(sentence) if i and i.strip(" .,:;()")]
        if len(items) < 2 or len(sentence.split()) > 14 or ALIAS.search(sentence) or "between" in sentence.lower():
            continue
        hits = [any(f" {ref} " in f" {norm(i)} " for ref in refs) for i in items]
        others = [
            i
            for i, h in zip(items, hits)
            if not h
            and len(i.split()) <= 3
            and not set(words(i)) & NEGATORS
            and set(words(i)) - set(words(question)) - STOPWORDS
        ]
        # a rival is a candidate of the reference's kind: a name for a name, a number for a number
        kind = (
            (lambda i: bool(re.search(r"\d", i)))
            if re.search(r"\d", " ".join(references))
            else (lambda i: bool(re.search(r"(?:^|\s)[A-Z]", i)))
            if any(r[:1].isupper() for r in references)
            else (lambda i: len(i.split()) <= 2)
        )
        others = [i for i in others if kind(i)]
        if any(hits) and others:
            return Conflict("rival", f"{others[0]!r} beside the reference")
    return None


def norm(text: str) -> str:
    return " ".join(w for w in words(text) if w not in ("the", "a", "an"))


def exchanged(reference: str, reply: str, question: str) -> Conflict | None:
    """Two of the reference's words that trade places across the words both keep in order ("a
    white back and a blue belly" for "a blue back and a white belly"; "the chanterelle is
    poisonous while the jack-o'-lantern is edible")."""
    q = set(stems(question))
    ref = list(dict.fromkeys(content_stems(reference)))
    said = list(dict.fromkeys(content_stems(reply)))
    shared = [w for w in ref if w in said]
    if len(shared) < 3:
        return None
    theirs, ours = shared, sorted(shared, key=said.index)
    kept = {
        theirs[b.a + i]
        for b in SequenceMatcher(None, theirs, ours, autojunk=False).get_matching_blocks()
        for i in range(b.size)
    }
    moved = [w for w in shared if w not in kept and w not in q]  # the question's words only anchor
    for i, a in enumerate(moved):
        for b in moved[i + 1 :]:
            anchors = [k for k in theirs if k in kept and theirs.index(a) < theirs.index(k) < theirs.index(b)]
            if anchors and ours.index(b) < ours.index(anchors[0]) < ours.index(a):
                return Conflict("order", f"{a!r} and {b!r} trade places around {anchors[0]!r}")
    return None


CHECKS = (numbers, direction, closed_member, entity, order, exchanged)


def conflicts(references: list[str], reply: str, question: str) -> list[Conflict]:
    """The first conflict of each check against the reference the reply agrees with best (the one
    that leaves the fewest conflicts): a reply need only agree with one accepted answer."""
    best: list[Conflict] | None = None
    for ref in references:
        found = [c for check in CHECKS if (c := check(ref, reply, question)) is not None]
        if best is None or len(found) < len(best):
            best = found
    two = rival(references, reply, question)
    return (best or []) + ([two] if two else [])
