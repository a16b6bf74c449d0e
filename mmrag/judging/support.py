"""How much of a reply the reference supports, and whether the reply is only vaguer than it.

Why: a sentence reference ("The payslip shows a net pay of $3,482.17 for March, after deductions
of $1,017.83 from a gross salary of $4,500.00.") holds far more than the answer, so *recall* of its
words punishes a bare "$3,482.17".  What tells a short right answer from a wrong one is
*precision*: every content word and number the reply adds to the question is found in the
reference ("1823, in London." — both there; "Change in body weight at week 26." — "body",
"weight" are not).  And what the labelling rules call a deflection rather than a hallucination is
often a reply that is only *vaguer* than the gold: a decade for a year ("In the 1950s" for 1954), a
bound for a value ("more than ten tonnes" for 18,240 kg), a continent for a country ("Central
Asia" for Turkmenistan), "some kind of" for a breed, a rounded amount ("roughly ninety thousand
euros" for €87,905) or a grade instead of a figure ("slightly high" for 6.4 mmol/L).  These are signals for the learned combiner
(:mod:`mmrag.judging.combiner`), never verdicts by themselves.

The vague terms are data (``data/vague_terms.json``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from mmrag.judging.keyphrase import content_stems, fold

VAGUE_PATH = Path(__file__).parent / "data" / "vague_terms.json"
SUPPORT_FEATURES: tuple[str, ...] = ("support", "unsupported", "supported_any", "vague_decade", "vague_bound",
                                     "vague_region", "vague_kind", "vague_approx", "vague_grade")
# symbols that words() drops, spelled as the words replies use for them
_SYMBOLS = (("€", " euro "), ("$", " dollar "), ("£", " pound "), ("%", " percent "), ("°", " degree "),
            ("per cent", " percent "), ("km²", " square kilometre "))
# words that say where an answer comes from, not what it is
_DISCOURSE = frozenset("""answer reply document documents text image picture photo passage passages page report
according show shows shown state states stated say says said indicate indicates list lists listed mention
mentions mentioned based see seen look looks like appear appears seem seems note notes record records""".split())
_DECADE = re.compile(r"\b(1\d|20)(\d)0s\b|\b(\d{1,2})(?:st|nd|rd|th) century\b", re.I)
_DIGIT = re.compile(r"\d")
_YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")


@lru_cache(maxsize=1)
def vague_terms() -> dict[str, tuple[str, ...]]:
    data = json.loads(VAGUE_PATH.read_text(encoding="utf-8"))
    return {k: tuple(fold(t) for t in v) for k, v in data.items() if not k.startswith("_")}


def _spell(text: str) -> str:
    t = text
    for sym, word in _SYMBOLS:
        t = t.replace(sym, word)
    return t


def _stems(text: str) -> list[str]:
    return content_stems(_spell(text))


@lru_cache(maxsize=1)
def _vague_patterns() -> dict[str, re.Pattern[str]]:
    """One pattern per kind of vague term, each term a whole word or phrase (compiled once: the
    combiner reads these for every undecided reply)."""
    return {k: re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ts)) + r")(?![\w-])")
            for k, ts in vague_terms().items()}


def _in_decade(reply: str, golds: Sequence[str]) -> bool:
    years = [int(y) for g in golds for y in _YEAR.findall(g)]
    for m in _DECADE.finditer(reply):
        if m.group(1):
            lo = int(m.group(1) + m.group(2) + "0")
            span = (lo, lo + 9)
        else:
            c = int(m.group(3))
            span = ((c - 1) * 100, c * 100 - 1)
        if any(span[0] <= y <= span[1] for y in years):
            return True
    return False


def support_features(reply: str, question: str, gold: Sequence[str]) -> dict[str, float]:
    """The :data:`SUPPORT_FEATURES` of one reply (all in [0, 1])."""
    f = dict.fromkeys(SUPPORT_FEATURES, 0.0)
    golds = [g for g in gold if g.strip()]
    if not golds:
        return f
    q = set(_stems(question))
    ref = {s for g in golds for s in _stems(g)}
    ref_pre = {s[:5] for s in ref if len(s) >= 5}
    own = [s for s in dict.fromkeys(_stems(reply)) if s not in q and s not in _DISCOURSE]
    hits = [s for s in own if s in ref or (len(s) >= 5 and s[:5] in ref_pre)]
    if own:
        f["support"] = len(hits) / len(own)
        f["unsupported"] = min(len(own) - len(hits), 4) / 4.0
        f["supported_any"] = float(bool(hits))
    folded, gfold = fold(reply), fold(" ".join(golds))
    vague = _vague_patterns()
    f["vague_decade"] = float(_in_decade(reply, golds))
    f["vague_bound"] = float(bool(vague["bounds"].search(folded)) and not vague["bounds"].search(gfold))
    f["vague_region"] = float(bool(vague["regions"].search(folded)) and not vague["regions"].search(gfold))
    f["vague_kind"] = float(bool(vague["kinds"].search(folded)))
    # a rounded or graded value where the gold states one: "roughly ninety thousand", "slightly high"
    f["vague_approx"] = float(bool(vague["approximate"].search(folded)) and not vague["approximate"].search(gfold))
    f["vague_grade"] = float(bool(vague["qualitative"].search(folded)) and not _DIGIT.search(reply)
                             and bool(_DIGIT.search(" ".join(golds))))
    return f


def vague_amount(text: str) -> bool:
    """Whether ``text`` gives an amount only as a bound or a rough figure ("several hundred
    kilograms", "well over fifty percent", "roughly ninety thousand"): a number the InfoSeek rule
    reads from such a reply is not the reply's claim of a value."""
    folded, vague = fold(text), _vague_patterns()
    return bool(vague["bounds"].search(folded) or vague["approximate"].search(folded))


def unsupported_claim(reply: str, question: str, gold: Sequence[str]) -> str | None:
    """Why a reply credited against a sentence reference may still add a wrong claim: a content
    word that neither the question nor the reference holds ("12,480 kg *gross*" for a net mass, "a
    red *motorcycle*" for a red bicycle).  None when every word is supported or the reference is
    short (matched whole).  The combiner then decides; a harmless extra word keeps the credit."""
    golds = [g for g in gold if g.strip()]
    if not golds or max(len(_stems(g)) for g in golds) <= 3:
        return None
    f = support_features(reply, question, golds)
    return "a word the reference does not support" if f["unsupported"] > 0 else None


__all__ = ["SUPPORT_FEATURES", "support_features", "unsupported_claim", "vague_amount", "vague_terms"]
