"""Refusals written in another language than the question.

Why: multilingual VLMs (Qwen-VL, InternVL, Gemini) sometimes answer an English question in German,
Spanish or Japanese, and what they most often say that way is that they cannot answer ("Der
relevante Abschnitt fehlt in den bereitgestellten Seiten.").  MiniLM and the English refusal
patterns read none of it, and a phrase list per language never ends.  Instead: a maintained
language identifier (``langdetect``, seeded so that it is deterministic) says which language the
reply is in, and a closed class of that language's negation and absence words
(``data/negation_words.json``: "nicht", "kein", "fehlt", "aucun", "ningún", "ない"…) says whether it
denies something.  A reply in another language that denies something is read as a refusal: an
answer would carry the reference's own words or numbers, which the callers check first.

Short English replies are often mistaken for another language ("Raman won it." reads as
Tagalog), so a reply counts as foreign only when langdetect is confident *and* few of its words
are English function words.  Without ``langdetect`` installed nothing is foreign.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from mmrag.judging.keyphrase import STOPWORDS, fold

LEXICON_PATH = Path(__file__).parent / "data" / "negation_words.json"
#: least langdetect probability for the top language, and most share of English function words
MIN_PROBABILITY = 0.6
MAX_ENGLISH_SHARE = 0.2
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_ENGLISH = STOPWORDS | {"yes", "no", "not", "cannot", "can't", "don't", "doesn't", "isn't"}
_UNSPACED = ("ja", "zh-cn", "zh-tw", "ko")   # scripts without spaces between words: match inside the text


@lru_cache(maxsize=1)
def lexicon() -> dict[str, tuple[str, ...]]:
    data = json.loads(LEXICON_PATH.read_text(encoding="utf-8"))
    return {lang: tuple(fold(w) for w in ws) for lang, ws in data.items() if not lang.startswith("_")}


@lru_cache(maxsize=65536)
def language_of(text: str) -> str | None:
    """The reply's language code when it is confidently not English, else None."""
    toks = [t.lower() for t in _WORD.findall(text)]
    if not toks:
        return None
    if sum(t in _ENGLISH for t in toks) / len(toks) > MAX_ENGLISH_SHARE:
        return None
    try:
        from langdetect import DetectorFactory, detect_langs
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:
        return None
    DetectorFactory.seed = 0
    try:
        best = detect_langs(text)[0]
    except LangDetectException:
        return None
    return best.lang if best.lang != "en" and best.prob >= MIN_PROBABILITY else None


def foreign_refusal(text: str, min_words: int = 3) -> str | None:
    """The language of a reply that is in another language and denies something, else None."""
    lang = language_of(text)
    if lang is None or lang not in lexicon():
        return None
    folded = fold(text)
    if lang in _UNSPACED:
        return lang if any(w in folded for w in lexicon()[lang]) else None
    toks = _WORD.findall(folded)
    if len(toks) < min_words:
        return None
    found = set(toks) & set(lexicon()[lang]) or {w for w in lexicon()[lang] if " " in w and w in folded}
    return lang if found else None


__all__ = ["foreign_refusal", "language_of", "lexicon"]
