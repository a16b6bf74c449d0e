"""Step 4 of the judge: does the answer contradict a slot of the reference?

A reply may carry the reference's words and still change one of its claims.  Each check reads
one kind of slot and returns a :class:`Conflict` (kind, what it saw) or None; the decide step turns
any conflict into ``hallucination``.  Words and numbers the question already holds never count.

* ``amount``, ``count``, ``swap``, ``attribution`` — the numbers (:mod:`.number_checks`);
* ``direction`` — the other side of an opposite pair (rose / fell, taller / shorter, before /
  after, ...);
* ``class`` — another member of a closed class (colour, month, weekday, compass direction, ...);
* ``entity`` — a name sharing a word with the reference's name but not it (another king with the
  same name, a sister species, "Lund University" for Uppsala University), unless an alias phrase
  introduces it ("travertine, also called tufa");
* ``order`` — two of the reference's names in the reverse order around its relation word ("B
  owns A" for "A owns B"), or two of its words trading places;
* ``rival`` — a second candidate of the reference's kind beside a short reference.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from mmrag.judging.base import Conflict
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
from mmrag.judging.number_checks import numbers

_RUN = re.compile(
    r"\b(?:[A-Z][\w'-]*|[MDCLXVI]+\b)(?:\s+(?:(?:of|de|la|the|von|van|del)\s+)?(?:[A-Z][\w'-]*|[MDCLXVI]+\b))*"
)


_NEGATED_FORM = re.compile(r"^(?:non-?|un|in|dis|il|ir|im)(\w{4,})$")


def direction(reference: str, reply: str, question: str) -> Conflict | None:
    q = set(words(question))
    ref_words, said_words = set(words(reference)) - q, set(words(reply)) - q
    for a, b in ((ref_words, said_words), (said_words, ref_words)):
        for w in sorted(b - a):  # "non-refundable" for refundable, "unpaid" for paid
            m = _NEGATED_FORM.match(w.replace("-", "") if w.startswith("non-") else w)
            if m and m.group(1) in a:
                return Conflict("direction", f"{w!r} against {m.group(1)!r}")
    ref = {p for t in words(reference) if t not in q and (p := polarity(t)) is not None}
    said = {p for t in words(reply) if t not in q and (p := polarity(t)) is not None}
    for pair, side in sorted(said):
        if (pair, 1 - side) in ref and (pair, 1 - side) not in said and (pair, side) not in ref:
            return Conflict("direction", f"the other side of an opposite pair ({pair})")
    return None


def closed_member(reference: str, reply: str, question: str) -> Conflict | None:
    q = {canonical(t) for t in words(question)}
    ref = {canonical(t) for t in words(reference)} - q
    toks = words(reply)
    said = [canonical(t) for i, t in enumerate(toks) if not any(n in NEGATORS for n in toks[max(0, i - 2) : i])]
    for cls in sorted({c for t in ref if (c := closed_class(t)) is not None}):
        gold = {t for t in ref if closed_class(t) == cls}
        other = {t for t in said if closed_class(t) == cls and t not in q} - gold
        if other and not gold & set(said):
            return Conflict("class", f"{'/'.join(sorted(other))} where the reference has {'/'.join(sorted(gold))}")
    return None


def _runs(text: str) -> list[tuple[str, ...]]:
    out = []
    for m in _RUN.finditer(text):
        toks = tuple(fold(t) for t in m.group(0).split() if fold(t) not in STOPWORDS)
        # the character before the run (within a bounded window: a slice to the start would make this quadratic)
        if toks and (
            len(toks) > 1 or m.start() > 0 and text[max(0, m.start() - 80) : m.start()].rstrip()[-1:] not in ".!?"
        ):
            out.append(toks)
    return out


_ROMAN = re.compile(r"[mdclxvi]+")


def _abbreviates(a: str, b: str) -> bool:
    """ "ltd" / "limited", "st" / "saint": the shorter's letters in order in the longer, same first letter."""
    short, long_ = sorted((a, b), key=len)
    if len(short) < 2 or short[0] != long_[0] or len(short) == len(long_):
        return False
    if _ROMAN.fullmatch(a) and _ROMAN.fullmatch(b):  # "xv" is no abbreviation of "xiv"
        return False
    it = iter(long_)
    return all(c in it for c in short)


def entity(reference: str, reply: str, question: str) -> Conflict | None:
    q = set(words(question))
    ref_runs, said_runs = _runs(reference), _runs(reply)
    ref_words = {t for r in ref_runs for t in r} | set(words(reference))
    said_words = set(words(reply))
    lowered = reply.lower()
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
            at = lowered.find(odd[0])
            if at > 0 and ALIAS.search(reply[max(0, at - 40) : at]):
                continue
            return Conflict("entity", f"{' '.join(p)!r} where the reference names {' '.join(r)!r}")
    return None


def order(reference: str, reply: str, question: str) -> Conflict | None:
    rw, said = words(reference), words(reply)
    pos = {}
    for r in _runs(reference):
        for i in range(len(said)):
            if tuple(said[i : i + len(r)]) == r:
                pos[r] = i
                break
    if len(pos) != 2:
        return None
    (a, ia), (b, ib) = sorted(pos.items(), key=lambda kv: rw.index(kv[0][0]) if kv[0][0] in rw else 0)
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
    """The first conflict of each check against the reference the reply agrees with best: among
    the references whose words the reply all holds, the one that leaves the fewest conflicts (a
    reply need only agree with one accepted answer).  A reply that holds none agrees with none,
    so every conflict with a reference it shares a word with counts: "Louis XV" is not excused
    by sharing nothing with "the Sun King"."""
    said = set(content_stems(reply))
    theirs = {ref: set(content_stems(ref)) for ref in references}
    given = [ref for ref, own in theirs.items() if own and own <= said]
    shared = [ref for ref, own in theirs.items() if own & said]
    best: list[Conflict] | None = None
    for ref in given or shared or references:
        found = [c for check in CHECKS if (c := check(ref, reply, question)) is not None]
        if best is None or (given and len(found) < len(best)):
            best = found
        elif not given:  # agreeing with none of them, every conflict counts
            best += [c for c in found if c not in best]
    two = rival(references, reply, question)
    return (best or []) + ([two] if two else [])
