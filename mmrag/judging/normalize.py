"""VQA answer normalisation and soft accuracy, faithful to the official evaluators.

Two variants exist in the wild and both are offered:

* ``"evalai"`` (default): the EvalAI answer processor used by the VQA challenge server, mmf and
  lmms-eval.  It first lower-cases, deletes every ',' and '?', and splits the possessive "'s"
  into its own token ("dog's" -> "dog 's"), then applies the official steps below.
* ``"vqaeval"``: GT-Vision-Lab's ``vqaEval.py``, which skips that first step (so case is kept until
  the article step lower-cases, and a comma between digits is detected by ``\\d,\\d``).

The official steps, with their quirks kept on purpose (parity matters more than elegance):

1. newlines and tabs become spaces, then the text is stripped;
2. punctuation: for each mark in the official list, if the *original* text has the mark next to a
   space, or has a comma between two digits anywhere, the mark is deleted; otherwise it becomes a
   space.  Then periods not followed by a digit are deleted ("3.5" survives, "dog." loses it).
   The official call passes ``re.UNICODE`` as the *count* argument of ``re.sub``, so at most 32
   periods are removed; we keep that limit.
3. lower-case, split on white space, map number words "none".."ten" to digits (so "none" -> "0"),
   drop the articles a / an / the, and restore apostrophes of common contractions ("dont" ->
   "don't"), then join with single spaces.

``tests/test_normalize.py`` checks parity with lmms-eval's ``EvalAIAnswerProcessor`` loaded from
its own file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

Variant = Literal["evalai", "vqaeval"]

# The official punctuation list (GT-Vision-Lab master; ':' and "'" are deliberately absent).
_PUNCT: tuple[str, ...] = (
    ";",
    "/",
    "[",
    "]",
    '"',
    "{",
    "}",
    "(",
    ")",
    "=",
    "+",
    "\\",
    "_",
    "-",
    ">",
    "<",
    "@",
    "`",
    ",",
    "?",
    "!",
)
# A period that is not followed by a digit (the official pattern's look-behind is a typo that
# makes it a no-op look-ahead; this is what it actually matches).
_PERIOD = re.compile(r"\.(?!\d)")
_PERIOD_LIMIT = 32  # re.UNICODE == 32, passed positionally as ``count`` by the official code
_COMMA_BETWEEN_DIGITS = {"evalai": re.compile(r"(?<=\d),+(?=\d)"), "vqaeval": re.compile(r"\d,\d")}

_NUMBER_WORDS = {
    "none": "0",
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
_ARTICLES = frozenset({"a", "an", "the"})

# The official contraction table as "written-form restored-form" pairs.  It contains a few odd
# entries (capitalised keys that can never match after lower-casing, "somebody'd" mapped to
# "somebodyd"); they are part of the official behaviour and kept.
_CONTRACTION_PAIRS = """
aint ain't|arent aren't|cant can't|couldve could've|couldnt couldn't|couldn'tve couldn't've
couldnt've couldn't've|didnt didn't|doesnt doesn't|dont don't|hadnt hadn't|hadnt've hadn't've
hadn'tve hadn't've|hasnt hasn't|havent haven't|hed he'd|hed've he'd've|he'dve he'd've|hes he's
howd how'd|howll how'll|hows how's|Id've I'd've|I'dve I'd've|Im I'm|Ive I've|isnt isn't|itd it'd
itd've it'd've|it'dve it'd've|itll it'll|let's let's|maam ma'am|mightnt mightn't
mightnt've mightn't've|mightn'tve mightn't've|mightve might've|mustnt mustn't|mustve must've
neednt needn't|notve not've|oclock o'clock|oughtnt oughtn't|ow's'at 'ow's'at|'ows'at 'ow's'at
'ow'sat 'ow's'at|shant shan't|shed've she'd've|she'dve she'd've|she's she's|shouldve should've
shouldnt shouldn't|shouldnt've shouldn't've|shouldn'tve shouldn't've|somebody'd somebodyd
somebodyd've somebody'd've|somebody'dve somebody'd've|somebodyll somebody'll|somebodys somebody's
someoned someone'd|someoned've someone'd've|someone'dve someone'd've|someonell someone'll
someones someone's|somethingd something'd|somethingd've something'd've|something'dve something'd've
somethingll something'll|thats that's|thered there'd|thered've there'd've|there'dve there'd've
therere there're|theres there's|theyd they'd|theyd've they'd've|they'dve they'd've|theyll they'll
theyre they're|theyve they've|twas 'twas|wasnt wasn't|wed've we'd've|we'dve we'd've|weve we've
werent weren't|whatll what'll|whatre what're|whats what's|whatve what've|whens when's
whered where'd|wheres where's|whereve where've|whod who'd|whod've who'd've|who'dve who'd've
wholl who'll|whos who's|whove who've|whyll why'll|whyre why're|whys why's|wont won't
wouldve would've|wouldnt wouldn't|wouldnt've wouldn't've|wouldn'tve wouldn't've|yall y'all
yall'll y'all'll|y'allll y'all'll|yall'd've y'all'd've|y'alld've y'all'd've|y'all'dve y'all'd've
youd you'd|youd've you'd've|you'dve you'd've|youll you'll|youre you're|youve you've
"""
CONTRACTIONS: dict[str, str] = dict(
    pair.split(" ") for line in _CONTRACTION_PAIRS.strip().splitlines() for pair in line.split("|")
)


def _punctuation(text: str, variant: Variant) -> str:
    strip_all = _COMMA_BETWEEN_DIGITS[variant].search(text) is not None
    out = text
    for mark in _PUNCT:
        if strip_all or (mark + " ") in text or (" " + mark) in text:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD.sub("", out, count=_PERIOD_LIMIT)


def _digits_articles(text: str) -> str:
    words = []
    for word in text.lower().split():
        word = _NUMBER_WORDS.get(word, word)
        if word not in _ARTICLES:
            words.append(CONTRACTIONS.get(word, word))
    return " ".join(words)


@lru_cache(maxsize=65536)
def vqa_normalize(text: str, variant: Variant = "evalai") -> str:
    """Normalise an answer the way the official VQA evaluators do (see the module docstring).

    ``variant="evalai"`` matches lmms-eval / mmf / the EvalAI server; ``"vqaeval"`` matches
    GT-Vision-Lab's ``vqaEval.py`` for model answers.  Results are memoised: benchmark answers and
    model replies repeat a lot.
    """
    if variant not in _COMMA_BETWEEN_DIGITS:
        raise ValueError(f"unknown VQA normalisation variant {variant!r}; use 'evalai' or 'vqaeval'")
    if variant == "evalai":
        text = text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip()
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return _digits_articles(_punctuation(text, variant))


ShortRefRule = Literal["any", "official"]


def vqa_soft_accuracy(
    prediction: str,
    references: Sequence[str],
    *,
    variant: Variant = "evalai",
    normalized: bool = False,
    short_refs: ShortRefRule = "any",
    min_official_refs: int = 10,
) -> float:
    """VQA accuracy of one prediction: ``min(#matching references / 3, 1)`` averaged over the
    leave-one-annotator-out subsets, as the official evaluator does with its 10 answers.

    With fewer than ``min_official_refs`` references the references are usually an alias list, not
    annotator votes, and the formula would cap one matching alias at 1/3 (or 0 with a single
    reference).  Our documented rule for that case, ``short_refs="any"`` (default), scores 1.0 when
    the prediction matches any reference and 0.0 otherwise; ``short_refs="official"`` applies the
    formula regardless.  Both sides are normalised with :func:`vqa_normalize` unless
    ``normalized`` says they already are.
    """
    if not references:
        raise ValueError("vqa_soft_accuracy needs at least one reference answer")
    pred = prediction if normalized else vqa_normalize(prediction, variant)
    refs = list(references) if normalized else [vqa_normalize(r, variant) for r in references]
    return accuracy_from_matches([r == pred for r in refs], short_refs=short_refs, min_official_refs=min_official_refs)


def accuracy_from_matches(
    matches: Sequence[bool], *, short_refs: ShortRefRule = "any", min_official_refs: int = 10
) -> float:
    """The VQA formula given which references match (see :func:`vqa_soft_accuracy`)."""
    if not matches:
        raise ValueError("VQA accuracy needs at least one reference")
    if short_refs == "any" and len(matches) < min_official_refs:
        return 1.0 if any(matches) else 0.0
    total = sum(bool(m) for m in matches)
    # leaving reference i out removes its own match from the count
    scores = [min(1.0, (total - bool(m)) / 3.0) for m in matches]
    return sum(scores) / len(scores)


def contains_phrase(haystack: str, needle: str) -> bool:
    """Whether the normalised ``needle`` occurs in the normalised ``haystack`` as whole words
    ("cat" is in "a cat sat", not in "catfish"; "new york" is in "new york city")."""
    if not needle:
        return False
    h = f" {haystack} "
    return f" {needle} " in h


def phrase_positions(haystack_tokens: Sequence[str], needle_tokens: Sequence[str]) -> list[int]:
    """Start indices where ``needle_tokens`` occurs contiguously in ``haystack_tokens``."""
    n = len(needle_tokens)
    if n == 0:
        return []
    first = needle_tokens[0]
    return [
        i
        for i in range(len(haystack_tokens) - n + 1)
        if haystack_tokens[i] == first and list(haystack_tokens[i : i + n]) == list(needle_tokens)
    ]
