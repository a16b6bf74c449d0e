"""Relations: a reply that keeps the reference's names but swaps their roles.

"The Eiffel Tower is taller than the Tokyo Skytree" names the gold and the rival of a "which is
taller" question with the gold on the losing side; "Leonardo was the teacher of Verrocchio" names
the gold teacher as the pupil.  Word overlap credits both, so two checks read who stands where:

* ``comparison`` — the question compares (a word of an opposite pair of the lexicon: taller, more,
  first, above ...).  The reference's winner is its gold name (short references) or the names
  before its comparative (sentence references).  The reply contradicts when the winner stands
  only after the comparative, or the loser only before it; a comparative of the other side of the
  pair ("shorter" for "taller") reverses the reading.
* ``role`` — the question asks for one end of a relation noun ("the teacher of this painter",
  "her navigator", "a tributary of?").  The reply contradicts when it puts a short gold at the
  other end: "<REL> of/for <gold>" where the gold is the REL, "<gold> is a <REL> of" where the
  gold is what the REL is of.
"""

from __future__ import annotations

import re

from mmrag.judging.base import Conflict
from mmrag.judging.lexicon import STOPWORDS, fold, polarity, relation_nouns, words

_VERB = r"(?:is|was|were|are|has|had|served as|acted as|became)"
_WH = {"who", "whom", "whose", "what", "which", "where", "when", "this", "these", "that"}


def _names(text: str) -> set[str]:
    """Folded words of the capitalised runs of ``text`` (names), sentence-initial words included."""
    return {fold(w) for w in re.findall(r"\b[A-Z][\w'-]+", text)} - STOPWORDS - _WH


def _content(text: str) -> set[str]:
    return set(words(text)) - STOPWORDS - _WH


def _pivot(tokens: tuple[str, ...], pair: int) -> tuple[int, int] | None:
    """(position, side) of the first word of opposite pair ``pair`` in ``tokens``."""
    for i, t in enumerate(tokens):
        pol = polarity(t)
        if pol is not None and pol[0] == pair:
            return i, pol[1]
    return None


def _split(text: str, pair: int) -> tuple[set[str], set[str], int] | None:
    """Content words before and after the comparative of ``pair`` in the clause that holds it."""
    for clause in re.split(r"[.;!?\n]|,\s*(?:so|but|while|whereas)\b", text):
        toks = words(clause)
        hit = _pivot(toks, pair)
        if hit is None:
            continue
        i, side = hit
        spelled = clause.split()
        cut = len(" ".join(spelled[:i])) if i < len(spelled) else len(clause)
        return _content(clause[:cut]), _content(clause[cut:]), side
    return None


#: the opposite pairs that compare two things (the pair of each anchor word in the lexicon)
_ANCHORS = ("more", "taller", "before", "above", "first")


def _comparative_pairs() -> set[int]:
    return {p[0] for w in _ANCHORS if (p := polarity(w)) is not None}


_ALTERNATIVES = re.compile(r"[,:]\s*([^,?]+?)\s+or\s+([^?]+)\?")


def _short_sides(references: list[str], question: str) -> tuple[set[str], set[str]]:
    """Winner and loser words for a short reference: against the question's two alternatives
    ("..., the north or the south one?") where it has them, else the reference's names alone."""
    gold = {w for r in references for w in words(r)} - STOPWORDS
    m = _ALTERNATIVES.search(question)
    if m is None:
        return set().union(*(_names(r) for r in references)) - _names(question.split(",")[0]), set()
    alts = [set(words(a)) - STOPWORDS for a in m.groups()]
    refs = [set(words(r)) - STOPWORDS for r in references]
    named = [any(a and a <= r for r in refs) for a in alts]
    if named[0] == named[1]:
        score = [len(a & gold) for a in alts]
        if score[0] == score[1]:
            return set(), set()
        named = [score[0] > score[1], score[1] > score[0]]
    won, lost = (alts[0], alts[1]) if named[0] else (alts[1], alts[0])
    return (won - lost) | (gold - lost - set(words(question))), lost - won


def comparison(references: list[str], reply: str, question: str) -> Conflict | None:
    q = words(question)
    if not ({"or", "than"} & set(q)):  # "her first gold medal" compares nothing
        return None
    pairs = _comparative_pairs()
    pair = next((p[0] for t in q if (p := polarity(t)) is not None and p[0] in pairs), None)
    if pair is None:
        return None
    said = _split(reply, pair)
    if said is None:
        return None
    before, after, side = said
    sentence = [r for r in references if _split(r, pair) is not None]
    if sentence:
        ref_before, ref_after, ref_side = _split(sentence[0], pair)  # type: ignore[misc]
        win, lose = ref_before - ref_after, ref_after - ref_before
    else:
        ref_side = _pivot(q, pair)[1]  # type: ignore[index]
        win, lose = _short_sides(references, question)
    if not win:
        return None
    if side != ref_side:  # "shorter than" reads the other way round
        before, after = after, before
    if (after & win and not before & win) or (before & lose and not before & win):
        return Conflict("order", f"the reference's {' '.join(sorted(win))!r} on the other side of the comparison")
    return None


def _expects(q: str, rel: str) -> str | None:
    """Which end of ``rel`` the (folded) question asks for: ``head`` ("who was the teacher of X",
    "X's navigator"), ``tail`` ("a tributary of?"), or None (not asked, or a possessor: "whose
    ...", "which country's ...")."""
    if rel not in q:
        return None
    if re.search(r"\bwhose\b|\b(?:which|what)\s+\w+'s\b", q):
        return None
    if re.search(rf"\b{rel}\w*\s+(?:of|for|to)\s*\?", q):
        return "tail"
    if re.search(rf"\b{rel}\w*\s+(?:of|for|to)\b|'s\s+(?:\w+\s+)?{rel}", q):
        return "head"
    return None


def role(references: list[str], reply: str, question: str) -> Conflict | None:
    golds = [r for r in references if r.strip() and len(r.split()) <= 4]
    if not golds:
        return None
    q, text = fold(question), fold(reply)
    gap = rf"(?:(?!{_VERB}\b)[\w'.-]+\s+){{0,3}}?"  # up to three words, no verb among them
    for rel in relation_nouns():
        expects = _expects(q, rel)
        if expects is None:
            continue
        for gold in golds:
            g = [w for w in words(gold) if w not in STOPWORDS]
            if not g:
                continue
            tail = re.search(rf"\b{rel}\w*\s+(?:of|for|to)\s+{gap}{re.escape(g[0])}\b", text) or re.search(
                rf"\b{re.escape(g[-1])}'s\s+(?:\w+\s+)?{rel}", text
            )
            head = re.search(
                rf"\b{re.escape(g[-1])}\s+{_VERB}\s+(?:(?:a|an|the|his|her|its|their)\s+)?(?:\w+\s+)?{rel}", text
            )
            if expects == "tail" and head and not tail:
                return Conflict("order", f"{gold!r} stands where the {rel!r} is")
            if expects == "head" and tail and not head:
                return Conflict("order", f"{gold!r} stands where the {rel!r} of someone else is")
    return None


#: words that mark opposite ends of a relation when they stand next to the gold: "built by" /
#: "built for", "flows into" / "flows out of", "to the north" / "to the south"
_CONTRASTS = (
    (("by",), ("for",)),
    (("into", "to"), ("out of", "from")),
    (("north",), ("south",)),
    (("east",), ("west",)),
)


def _marker(text: str, start: int, end: int) -> set[str]:
    """The contrast words ending the two words before ``text[start:end]`` (and, for directions,
    the three after it: "Uganda to the south")."""
    before = " ".join(text[:start].split()[-2:])
    after = " ".join(re.split(r"[,;.]", text[end:], maxsplit=1)[0].split()[:3])
    found = set()
    for i, pair in enumerate(_CONTRASTS):
        for side in pair:  # a preposition binds what follows it; a direction may follow its name
            found |= {w for w in side if re.search(rf"\b{w}$", before) or (i >= 2 and re.search(rf"\b{w}$", after))}
    return found


def preposition(references: list[str], reply: str, question: str) -> Conflict | None:
    """The gold next to the other end's word: "built by Mumtaz Mahal" for "for whom was this
    built?", "flows into Lake Ladoga" for "which lake does it flow out of?", "Uganda to the
    south" for "which country borders it to the north?"."""
    q = fold(question)
    text = fold(reply)
    for pair in _CONTRASTS:
        asked = [i for i, side in enumerate(pair) if any(re.search(rf"\b{w}\b", q) for w in side)]
        if len(asked) != 1:
            continue
        want, other = set(pair[asked[0]]), set(pair[1 - asked[0]])
        for gold in references:
            g = fold(gold).strip()
            if not g or len(g.split()) > 4:
                continue
            for m in re.finditer(rf"\b{re.escape(g)}\b", text):
                near = _marker(text, m.start(), m.end())
                if near & other and not near & want:
                    return Conflict(
                        "order", f"{gold!r} beside {'/'.join(sorted(near & other))!r}, not {'/'.join(sorted(want))!r}"
                    )
    return None


CHECKS = (comparison, role, preposition)


def relation_conflicts(references: list[str], reply: str, question: str) -> list[Conflict]:
    return [c for check in CHECKS if (c := check(references, reply, question)) is not None]
