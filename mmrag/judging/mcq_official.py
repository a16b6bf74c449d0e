"""HumbleBench's official multiple-choice rule, reproduced verbatim in a module of its own so that
the parity test and the reports' official numbers read exactly this and nothing of the robust
extractor in :mod:`.mcq`.

The official rule (``HumbleBench/utils/metrics.py``) works on the lower-cased *set* of ``\\b\\w+\\b``
tokens of the raw reply: it is correct when the gold letter is one of them and no other option
letter (A-E) is; ``extract_answer`` returns the single letter token present, else ``'NA'``.
Consequences the official numbers carry: "B, a dog" is wrong (the article "a" reads as A), and the
option's text alone is wrong.  :func:`official_is_correct` and :func:`official_extract` reproduce it
exactly; ``tests/test_humblebench_parity.py`` checks them against the package itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

OFFICIAL_CHOICES: tuple[str, ...] = ("A", "B", "C", "D", "E")
_TOKEN = re.compile(r"\b\w+\b")


def official_tokenize(text: str) -> frozenset[str]:
    """The official tokeniser: the set of lower-cased ``\\b\\w+\\b`` matches."""
    return frozenset(_TOKEN.findall(text.lower()))


def official_is_correct(prediction: str, label: str, choices: Sequence[str] = OFFICIAL_CHOICES) -> bool:
    """HumbleBench's correctness rule, reproduced (see the module docstring)."""
    pred = official_tokenize(prediction)
    gold = official_tokenize(label)
    if not pred:
        return False
    has_gold = gold <= pred
    if not choices:
        return has_gold
    others: set[str] = set()
    for c in choices:
        ct = official_tokenize(c)
        if ct != gold:
            others |= ct - gold
    return has_gold and pred.isdisjoint(others)


def official_extract(prediction: str, choices: Sequence[str] = ("a", "b", "c", "d", "e")) -> str:
    """HumbleBench's ``extract_answer``: the single option letter among the tokens, else 'NA'."""
    found = official_tokenize(prediction) & set(choices)
    return next(iter(found)).upper() if len(found) == 1 else "NA"
