"""Slot signals for sentence references: which parts of what the reference adds the reply carries,
and where it says something else in the same slot.

Why: a sentence reference ("The press release says the new stadium will seat 62,500 spectators.")
is mostly a restatement of the question; what a reply must carry is the *slot filler* (the number,
the list items, the direction of a trend).  Word-overlap recall over the whole sentence punishes
a bare "62,500" and credits "Dark mode and a plugin API" for one of two features.  These signals are
read by the learned combiner (:mod:`mmrag.judging.combiner`), never used as rules by themselves:

- numbers: the share of the reference's own numbers (those not in the question) that the reply
  states, and whether the reply states a number that is in neither (``1:50,000`` for ``1:25,000``,
  ``4471-2039-58`` for ``4471-2093-58``), after thousands separators and scale words are dropped;
- lists: a reference with "and" / "or" split there and at commas into items (each item: its words that are not
  in the question); the share of items the reply carries, and how many of the reply's own items
  share no word with the reference (an extra, unsupported claim: "Rosewood or metal");
- direction: a trend or comparison word (rose / fell, higher / lower, doubles / halves, before /
  after) whose sign differs from the reference's, combined with the order of the shared anchors
  ("fell from 18% to 12%" against "rose from 12% to 18%"; for a comparison "X is shorter than Y"
  against "Y is taller than X", a flipped word *and* flipped order agree);
- binding: the reference's values given to the other one of two named entities ("LDL 1.1 and HDL
  3.9" for "LDL 3.9 and HDL 1.1").
"""

from __future__ import annotations

import re
from typing import Sequence

from mmrag.judging.align import departure
from mmrag.judging.keyphrase import NEGATORS, STOPWORDS, stem, words
from mmrag.judging.numwords import MONTH_NAMES, digits_for_words

_NUMBER = re.compile(r"\d+(?:[.,:/\-]\d+)*")
_UP = frozenset("rose rise rises rising risen increase increased increases increasing grew grow grows growing "
                "higher more larger bigger taller longer greater up gained gain doubles doubled double climbed "
                "before earlier older faster heavier above exceeds exceeded improved improves".split())
_DOWN = frozenset("fell fall falls falling fallen decrease decreased decreases decreasing declined decline declines "
                  "declining shrank shrinks lower less smaller shorter fewer down lost loss halves halved half "
                  "dropped drop drops cut after later younger slower lighter below worse worsened reduced".split())
_SPLIT = re.compile(r",(?!\d)|\band\b|\bor\b|\bas well as\b", re.I)
_LISTED = re.compile(r"\b(?:and|or|as well as)\b", re.I)

SLOT_FEATURES: tuple[str, ...] = ("num_cov", "num_alien", "num_only_ref", "list_cov", "list_extra",
                                  "dir_conflict", "sentence_ref", "num_missing", "bind_conflict", "num_slot", "num_near")


def numbers(text: str) -> list[str]:
    """Numbers as written, thousands separators dropped ("62,500" -> "62500", "4.1" stays)."""
    out = []
    for m in _NUMBER.finditer(text):
        tok = m.group(0)
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", tok):
            tok = tok.replace(",", "")
        out.append(tok.rstrip(".,:/-"))
    return out


def direction(toks: Sequence[str]) -> int:
    """+1 when a text says more / up / earlier, -1 when less / down / later, 0 when neither or both."""
    up = sum(t in _UP for t in toks)
    down = sum(t in _DOWN for t in toks)
    return (up > down) - (down > up)


def _reversed(ref_toks: Sequence[str], reply_toks: Sequence[str], anchors: set[str]) -> bool | None:
    """Whether the shared anchors come in the opposite order (None when fewer than two)."""
    first_r = {t: i for i, t in reversed(list(enumerate(ref_toks))) if t in anchors}
    first_p = {t: i for i, t in reversed(list(enumerate(reply_toks))) if t in anchors}
    common = sorted(set(first_r) & set(first_p), key=first_r.get)
    if len(common) < 2:
        return None
    pairs = [(a, b) for i, a in enumerate(common) for b in common[i + 1:]]
    flipped = sum(first_p[a] > first_p[b] for a, b in pairs)
    return flipped * 2 > len(pairs)


def _items(text: str, skip: set[str]) -> list[set[str]]:
    parts = [{stem(w) for w in words(p) if w not in STOPWORDS} - skip for p in _SPLIT.split(text)]
    return [p for p in parts if p]


_CLOCK = re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s?m\b\.?", re.I)
_LEADING_ZERO = re.compile(r"\b0(\d):(\d{2})\b")
_LIST_MARK = re.compile(r"(?m)^\s*\d{1,2}[.)]\s+")
_WORD_HYPHEN = re.compile(r"(?<=[A-Za-z])-(?=[A-Za-z])")
_RATIO = re.compile(r"^\d+/\d+$")   # "94/100", "3/4": its two numbers ("94 out of 100")
_MONTHS = tuple(m[:3] for m in MONTH_NAMES)
_FULL = "|".join(MONTH_NAMES)
# a month after a day number or before a year is a number ("14 March 2025" = 14/03/2025); "may" alone
# before a year stays a word ("it may 2025" is rare, "may be 2025" common)
_MONTH = re.compile(r"(?<=\d\s)(" + _FULL + "|" + "|".join(_MONTHS) + r"|sept)\b\.?|"
                    r"\b(" + _FULL.replace("may|", "") + r")(?=\s+\d{4}\b)", re.I)
_DATE = re.compile(r"^\d{1,2}[/.\-]\d{1,2}[/.\-]\d{2,4}$|^\d{4}-\d{1,2}-\d{1,2}$")   # d/m/y, ISO y-m-d


def _clock(m: re.Match) -> str:
    h = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "p" else 0)
    return f"{h}:{m.group(2) or '00'}"


def spoken_numbers(text: str) -> list[str]:
    """:func:`numbers` after number words become digits ("four sails" -> "4") and clock times are
    written one way ("6:45 am", "06:45" -> "6:45"; "2pm" -> "14:00"); a d/m/y date counts as its parts."""
    t = _LIST_MARK.sub(" ", _WORD_HYPHEN.sub(" ", text))   # "1. Stop the pump" lists; "two-year" = "two year"
    t = _LEADING_ZERO.sub(r"\1:\2", _CLOCK.sub(_clock, digits_for_words(t)))
    out: list[str] = []
    for tok in numbers(_MONTH.sub(lambda m: str(_MONTHS.index((m.group(1) or m.group(2))[:3].lower()) + 1), t)):
        out.extend(str(int(p)) for p in re.split(r"[/.\-]", tok)) if _DATE.match(tok) or _RATIO.match(tok) \
            else out.append(tok)
    return out


def _value(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None


def known(tok: str, pool: set[str]) -> bool:
    """Whether a reply's number is one of ``pool``'s, exactly or as the same value at another scale
    ("1,300" m for 1.3 km, "18.24" t for 18,240 kg, "1,800,000" for 1.8 million), or a clock time
    written with a dot ("22.50" for 22:50).  Small whole numbers
    are not rescaled ("2" is not "2,000")."""
    if tok in pool or tok.replace(".", ":") in pool:   # "22.50" for the clock time 22:50
        return True
    v = _value(tok)
    if v is None:
        return False
    for g in pool:
        w = _value(g)
        if w is None:
            continue
        if abs(v - w) <= 1e-9 * max(abs(v), 1.0):
            return True
        if ("." in tok or "." in g or min(abs(v), abs(w)) >= 100) and v and w and any(
                abs(v - w * f) <= 0.005 * abs(v) for f in (1e3, 1e-3, 1e6, 1e-6)):
            return True
    return False


_NAME = re.compile(r"\b[A-Z][\w'-]*")


_CLAUSE = re.compile(r",(?!\d{3})|[;:|()\n]|(?<!\d)\.(?!\d)|\b(?:and|but|while|whereas|versus|vs|than|compared with)\b", re.I)


def _bindings(text: str, entities: set[str], values: set[str]) -> dict[str, frozenset[str]]:
    """Each value's entities: the entities named in the same clause (clauses end at punctuation
    and at and / but / while / than ...), for the values whose clause names any."""
    out: dict[str, frozenset[str]] = {}
    for clause in _CLAUSE.split(text):
        toks = {stem(w) for w in words(clause or "")}
        ents = frozenset(toks & entities)
        for v in toks & values:
            if ents and v not in out:
                out[v] = ents
    return out


def bind_conflict(reply: str, question: str, ref: str) -> bool:
    """Whether the reply gives the reference's values to the other entity ("LDL 1.1 and HDL 3.9"
    for "LDL was 3.9 and HDL 1.1"; "the Haflinger is black" where the Friesian is).  Entities are
    names (capitalised in the reference, once) that both texts share, at least two; values are the
    other words and numbers both share that the question lacks.  A value conflicts when its clause
    names entities in both texts and none in common."""
    counts: dict[str, int] = {}
    for m in _NAME.finditer(ref):
        for w in words(m.group(0)):
            counts[stem(w)] = counts.get(stem(w), 0) + 1
    ents = {w for w, n in counts.items() if n == 1} - STOPWORDS
    rt, pt = {stem(w) for w in words(ref)}, {stem(w) for w in words(reply)}
    ents &= pt
    if len(ents) < 2:
        return False
    values = (rt & pt) - ents - STOPWORDS - {stem(w) for w in words(question)}
    a, b = _bindings(ref, ents, values), _bindings(reply, ents, values)
    return any(not a[k] & b[k] for k in a.keys() & b.keys())


def answer_numbers(question: str, ref: str, window: int = 6) -> tuple[set[str], set[str]]:
    """The reference's own numbers split into the one(s) that answer the question and the others.
    A document sentence carries several figures ("four removals in Q3, compared with one in Q2");
    the answer's figure is the one whose neighbourhood (``window`` words before, half that after)
    holds the most of the question's content words, ties going to the earliest."""
    q = {stem(w) for w in words(question) if w not in STOPWORDS}
    qnums = set(spoken_numbers(question))
    toks = [stem(w) for w in words(ref)]
    scored: list[tuple[int, int, str]] = []
    for i, t in enumerate(toks):
        if t[:1].isdigit() and not known(t, qnums):
            near = toks[max(0, i - window):i] + toks[i + 1:i + 1 + window // 2]
            scored.append((-sum(w in q for w in near), i, t))
    if not scored:
        return set(), set()
    best = min(scored)[0]
    top = {t for sc, _, t in scored if sc == best}
    return top, {t for _, _, t in scored} - top


def slot_features(reply: str, question: str, gold: Sequence[str]) -> dict[str, float]:
    """The :data:`SLOT_FEATURES` of one reply (all in [0, 1] or {-1, 0, 1}); best over gold texts."""
    f = dict.fromkeys(SLOT_FEATURES, 0.0)
    golds = [g for g in gold if g.strip()]
    if not golds:
        return f
    ref = max(golds, key=lambda g: len(words(g)))
    f["sentence_ref"] = float(len(words(ref)) > 5)
    qnums, rnums = set(spoken_numbers(question)), set(spoken_numbers(reply))
    gnums = {n for g in golds for n in spoken_numbers(g)}
    own = {n for n in gnums if not known(n, qnums)}
    said = {n for n in rnums if not known(n, qnums)}
    if own:
        f["num_cov"] = sum(any(known(r, {n}) for r in said) for n in own) / len(own)
    # "one" and "two" are as often words ("one is orange", "of the two") as counts: never alien
    f["num_alien"] = float(any(not known(n, gnums) for n in said - {"1", "2"}))
    f["num_only_ref"] = float(bool(said) and all(known(n, gnums) for n in said))
    f["num_missing"] = float(bool(own) and not said)   # the answer is a figure and the reply gives none
    # a rounded figure near the gold ("roughly ninety thousand" for 87,905) is vaguer, one far off wrong
    gv = [v for v in map(_value, own) if v]
    f["num_near"] = float(any(abs(v - g) <= 0.15 * abs(g) for v in map(_value, said) if v is not None
                              for g in gv))
    qstems = {stem(w) for w in words(question)}
    items = _items(ref, qstems) if _LISTED.search(ref) else []  # a list has a conjunction, not just commas
    if len(items) >= 2:
        rs = {stem(w) for w in words(reply)}
        f["list_cov"] = sum(bool(it & rs) for it in items) / len(items)
    gstems = {stem(w) for g in golds for w in words(g)}
    f["list_extra"] = min(sum(not (it & gstems) for it in _items(reply, qstems)), 2) / 2.0
    f["bind_conflict"] = float(bind_conflict(reply, question, ref))
    top, rest = answer_numbers(question, ref)
    if said and top | rest:  # 1: the answer's figure; -1: only another figure of the reference
        f["num_slot"] = 1.0 if any(known(n, top) for n in said) else -1.0 if any(known(n, rest) for n in said) else 0.0
    rt, pt = words(ref), words(reply)
    dr, dp = direction(rt), direction(pt)
    anchors = ({w for w in rt if w not in STOPWORDS and w not in _UP | _DOWN}
               & {w for w in pt if w not in STOPWORDS})
    rev = _reversed(rt, pt, anchors)
    if "than" in rt and "than" in pt and dr and dp and rev is not None:
        f["dir_conflict"] = float((dr != dp) != rev)   # "Y is shorter than X" == "X is taller than Y"
    elif dr and dp:
        f["dir_conflict"] = float(dr != dp or bool(rev and own & said))
    elif rev and len(own & said) >= 2:
        f["dir_conflict"] = 1.0  # the same numbers, in the other order
    return f


_NEGATED = NEGATORS | {"non"}   # "non-refundable" negates as "not" does


def yes_no_lead(gold: Sequence[str]) -> bool:
    """Whether the reference opens with its yes/no answer ("No, sea otters ..."): that "no" is the
    answer, not a negation a reply must repeat."""
    return any(words(g)[:1] in (("no",), ("yes",)) for g in gold)


def doubt(reply: str, question: str, gold: Sequence[str]) -> str | None:
    """Why a reply the rules credited may still be wrong (None when nothing is off): a trend or
    comparison the other way round, a number in neither the reference nor the question, a value
    bound to the other entity, another of the reference's figures than the one asked about, a
    negation the reference lacks, another name or code where the reference has one or its words
    exchanged, part of a listed answer only, or an item the reference does not support.  Such a
    verdict goes to the combiner instead of standing as decided: a right answer plus a wrong claim
    is a hallucination."""
    f = slot_features(reply, question, gold)
    if not f["sentence_ref"]:  # a short reference is matched whole: the rules' call stands
        return None
    if f["dir_conflict"]:
        return "direction or order differs from the reference"
    if f["num_alien"]:
        return "a number the reference does not give"
    if f["bind_conflict"]:
        return "a value given to another entity than in the reference"
    if f["num_slot"] < 0:
        return "another of the reference's figures, not the one asked about"
    if moved := departure(reply, question, gold):
        return moved
    said_neg = bool(set(words(reply)) & _NEGATED)
    gold_neg = bool({w for g in gold for w in words(g)} & _NEGATED)
    if said_neg != gold_neg and not (gold_neg and yes_no_lead(gold)):
        return "a negation the reference does not have" if said_neg else "the reference's negation left out"
    if 0 < f["list_cov"] < 1:
        return "part of the reference's list only"
    if f["list_extra"]:
        return "an item the reference does not support"
    return None


__all__ = ["SLOT_FEATURES", "doubt", "numbers", "slot_features"]
