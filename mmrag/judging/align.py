"""Where a reply that restates a sentence reference departs from it: a word-by-word alignment.

Why: a document reply often copies the reference's sentence and changes one claim in place —
"Both *rear* tyres were replaced" for front, "*Food* waste collections are suspended" for garden,
"via Mill Street, the *A4310* and Station Road" for B4310, "four to one *against*" for in favour.
Word-set signals (:mod:`mmrag.judging.support`) see one unsupported word and cannot tell it from a
harmless elaboration; an alignment sees *where* it is: in the slot of a reference word that the
reply no longer has, with matched words on either side.  Likewise a reference item left out of the
middle of a restated list ("via Mill Street and Station Road"), and the reference's names put in
another order ("Station Road will be closed between Quarry Lane and Mill Street").

The alignment is difflib's longest-matching-block alignment (:class:`difflib.SequenceMatcher`)
over crude stems, case kept aside so that a name or a code ("B4310") is known as one.  These are
signals for the learned combiner, and (:func:`departure`) a reason to doubt a credited reply;
never a verdict by themselves.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from difflib import SequenceMatcher
from typing import Sequence

from mmrag.judging.keyphrase import STOPWORDS, fold, stem
from mmrag.judging.numwords import digits_for_words

ALIGN_FEATURES: tuple[str, ...] = ("al_cover", "al_subst", "al_subst_name", "al_insert", "al_drop", "al_order",
                                   "al_swap")
_TOKEN = re.compile(r"[^\W_]+(?:[.,/'][^\W_]+)*")
_SENT_END = re.compile(r"[.!?:;]\s*$")
_MIN_REF_WORDS = 4   # a shorter reference is matched whole by the rules; there is nothing to align


@dataclass(frozen=True)
class Token:
    stem: str
    name: bool      # capitalised inside a sentence, or a code mixing letters and digits
    content: bool   # not a function word
    upper: bool = False  # capitalised anywhere, a sentence's first word too


@lru_cache(maxsize=16384)
def tokens(text: str) -> tuple[Token, ...]:
    """The text's tokens, memoised: a reference and its question are aligned against every reply to
    them, by the rules (:func:`substituted_name`), the slot doubt and the combiner alike."""
    t = digits_for_words(text)
    out: list[Token] = []
    for m in _TOKEN.finditer(t):
        raw = m.group(0)
        low = fold(raw).replace(",", "")
        start = m.start() == 0 or bool(_SENT_END.search(t[:m.start()]))
        code = any(c.isdigit() for c in raw) and any(c.isalpha() for c in raw)
        out.append(Token(stem(low), code or (raw[:1].isupper() and not start), low not in STOPWORDS,
                         raw[:1].isupper() or code))
    return tuple(out)


def _content(toks: Sequence[Token], skip: set[str]) -> list[Token]:
    return [t for t in toks if t.content and t.stem not in skip]


def _disorder(ref: Sequence[str], reply: Sequence[str]) -> float:
    """1 - (longest run of the shared words in the reference's order) / (shared words)."""
    pos = {s: i for i, s in reversed(list(enumerate(ref)))}
    seq = [pos[s] for s in dict.fromkeys(reply) if s in pos]
    if len(seq) < 3:
        return 0.0
    best = [1] * len(seq)
    for i in range(len(seq)):
        for j in range(i):
            if seq[j] < seq[i]:
                best[i] = max(best[i], best[j] + 1)
    return 1.0 - max(best) / len(seq)


def _one(reply: Sequence[Token], ref: Sequence[Token], qstems: set[str]) -> dict[str, float]:
    a, b = [t.stem for t in ref], [t.stem for t in reply]
    ops = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    ref_set, reply_set = set(a), set(b)
    f = dict.fromkeys(ALIGN_FEATURES, 0.0)
    # the share of the reference's own content words (not the question's) that the reply restates in order
    matched = sum(len(_content(ref[i1:i2], qstems)) for tag, i1, i2, _, _ in ops if tag == "equal")
    f["al_cover"] = matched / (len(_content(ref, qstems)) or 1)
    subst = names = ins = drop = swap = 0
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "replace":
            # the reference's own words in each other's places ("in the lower jaw and a shorter pair in
            # the upper" for upper ... lower; "the Arc de Triomphe is in Rome and the Arch ... in Paris")
            was = {t.stem for t in ref[i1:i2] if t.content}
            now = {t.stem for t in reply[j1:j2] if t.content}
            swap += bool(was and now and was != now and was <= reply_set and now <= ref_set)
        before = k > 0 and ops[k - 1][0] == "equal"
        after = k + 1 < len(ops) and ops[k + 1][0] == "equal"
        # a question word of the reference replaced counts too ("Food waste" for the garden waste asked)
        gone = [t for t in _content(ref[i1:i2], set()) if t.stem not in reply_set]
        new = [t for t in _content(reply[j1:j2], qstems) if t.stem not in ref_set]
        if tag == "replace" and (before or after) and gone and new:
            subst += 1
            names += any(t.name for t in gone) and any(t.name for t in new)
        elif tag == "insert" and before and after and new:
            ins += 1
        elif tag == "delete" and before and after and gone:
            drop += 1
    f["al_subst"], f["al_subst_name"] = min(subst, 3) / 3.0, min(names, 2) / 2.0
    f["al_insert"], f["al_drop"] = min(ins, 3) / 3.0, min(drop, 3) / 3.0
    f["al_swap"] = min(swap, 2) / 2.0
    f["al_order"] = _disorder([t.stem for t in _content(ref, qstems)], [t.stem for t in _content(reply, qstems)])
    return f


def alignment_features(reply: str, question: str, gold: Sequence[str]) -> dict[str, float]:
    """The :data:`ALIGN_FEATURES` of a reply against its best-aligned sentence reference (all in
    [0, 1]; zeros where no reference is a sentence)."""
    best = dict.fromkeys(ALIGN_FEATURES, 0.0)
    rt = tokens(reply)
    if not rt:
        return best
    q = {t.stem for t in tokens(question)}
    for g in gold:
        ref = tokens(g)
        if len(_content(ref, set())) < _MIN_REF_WORDS:
            continue
        f = _one(rt, ref, q)
        if f["al_cover"] > best["al_cover"] or not any(best.values()):
            best = f
    return best


def departure(reply: str, question: str, gold: Sequence[str]) -> str | None:
    """Why a reply restating a reference may say something else (None if nothing departs): another
    name or code in the place of one of the reference's ("the A4310" for the B4310, "in
    Manchester" for Liverpool), or the reference's own words exchanged between two places."""
    f = alignment_features(reply, question, gold)
    if f["al_subst_name"] > 0:
        return "another name or code in the place of one of the reference's"
    if f["al_swap"] > 0:
        return "the reference's words in exchanged places"
    return None


#: a regnal or ordinal number ("II", "xiv", "3"): roman numerals up to 399, written the standard way
_ROMAN = re.compile(r"(?=[ivxlc])c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})|\d+")
_SHORT_REPLY = 8   # content words: a longer reply is an explanation, not a name given as the answer


def _variant(a: str, b: str) -> bool:
    """Two spellings of one name: an abbreviation ("St" for Saint, "Mt" for Mount) or a close
    respelling ("Tchaikovsky" / "Chaikovsky")."""
    a, b = re.sub(r"'s?$", "", a), re.sub(r"'s?$", "", b)   # a possessive: "Spain's" for Spanish
    short, long_ = sorted((a, b), key=len)
    common = len(os.path.commonprefix([a, b]))
    if len(short) <= 3 and short[:1] == long_[:1] or common >= 4 or common >= 3 and common >= 0.6 * len(short):
        return True
    return SequenceMatcher(None, a, b).ratio() >= 0.75


def substituted_name(reply: str, question: str, refs: Sequence[str]) -> str | None:
    """A short reply that keeps part of a multi-word name and puts another name in the place of the
    rest ("Chicago Symphony Orchestra" for Boston Symphony Orchestra, "Lund University" for Uppsala
    University, "The New York Times" for the New York World): the reference's kept words are often
    the ones the question already says ("which orchestra"), and do not make the reply the same name.
    Returns why, or None.  Only names: every content word of the reference is capitalised."""
    rt = tokens(reply)
    if not rt or len(_content(rt, set())) > _SHORT_REPLY:
        return None
    q = {t.stem for t in tokens(question)}
    known = {t.stem for r in refs for t in tokens(r)}
    for r in refs:
        ref = tokens(r)   # memoised: read once above
        words = _content(ref, set())
        if not 2 <= len(ref) <= 6 or len(words) < 2 or not all(t.upper for t in words):
            continue
        ops = SequenceMatcher(None, [t.stem for t in ref], [t.stem for t in rt], autojunk=False).get_opcodes()
        if not any(tag == "equal" and _content(ref[i1:i2], set()) for tag, i1, i2, _, _ in ops):
            continue
        for tag, i1, i2, j1, j2 in ops:
            # a regnal or ordinal number is said many ways ("Ramesses the Great" for Ramesses II)
            gone = [t for t in _content(ref[i1:i2], set()) if t.upper and not _ROMAN.fullmatch(t.stem)]
            new = [t for t in _content(rt[j1:j2], q) if t.upper and t.stem not in known]
            if tag == "replace" and gone and new and not any(_variant(a.stem, b.stem) for a in gone for b in new):
                return f"names {new[0].stem!r} in the place of {gone[0].stem!r} of {r!r}"
    return None


__all__ = ["ALIGN_FEATURES", "alignment_features", "departure", "substituted_name", "tokens"]
