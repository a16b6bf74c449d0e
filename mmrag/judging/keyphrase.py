"""Words of an answer, and the key phrase of a sentence reference.

WebQA's answers are whole sentences ("Yes, the bridge and the tower are both made of granite."),
MMDocRAG's short answers often are too.  The official WebQA evaluator compares a reply with the
answer's *keywords* (``Keywords_A``), a field the release does not publish; we recover it the way
a reader does: the key phrase is what the reference adds to the question — its content words
minus function words and minus the words the question already holds.  "The roof of the station is
green." asked "What color is the roof of the station?" has the key phrase ``green``, so "Green." is
a complete answer.

Tokens are lower-cased, accent-folded, number words turned into digits (``word2number``) and
crudely singularised ("towers" = "tower"), so that plural and number-word variants still meet.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from mmrag.judging.numwords import digits_for_words

#: function words never part of a key phrase (closed classes: articles, auxiliaries, pronouns,
#: prepositions, conjunctions, question words)
STOPWORDS = frozenset("""
a an the this that these those there here it its it's they them their theirs he she his her him we
our us you your i me my is are was were be been being am do does did done has have had having can
could will would shall should may might must of in on at to for with by from as into onto over
under about than then and or but nor so both either neither each every some any all also too very
which what who whom whose where when why how whether if while because not no yes only just
called named known one's s 's
""".split()) - {"yes", "no", "not"}
#: words that negate what follows; "yes"/"no" are answers, handled by the rules
NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "none", "isn't", "aren't", "wasn't", "weren't",
                      "doesn't", "don't", "didn't", "hasn't", "haven't", "cannot", "can't", "isnt", "arent",
                      "wasnt", "werent", "doesnt", "dont", "didnt", "nothing", "nowhere"})
#: reporting verbs: a document "says", "shows" or "lists" its answer; the verb is not part of what it
#: says ("The sign on the boat says 'Amigos'." asks a reply for "Amigos", not for "says")
REPORTING = frozenset("""say said state stated show shown showed indicate indicated mention mentioned according
read list listed note noted record recorded report reported give given gave""".split())
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[a-z]+(?:'[a-z]+)?")


def fold(text: str) -> str:
    """Lower-case, accent-fold and straighten quotes."""
    t = unicodedata.normalize("NFKD", text.replace("\u2019", "'").replace("\u2018", "'"))
    return "".join(c for c in t if not unicodedata.combining(c)).lower()


def stem(token: str) -> str:
    """A crude singular: 'towers' -> 'tower', 'churches' -> 'church'; short words and numbers kept."""
    if token.isdigit() or len(token) <= 3 or token.endswith(("ss", "us", "is")):
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("ches", "shes", "xes", "oes")):
        return token[:-2]
    if token.endswith("s"):
        return token[:-1]
    return token


@lru_cache(maxsize=65536)
def words(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text``: folded, number words as digits, "1,889" -> "1889"."""
    t = fold(digits_for_words(text))
    return tuple(tok.replace(",", "") for tok in _TOKEN.findall(t))


def stems(text: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words(text))


def content_stems(text: str) -> list[str]:
    return [stem(w) for w in words(text) if w not in STOPWORDS]


@lru_cache(maxsize=16384)
def key_phrase(question: str, reference: str) -> tuple[str, ...]:
    """Stems the reference adds to the question (order kept, duplicates dropped), reporting verbs
    left out when anything else is left.  Falls back to all of the reference's content words when
    the question already holds every one of them (a reply must then restate the reference)."""
    q = set(stems(question))
    seen: list[str] = []
    for s in content_stems(reference):
        if s not in q and s not in seen:
            seen.append(s)
    said = [s for s in seen if s not in REPORTING]
    if said:
        return tuple(said)
    if seen:
        return tuple(seen)
    return tuple(dict.fromkeys(content_stems(reference)))


def is_sentence(reference: str) -> bool:
    """A reference of four or more words is a sentence to take the key phrase of, not a name."""
    return len(words(reference)) >= 4


def negated_at(tokens: tuple[str, ...] | list[str], index: int, window: int = 3) -> bool:
    """Whether a negator stands within ``window`` tokens before ``index``."""
    return any(t in NEGATORS for t in tokens[max(0, index - window):index])
