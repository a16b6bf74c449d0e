"""Numbers written in words, read with ``word2number`` (the library WebQA's official evaluator uses).

Replies say "forty-seven", references say "47" (or the other way round).  :func:`digits_for_words`
rewrites every maximal run of number words ("one hundred and two", "forty-seven", "two point
five") as digits so that the matchers compare like with like.  The run finder is ours (which
words form a run); the conversion of a run is ``w2n.word_to_num``.  "and" joins a run only
between number words ("one hundred and two"), never at its ends ("two and a half" stays "2 and a
half"), and a lone "point" is not a number.
"""

from __future__ import annotations

import re
from functools import lru_cache

from word2number import w2n

_VOCAB = frozenset(w2n.american_number_system)


def _is_number_word(token: str) -> bool:
    parts = token.lower().split("-")
    return all(p in _VOCAB for p in parts) and token.lower() != "point"


_SMALL_SCALES = ("hundred", "thousand", "million", "billion", "trillion")


def _value(word: str) -> int | None:
    try:
        v = w2n.word_to_num(word.replace("-", " "))
    except ValueError:
        return None
    return v if isinstance(v, int) else None


def _year_style(run: list[str]) -> str | None:
    """ "nineteen sixty-four" -> 1964, "twenty twenty" -> 2020: two words, each a number from 10
    to 99, the second not a units digit completing the first (w2n would add them: 1144)."""
    if len(run) != 2:
        return None
    a, b = _value(run[0]), _value(run[1])
    if a is None or b is None or not (10 <= a <= 99 and 10 <= b <= 99):
        return None
    return str(a * 100 + b)


def _convert(run: list[str]) -> str | None:
    while run and run[-1].lower() in ("and", "point"):
        run = run[:-1]
    if not run:
        return None
    year = _year_style(run)
    if year is not None:
        return year
    try:
        value = w2n.word_to_num(" ".join(run).replace("-", " "))
    except ValueError:
        return None
    return f"{value:g}" if isinstance(value, float) else str(value)


_SCALED = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s+(thousand|million|billion|trillion)\b", re.I)
_HALF = re.compile(r"(?<![\w.])(\d+) and a half\b", re.I)
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_MONEY = re.compile(r"([$\u20ac\u00a3])(\d+(?:\.\d+)?)\s?(k|m|mn|bn|b)\b", re.I)
_MONEY_SCALE = {"k": 1e3, "m": 1e6, "mn": 1e6, "b": 1e9, "bn": 1e9}
_UNIT_HYPHEN = re.compile(
    r"\b([A-Za-z]+)-(years?|months?|days?|weeks?|hours?|minutes?|metres?|meters?|miles?|"
    r"foot|feet|inch(?:es)?|storey|story|kilometres?|kilometers?)\b",
    re.I,
)


def _money(m: re.Match[str]) -> str:
    return f"{m.group(1)}{float(m.group(2)) * _MONEY_SCALE[m.group(3).lower()]:.15g}"


def _scaled(m: re.Match[str]) -> str:
    return f"{float(m.group(1)) * _SCALE[m.group(2).lower()]:.15g}"


#: counts said with a collective noun ("a pair of horses" is two horses), "a hundred" for "one
#: hundred", and ordinals ("seventeenth century"); word2number reads none of them.  "A score of" is
#: left out: in documents it is a mark ("a score of 88%"), far more often than twenty
_COLLECTIVES = {
    "a pair of": "2",
    "one pair of": "2",
    "a pair": "2",
    "a couple of": "2",
    "a single": "1",
    "half a dozen": "6",
    "a dozen": "12",
    "one dozen": "12",
    "a quarter of an hour": "15 minutes",
    "half an hour": "30 minutes",
    "three quarters of an hour": "45 minutes",
    "a third of an hour": "20 minutes",
    "a hundred": "one hundred",
    "a thousand": "one thousand",
    "a million": "one million",
}
_ORDINALS = dict(
    zip(
        (
            "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
            "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
        ).split(),
        ("1st 2nd 3rd 4th 5th 6th 7th 8th 9th 10th 11th 12th 13th 14th 15th 16th 17th 18th 19th 20th").split(),
    )
)
_COLLECTIVE = re.compile(r"\b(?:" + "|".join(k.replace(" ", r"\s+") for k in _COLLECTIVES) + r")\b", re.I)
_ORDINAL = re.compile(r"\b(" + "|".join(_ORDINALS) + r")(?=\s+(?:century|centuries|floor|dynasty|edition))", re.I)


_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = (
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
)
#: a year said aloud with "oh" ("nineteen-oh-two" is 1902): the run reads as 19 + 0 + 2 otherwise
_YEAR_OH = re.compile(r"\b(" + "|".join(_TEENS) + r")[\s-]+(?:oh|o)[\s-]+(" + "|".join(_UNITS) + r")\b", re.I)


def _year_oh(m: re.Match) -> str:
    return f"{_TEENS.index(m.group(1).lower()) + 10}0{_UNITS.index(m.group(2).lower()) + 1}"


@lru_cache(maxsize=65536)
def digits_for_words(text: str) -> str:
    """``text`` with each run of number words replaced by its digits ("forty-seven" -> "47"); a
    number then a scale word becomes one number ("12 million" -> "12000000"), and a number word
    hyphenated to a unit is read apart from it ("two-year" -> "2 year"), and "$12M" is "$12000000"."""
    text = _COLLECTIVE.sub(lambda m: _COLLECTIVES[" ".join(m.group(0).lower().split())], text)
    text = _YEAR_OH.sub(_year_oh, text)
    text = _ORDINAL.sub(lambda m: _ORDINALS[m.group(1).lower()], text)
    text = _MONEY.sub(_money, _UNIT_HYPHEN.sub(r"\1 \2", text))
    text = _words_to_digits(_SCALED.sub(_scaled, text))
    text = _SCALED.sub(_scaled, _HALF.sub(lambda m: f"{m.group(1)}.5", text))
    return _SUBUNIT.sub(r"\1.\3 \2", text) if "pound" in text or "euro" in text or "dollar" in text else text


#: "2418 pounds and 37 pence", "1842 pounds 60" (number words read): one amount, 2418.37 pounds
_SUBUNIT = re.compile(r"\b(\d+) (pounds?|euros?|dollars?),?(?: and)? (\d{2})(?: (?:pence|p|cents?))?\b(?!\.\d)", re.I)


def _words_to_digits(text: str) -> str:
    if not any(
        w in text.lower()
        for w in (
            "one",
            "two",
            "thr",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twel",
            "teen",
            "ty",
            "hundred",
            "thousand",
            "million",
            "billion",
            "zero",
        )
    ):
        return text
    out: list[str] = []
    pos = 0
    tokens = [(m.start(), m.end(), m.group()) for m in re.finditer(r"[A-Za-z]+(?:-[A-Za-z]+)*", text)]
    i = 0
    while i < len(tokens):
        start, end, tok = tokens[i]
        if not _is_number_word(tok):
            i += 1
            continue
        j = i
        run = [tok]
        run_end = end
        while j + 1 < len(tokens):
            nxt = tokens[j + 1][2]
            gap = text[tokens[j][1] : tokens[j + 1][0]]
            if gap.strip() not in ("",):
                break
            # "and" joins only after a scale word ("one hundred and two"; "seven and nine" is two
            # numbers); after "point" the decimals run up to a scale word, which _SCALED then applies
            if "point" in (w.lower() for w in run) and nxt.lower() in _SMALL_SCALES:
                break
            if _is_number_word(nxt) or (
                j + 2 < len(tokens)
                and _is_number_word(tokens[j + 2][2])
                and (nxt.lower() == "point" or (nxt.lower() == "and" and run[-1].lower() in _SMALL_SCALES))
            ):
                run.append(nxt)
                j += 1
                run_end = tokens[j][1]
            else:
                break
        converted = _convert(run)
        if len(run) == 1 and run[0].lower() in _SMALL_SCALES and re.search(r"\d\s*$", "".join(out) + text[pos:start]):
            converted = None  # "28.4 million": the scale word stays for _SCALED
        if converted is not None:
            out.append(text[pos:start])
            out.append(converted)
            pos = run_end
        i = j + 1
    out.append(text[pos:])
    return "".join(out)
