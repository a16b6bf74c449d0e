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
#: least langdetect probability for a candidate language whose lexicon is tried
MIN_CANDIDATE = 0.3
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_ENGLISH = STOPWORDS | {"yes", "no", "not", "cannot", "can't", "don't", "doesn't", "isn't"}
_UNSPACED = ("ja", "zh-cn", "zh-tw", "ko")   # scripts without spaces between words: match inside the text


@lru_cache(maxsize=1)
def lexicon() -> dict[str, tuple[str, ...]]:
    data = json.loads(LEXICON_PATH.read_text(encoding="utf-8"))
    return {lang: tuple(fold(w) for w in ws) for lang, ws in data.items() if not lang.startswith("_")}


@lru_cache(maxsize=65536)
def languages_of(text: str) -> tuple[tuple[str, float], ...]:
    """langdetect's candidate languages for a reply with few English function words, most likely
    first; empty for English or unreadable text."""
    toks = [t.lower() for t in _WORD.findall(text)]
    if not toks or sum(t in _ENGLISH for t in toks) / len(toks) > MAX_ENGLISH_SHARE:
        return ()
    try:
        from langdetect import DetectorFactory, detect_langs
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:
        return ()
    DetectorFactory.seed = 0
    try:
        return tuple((c.lang, c.prob) for c in detect_langs(text))
    except LangDetectException:
        return ()


def language_of(text: str) -> str | None:
    """The reply's language code when it is confidently not English, else None."""
    best = languages_of(text)[:1]
    return best[0][0] if best and best[0][0] != "en" and best[0][1] >= MIN_PROBABILITY else None


def foreign_refusal(text: str, min_words: int = 3) -> str | None:
    """The language of a reply that is in another language and denies something, else None.

    A short reply leaves langdetect torn between neighbours ("Keine Ahnung, tut mir leid.": German
    0.57, Estonian 0.43), so every candidate at or above :data:`MIN_CANDIDATE` is tried with its own
    lexicon, most likely first; English never is."""
    folded = fold(text)
    toks = _WORD.findall(folded)
    for lang, prob in languages_of(text):
        if lang == "en" or prob < MIN_CANDIDATE or lang not in lexicon():
            continue
        if lang in _UNSPACED:
            if any(w in folded for w in lexicon()[lang]):
                return lang
            continue
        if len(toks) < min_words:
            continue
        if set(toks) & set(lexicon()[lang]) or any(" " in w and w in folded for w in lexicon()[lang]):
            return lang
    return None


__all__ = ["foreign_refusal", "language_of", "languages_of", "lexicon"]
