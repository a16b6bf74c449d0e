"""Numeric answers: InfoSeek's range rule, and number equality for plain numeric golds.

InfoSeek (``infoseek_eval.py``) scores a numerical question as follows, and so do we:

* the gold is a range ``[lo, hi]`` (a single gold value ``v`` becomes ``[v*(1-tol), v*(1+tol)]``,
  ``tol`` = 0.1);
* from the prediction, a hyphen after a digit is spaced out ("9-10" -> "9 - 10"), numbers are
  found (thousands separators allowed, commas dropped, surrounding periods stripped; a number with
  two periods keeps what precedes the first), and only the first two count: two ascending
  numbers form a range, otherwise the first number stands alone; no number at all is the range
  [0, 0];
* a single number is correct when it lies inside the gold range; a range is correct when both
  ends lie inside it or when its intersection-over-union with the gold range is at least 0.5.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUMBER = re.compile(r"[-+]?[.]?\d+(?:,\d\d\d)*[.]?\d*(?:[eE][-+]?\d+)?")
_EPS = 1e-12

Prediction = float | tuple[float, float]


def _space_ranges(text: str) -> str:
    """'9-10' -> '9 - 10': a hyphen right after a digit separates two numbers, not a sign."""
    return re.sub(r"(?<=\d)-", " - ", text)


def find_numbers(text: str) -> list[float]:
    """All numbers in ``text`` by InfoSeek's parsing rules, in order."""
    out: list[float] = []
    for raw in _NUMBER.findall(_space_ranges(text)):
        n = raw.replace(",", "").strip(".")
        if n.count(".") > 1:
            n = n.split(".")[0]
        try:
            out.append(float(n))
        except ValueError:  # e.g. a lone sign left after stripping
            continue
    return out


def parse_numeric_prediction(text: str) -> Prediction:
    """A single number or an ascending ``(lo, hi)`` range, from the first two numbers."""
    nums = find_numbers(text)[:2]
    if len(nums) == 2:
        return (nums[0], nums[1]) if nums[0] <= nums[1] else nums[0]
    if len(nums) == 1:
        return nums[0]
    return (0.0, 0.0)


def range_iou(a: Sequence[float], b: Sequence[float]) -> float:
    lo1, hi1 = min(a), max(a)
    lo2, hi2 = min(b), max(b)
    overlap = max(0.0, min(hi1, hi2) - max(lo1, lo2))
    union = (hi1 - lo1 + _EPS) + (hi2 - lo2 + _EPS) - overlap
    return overlap / union if union != 0 else 0.0


def gold_range(gold: float | Sequence[float], tolerance: float = 0.1) -> tuple[float, float]:
    if isinstance(gold, (int, float)):
        a, b = gold * (1 - tolerance), gold * (1 + tolerance)
        return (min(a, b), max(a, b))
    lo, hi = gold
    return (float(lo), float(hi))


def in_numeric_range(prediction: Prediction, gold: float | Sequence[float], tolerance: float = 0.1) -> bool:
    """InfoSeek's decision for one prediction against one gold value or range."""
    lo, hi = gold_range(gold, tolerance)
    if isinstance(prediction, tuple):
        if lo <= prediction[0] <= hi and lo <= prediction[1] <= hi:
            return True
        return range_iou(prediction, (lo, hi)) >= 0.5 - _EPS
    return lo <= prediction <= hi


def numeric_match(text: str, ranges: Sequence[Sequence[float]], tolerance: float = 0.1) -> tuple[bool, Prediction]:
    """Whether the numbers in ``text`` satisfy any gold range; also returns what was parsed."""
    pred = parse_numeric_prediction(text)
    return any(in_numeric_range(pred, r, tolerance) for r in ranges), pred


def as_number(text: str) -> float | None:
    """The value of a string that is just a number ("1,889", "3.5", "-2"), else None."""
    t = text.strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None
