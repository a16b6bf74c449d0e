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


def _convert(run: list[str]) -> str | None:
    while run and run[-1].lower() in ("and", "point"):
        run = run[:-1]
    if not run:
        return None
    try:
        value = w2n.word_to_num(" ".join(run).replace("-", " "))
    except ValueError:
        return None
    return f"{value:g}" if isinstance(value, float) else str(value)


@lru_cache(maxsize=65536)
def digits_for_words(text: str) -> str:
    """``text`` with each run of number words replaced by its digits ("forty-seven" -> "47")."""
    if not any(w in text.lower() for w in ("one", "two", "thr", "four", "five", "six", "seven", "eight", "nine",
                                           "ten", "eleven", "twel", "teen", "ty", "hundred", "thousand",
                                           "million", "billion", "zero")):
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
            gap = text[tokens[j][1]:tokens[j + 1][0]]
            if gap.strip() not in ("",):
                break
            if _is_number_word(nxt) or (nxt.lower() in ("and", "point") and j + 2 < len(tokens)
                                         and _is_number_word(tokens[j + 2][2])):
                run.append(nxt)
                j += 1
                run_end = tokens[j][1]
            else:
                break
        converted = _convert(run)
        if converted is not None:
            out.append(text[pos:start])
            out.append(converted)
            pos = run_end
        i = j + 1
    out.append(text[pos:])
    return "".join(out)
