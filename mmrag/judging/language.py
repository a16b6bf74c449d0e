"""Refusals written in another language, apart from the English patterns of :mod:`.refusal` because
they need a language identifier, not a regular expression.

A maintained language identifier (``langdetect``, seeded) names the language, and that language's
negation words (``lexicon.json`` ``negation``) say whether the reply denies something; a reply in
another language that denies something and carries no reference words is a refusal (the matchers
run first on the reply's own words).  Short English replies are often mistaken for another
language, so a reply counts as foreign only when few of its words are English function words.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mmrag.judging.lexicon import STOPWORDS, fold, negation_languages, negation_words

#: least langdetect probability for the top language, and most share of English function words
MIN_PROBABILITY = 0.6
MAX_ENGLISH_SHARE = 0.2
#: least langdetect probability for a candidate language whose lexicon is tried
MIN_CANDIDATE = 0.3
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_ENGLISH = STOPWORDS | {"yes", "no", "not", "cannot", "can't", "don't", "doesn't", "isn't"}
_UNSPACED = ("ja", "zh-cn", "zh-tw", "ko")  # scripts without spaces between words: match inside the text


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


@lru_cache(maxsize=1)
def _all_negations() -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
    """Every lexicon language's negation words: (single words, phrases, words of unspaced scripts)."""
    spaced = {w for lang in negation_languages() if lang not in _UNSPACED for w in negation_words(lang)}
    unspaced = tuple(w for lang in _UNSPACED for w in negation_words(lang))
    return frozenset(w for w in spaced if " " not in w), tuple(w for w in spaced if " " in w), unspaced


def _may_deny(folded: str, toks: list[str], min_words: int) -> bool:
    """Whether some language's negation word is in the reply: the cheap test that spares the
    langdetect call (the slowest step of the judge) for the replies that could never pass it."""
    words, phrases, unspaced = _all_negations()
    if any(w in folded for w in unspaced):
        return True
    return len(toks) >= min_words and (bool(words.intersection(toks)) or any(p in folded for p in phrases))


def foreign_refusal(text: str, min_words: int = 3) -> str | None:
    """The language of a reply that is in another language and denies something, else None.

    A short reply leaves langdetect torn between neighbours ("Keine Ahnung, tut mir leid.": German
    0.57, Estonian 0.43), so every candidate at or above :data:`MIN_CANDIDATE` is tried with its own
    lexicon, most likely first; English never is."""
    folded = fold(text)
    toks = _WORD.findall(folded)
    if not _may_deny(folded, toks, min_words):
        return None  # no language's negation word is there: langdetect could not change that
    for lang, prob in languages_of(text):
        neg = negation_words(lang)
        if lang == "en" or prob < MIN_CANDIDATE or not neg:
            continue
        if lang in _UNSPACED:
            if any(w in folded for w in neg):
                return lang
        elif len(toks) >= min_words and (set(toks) & set(neg) or any(" " in w and w in folded for w in neg)):
            return lang
    return None
