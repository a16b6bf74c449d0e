"""The judge's one lexicon: words, sentences, names, hedges, negators and closed word classes.

Every step of the judge reads text through these functions, so that "a negator", "a hedge", "a
sentence" or "a name" means the same thing in the refusal step, the matchers and the
contradiction checks.  Closed classes and opposite pairs are data (``data/lexicon.json``).

Tokens (:func:`words`) are lower-cased, accent-folded, with number words read as digits
(``word2number``) and "1,889" as "1889"; :func:`stem` is a crude singular ("towers" = "tower").
Unicode format characters (zero-width space and joiner, soft hyphen, BOM) are dropped first
(:func:`clean`), so they never split or hide a word.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from mmrag.judging.numwords import digits_for_words

DATA = Path(__file__).parent / "data" / "lexicon.json"

#: function words (articles, auxiliaries, pronouns, prepositions, conjunctions, question words)
STOPWORDS = frozenset(
    """
a an the this that these those there here it its it's they them their theirs he she his her him we
our us you your i me my is are was were be been being am do does did done has have had having can
could will would shall should may might must of in on at to for with by from as into onto over
under about than then and or but nor so both either neither each every some any all also too very
which what who whom whose where when why how whether if while because only just
called named known one's s 's
""".split()
)
#: words that negate what follows ("yes"/"no" are answers, read by the matchers)
NEGATORS = frozenset(
    """
not no never neither nor none isn't aren't wasn't weren't doesn't don't didn't hasn't haven't cannot can't
isnt arent wasnt werent doesnt dont didnt nothing nowhere without
""".split()
)
#: reporting verbs: a document "says" its answer; the verb is not part of what it says
REPORTING = frozenset(
    """say says said state states stated show shows shown showed indicate indicates indicated
mention mentions mentioned according read reads list lists listed note noted record recorded report reported
give gives given gave""".split()
)
YES_NO = {
    "yes": "yes",
    "no": "no",
    "yeah": "yes",
    "yep": "yes",
    "yup": "yes",
    "yea": "yes",
    "aye": "yes",
    "nope": "no",
    "nah": "no",
    "correct": "yes",
    "true": "yes",
    "false": "no",
}
#: words that point at the evidence, not at the world ("according to the balance sheet in image3"):
#: a reply that cites where it read the reference's figure adds no claim
EVIDENCE_WORDS = frozenset(
    (
        "according based report reports reported document documents passage passages text image images "
        "table tables page pages source sources figure chart note notes section shows show states stated "
        "lists listed provided context excerpt excerpts quote quotes caption retrieved summary mentioned "
        "indicates indicated says say given gives"
    ).split()
)
#: words that restate or total a figure without changing the claim ("exactly", "in total", "each")
MINOR_WORDS = frozenset("exactly plus incl including whole total totalling overall each every respectively".split())
#: a second candidate offered beside the first ("the Vltava, or possibly the Elbe")
ALTERNATIVE = re.compile(
    r"\bor\s+(?:possibly|perhaps|maybe|probably)\b|\bor it (?:could|might|may) (?:also )?be\b|"
    r"\bor (?:else )?(?:it'?s|it is) (?:possibly|perhaps|maybe)\b|"
    r"\b(?:al)?though (?:some|other|many) (?:sources|references|accounts) (?:say|give|list|put|credit|state)\b",
    re.I,
)
#: phrases that introduce another name of the same thing (an alias is not a rival answer)
ALIAS = re.compile(
    r"\b(?:also (?:called|known as|named|spelled|spelt|written)|a\.?k\.?a\.?|otherwise known as|"
    r"better known as|known locally as|or simply|i\.e\.|that is|in (?:\w+ ){0,2}called|"
    r"sometimes called|formerly|originally|short for|in full)\b",
    re.I,
)

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[a-z]+(?:'[a-z]+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+|;\s*")
_CLAUSE = re.compile(
    r",\s*(?=(?:but|however|although|though|yet|so|whereas)\b)|"
    r"\s+(?=(?:but|however|although|though|whereas)\b)"
)
_QUOTES = str.maketrans(
    {
        "\u2019": "'",
        "\u2018": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u00a0": " ",
        "\u2013": "-",
        "\u2014": " - ",
        "\u2212": "-",
    }
)
_MARKDOWN = re.compile(
    r"\*\*|__|`+|^#+\s*|^\s*[-*+]\s+|^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*$|"
    r"(?<!\w)\*(?=\w)|(?<=[\w.)])\*(?!\w)",
    re.M,
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+)")


def clean(text: str) -> str:
    """Format characters dropped (category Cf: zero-width space/joiner, soft hyphen, BOM), quotes
    and dashes straightened, markdown markers and table rules removed, spaces collapsed per line."""
    t = "".join(c for c in text if unicodedata.category(c) != "Cf").translate(_QUOTES)
    t = _MARKDOWN.sub("", t).replace("|", " ; ")
    return "\n".join(" ".join(line.split()) for line in t.splitlines() if line.strip())


@lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """Lower-case, accent-fold and straighten quotes."""
    t = unicodedata.normalize("NFKD", text.translate(_QUOTES))
    return "".join(c for c in t if not unicodedata.combining(c) and unicodedata.category(c) != "Cf").lower()


def stem(token: str) -> str:
    """A crude singular: 'towers' -> 'tower', 'churches' -> 'church'; short words and numbers kept."""
    if token.isdigit() or len(token) <= 3 or token.endswith(("ss", "us", "is")):
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("ches", "shes", "xes", "oes")):
        return token[:-2]
    return token[:-1] if token.endswith("s") else token


@lru_cache(maxsize=65536)
def words(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text``: folded, number words as digits, "1,889" -> "1889"."""
    return tuple(tok.replace(",", "") for tok in _TOKEN.findall(fold(digits_for_words(text))))


@lru_cache(maxsize=65536)
def stems(text: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words(text))


def content_stems(text: str) -> list[str]:
    return [stem(w) for w in words(text) if w not in STOPWORDS and w not in NEGATORS]


def sentences(text: str) -> list[str]:
    """Sentences (and lines, and ';'-separated parts), stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def clauses(text: str) -> list[str]:
    """Lower-cased sentences, each cut again before contrastive connectives."""
    out: list[str] = []
    for s in sentences(clean(text).lower()):
        out += [c.strip(" ,") for c in _CLAUSE.split(s) if c.strip(" ,")]
    return out


def names(text: str) -> set[str]:
    """Capitalised words not opening a sentence: the candidate names a reply mentions."""
    return {m.group(1) for m in _NAME.finditer(text.strip())}


def direction(tokens) -> int:
    """+1 when a text says more / up / larger, -1 when less / down / smaller, 0 when neither or both
    (the first two opposite pairs of ``lexicon.json``)."""
    sides = [p[1] for t in tokens if (p := polarity(t)) and p[0] in (0, 1)]
    up, down = sides.count(0), sides.count(1)
    return (up > down) - (down > up)


def negated_at(tokens, index: int, window: int = 3) -> bool:
    """Whether a negator stands within ``window`` tokens before ``index``."""
    return any(t in NEGATORS for t in tokens[max(0, index - window) : index])


@lru_cache(maxsize=1)
def data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _class_index() -> dict[str, str]:
    syn = data()["synonyms"]
    return {syn.get(w, w): name for name, ws in data()["closed_classes"].items() for w in ws}


def canonical(word: str) -> str:
    """A closed-class word's canonical member ("gray" -> "grey", "circular" -> "round")."""
    return data()["synonyms"].get(word, word)


def closed_class(word: str) -> str | None:
    """The closed class a word belongs to (``colour``, ``month``, ``direction``...), or None."""
    return _class_index().get(canonical(word))


@lru_cache(maxsize=1)
def _opposite_index() -> dict[str, tuple[int, int]]:
    return {w: (i, side) for i, pair in enumerate(data()["opposites"]) for side, ws in enumerate(pair) for w in ws}


def polarity(word: str) -> tuple[int, int] | None:
    """(pair index, side) of a word in an opposite pair (rose/fell, before/after...), or None."""
    return _opposite_index().get(word)


@lru_cache(maxsize=64)
def negation_words(lang: str) -> tuple[str, ...]:
    return tuple(fold(w) for w in data()["negation"].get(lang, ()))


def negation_languages() -> tuple[str, ...]:
    """The languages the lexicon has negation words for."""
    return tuple(data()["negation"])


@lru_cache(maxsize=1)
def relation_nouns() -> tuple[str, ...]:
    """Nouns of relations that read one way only (teacher / pupil, tributary, subsidiary)."""
    return tuple(data()["relations"])


@lru_cache(maxsize=1)
def claimless_stems() -> frozenset[str]:
    """Stems of :data:`EVIDENCE_WORDS` and :data:`MINOR_WORDS`: words a reply may add to a
    reference's figure or key words without adding a claim."""
    return frozenset(stem(w) for w in EVIDENCE_WORDS | MINOR_WORDS)


def unlisted_alias(answer: str, references: list[str]) -> bool:
    """Whether the answer gives another name for its answer ("…, also known as the Bay Bridge")
    that no reference lists: an alias the judge cannot check, which may be a second answer."""
    for m in ALIAS.finditer(answer):
        tail = re.split(r"[,;.)\n]", answer[m.end() : m.end() + 60])[0]
        said = set(content_stems(tail))
        if said and not any(said <= set(content_stems(alt)) for r in references for alt in r.split("|")):
            return True
    return False
