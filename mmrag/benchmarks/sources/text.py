"""Passages and gold selection for the sources whose evidence is a whole Wikipedia page.

InfoSeek and ViQuAE point at an *entity* (a Wikidata id), not at a passage: the gold evidence is
"the entity's page".  A page is far too long to be one context, so it is cut into passages and the
gold contexts are chosen among them:

* ``gold_policy="answer"`` (default): the passages that contain an accepted answer (SQuAD-style
  normalised match, as InfoSeek's own scorer normalises) or, for numeric answers, a number inside
  one of the accepted ranges; at most ``max_gold`` of them, in page order.  When no passage
  matches, the page's first passage (the lead, which usually describes the entity) is the gold and
  the sample's ``metadata.gold_match`` says ``"lead"`` instead of ``"answer"`` so that curation can
  drop or audit such samples.
* ``gold_policy="page"``: every passage of the page is gold (faithful to "the page is the
  evidence", but yields long oracle contexts).

Every passage of the page is written to the knowledge base with the entity id, so the negative
miner (which excludes the gold entity) never offers another piece of the same page as a negative.
"""

from __future__ import annotations

import re
import string
from typing import Literal

GoldPolicy = Literal["answer", "page"]

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def normalize(text: str) -> str:
    """Lower-case, drop punctuation and English articles, squeeze spaces (InfoSeek/SQuAD style)."""
    t = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", t).split())


def numbers_in(text: str) -> list[float]:
    out = []
    for m in _NUMBER.finditer(text):
        tok = m.group(0).replace(",", "")
        try:
            out.append(float(tok))
        except ValueError:
            continue
    return out


def split_passages(text: str, max_words: int) -> list[str]:
    """Cut a page into passages of at most ``max_words`` words, keeping paragraphs whole when they
    fit: consecutive paragraphs are packed together, a longer paragraph is cut into windows."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n+", text)]
    passages: list[str] = []
    cur: list[str] = []
    n = 0
    for para in paragraphs:
        words = para.split()
        if not words:
            continue
        if len(words) > max_words:
            if cur:
                passages.append(" ".join(cur))
                cur, n = [], 0
            for i in range(0, len(words), max_words):
                passages.append(" ".join(words[i : i + max_words]))
            continue
        if n + len(words) > max_words and cur:
            passages.append(" ".join(cur))
            cur, n = [], 0
        cur.append(para)
        n += len(words)
    if cur:
        passages.append(" ".join(cur))
    return passages


def passage_matches(passage: str, answers: list[str], ranges: list[tuple[float, float]]) -> bool:
    norm = f" {normalize(passage)} "
    for a in answers:
        na = normalize(a)
        if na and f" {na} " in norm:
            return True
    if ranges:
        for x in numbers_in(passage):
            if any(lo <= x <= hi for lo, hi in ranges):
                return True
    return False


def select_gold(
    passages: list[str], answers: list[str], ranges: list[tuple[float, float]], policy: GoldPolicy, max_gold: int
) -> tuple[list[int], str]:
    """Indices of the gold passages and how they were chosen (``answer`` | ``lead`` | ``page``)."""
    if not passages:
        return [], "none"
    if policy == "page":
        return list(range(len(passages))), "page"
    hits = [i for i, p in enumerate(passages) if passage_matches(p, answers, ranges)]
    if hits:
        return hits[:max_gold], "answer"
    return [0], "lead"
