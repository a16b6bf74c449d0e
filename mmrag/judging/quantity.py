"""Quantities with units: "two meters" = "2 m" = "200 cm", "24 months" = "2 years", "$12M" = "12 million".

References and replies state the same amount in different units or scales; comparing bare digits
calls "70 mm" wrong against "7 cm".  :func:`quantities` reads every number (digits or words, via
:func:`mmrag.judging.numwords.digits_for_words`) with the unit or scale word right after it (a
hyphen allowed: "two-year") and converts it to the dimension's base unit with the table in
``data/units.json``.  The rule (:func:`compare`) speaks only when reference and reply both state a
quantity of the same dimension: one of the reply's within ``tolerance`` (relative) of one of the
reference's -> gives, none -> contradicts.  Anything else is left to the other rules.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from mmrag.judging.numwords import digits_for_words

UNITS_PATH = Path(__file__).parent / "data" / "units.json"
_Q = re.compile(r"(?<![\w.])\$?(\d[\d,]*(?:\.\d+)?)\s*-?\s*([a-zA-Z%]+(?:/[a-z]\b)?\d?)?")
_TEMP = re.compile(r"(?<![\w.])(-?\d[\d,]*(?:\.\d+)?)\s*(°\s*[CFcf]\b|degrees? (?:celsius|fahrenheit)|celsius|fahrenheit|kelvin)", re.I)


@lru_cache(maxsize=1)
def _data() -> dict:
    """``data/units.json``, read once for the unit table, the scale words and the temperatures."""
    return json.loads(UNITS_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, tuple[str, float]], dict[str, float]]:
    data = _data()
    return {k: (v[0], float(v[1])) for k, v in data["units"].items()}, {k: float(v) for k, v in data["scales"].items()}


def _unit(word: str) -> tuple[str, float] | None:
    units, _ = _table()
    w = word.lower()
    for cand in (w, w[:-1] if w.endswith("s") else w, w[:-2] if w.endswith("es") else w,
                 "century" if w == "centuries" else w):
        if cand in units:
            return units[cand]
    return None


@lru_cache(maxsize=16384)
def quantities(text: str) -> tuple[tuple[str, float], ...]:
    """(dimension, value in base units) of each number in ``text``; a number without a unit has
    dimension "count" (scale words applied: "12 million" -> 12e6); a temperature is in degrees
    Celsius ("75 °F" -> 23.9)."""
    _, scales = _table()
    t = digits_for_words(text)
    out: list[tuple[str, float]] = []
    temps = _temperatures_at(t)
    for m in _Q.finditer(t):
        if m.start(1) in temps:
            out.append(("temperature", temps[m.start(1)]))
            continue
        try:
            value = float(m.group(1).replace(",", ""))
        except ValueError:
            continue
        word = (m.group(2) or "")
        rest = t[m.end():]
        if word.lower() in scales and not (word.lower() == "m" and not t[m.start():m.start() + 1] == "$"
                                           and not re.match(r"\s*(?:dollars|euros|\$)", rest)):
            value *= scales[word.lower()]
            nxt = re.match(r"\s*([a-zA-Z]+)", rest)
            word = nxt.group(1) if nxt else ""
        if word.lower() == "square":   # "300 square miles": the length unit squared
            nxt = re.match(r"\s*([a-zA-Z]+)", t[m.end():])
            side = _unit(nxt.group(1)) if nxt else None
            u = ("area", side[1] ** 2) if side and side[0] == "length" else None
        else:
            u = _unit(word) if word else None
        out.append((u[0], value * u[1]) if u else ("count", value))
    return tuple(out)


@lru_cache(maxsize=1)
def _temperature() -> dict[str, tuple[float, float]]:
    return {k: (float(v[0]), float(v[1])) for k, v in _data().get("temperature", {}).items()}


def _temperatures_at(text: str) -> dict[int, float]:
    """Degrees Celsius of each temperature in ``text``, by the offset where its number starts."""
    temps, out = _temperature(), {}
    for m in _TEMP.finditer(text):
        key = re.sub(r"\s+|degrees?", "", m.group(2).lower())
        if key in temps:
            factor, offset = temps[key]
            digits = m.start(1) + m.group(1).startswith("-")   # where the unsigned number starts
            out[digits] = (float(m.group(1).replace(",", "")) + offset) * factor
    return out


_ASKED = re.compile(r"\bin\s+((?:square\s+)?[a-z]+)", re.I)


def asked_unit(question: str) -> tuple[str, float] | None:
    """The unit a question asks for ("... in metres?", "in square kilometres"), as (dimension,
    factor to the base unit), or None."""
    for m in _ASKED.finditer(question):
        parts = m.group(1).lower().split()
        u = _unit(parts[-1])
        if u and parts[0] == "square" and u[0] == "length":
            return "area", u[1] ** 2
        if u and len(parts) == 1:
            return u
    return None


def unit_alternatives(text: str, question: str = "") -> list[float]:
    """Every number of ``text`` that carries a unit, restated in each unit of its dimension
    ("24 cm" -> 0.00024 km ... 240 mm ... 9.45 in; "85.6 °F" -> 29.8 (Celsius), 85.6, 302.9).
    Why: InfoSeek's numeric golds carry no unit, and a reply may state the amount in another one
    ("1,949 feet" for 594 [m]); a restatement inside the gold range is a (weaker) match."""
    units, _ = _table()
    asked = asked_unit(question) if question else None
    if asked:
        # the question names the unit: the reply's amount restated in that unit only, and only
        # when the reply used another one ("1.2 m" asked in metres is 1.2, never 3.9 feet)
        return [base / asked[1] for dim, base in _with_units(text) if dim == asked[0]]
    out: list[float] = []
    for dim, base in _with_units(text):
        out.extend(base / f for d, f in set(units.values()) if d == dim)
    for c in _temperatures_at(text).values():
        out.extend((c, c * 1.8 + 32, c + 273.15))
    return out


def _with_units(text: str) -> list[tuple[str, float]]:
    """The quantities of ``text`` that carry a convertible unit (not bare counts, not percentages):
    a number without a unit is read as given in the asked unit already (the official rule)."""
    return [q for q in quantities(text) if q[0] not in ("count", "percent")]


#: degrees Celsius two temperatures may differ by and agree: a whole-degree Fahrenheit restatement
#: of a Celsius value (24 °C is 75.2 °F; "75 °F" is 23.9 °C) is off by up to 0.3 °C
TEMPERATURE_SLACK = 0.6


def _close(a: float, b: float, tolerance: float, dim: str = "") -> bool:
    if dim == "temperature":   # relative closeness means nothing on a scale with an arbitrary zero
        return abs(a - b) <= TEMPERATURE_SLACK
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-12)


def _with_sums(qs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The quantities and the sum of each two neighbours of one dimension: "3 hours 15 minutes" is
    also 195 minutes, "1 m 80" is not read (no unit on the second part)."""
    return qs + [(a[0], a[1] + b[1]) for a, b in zip(qs, qs[1:]) if a[0] == b[0] == "time"]


def compare(reference: str, reply: str, tolerance: float = 0.02) -> str | None:
    """"gives" / "contradicts" when both state a quantity with a unit of one dimension, else None."""
    ref = _with_sums([q for q in quantities(reference) if q[0] != "count"])
    said = _with_sums([q for q in quantities(reply) if q[0] != "count"])
    dims = {d for d, _ in ref} & {d for d, _ in said}
    if not dims:
        return None
    for d in dims:
        for _, a in (q for q in ref if q[0] == d):
            for _, b in (q for q in said if q[0] == d):
                if _close(a, b, tolerance, d):
                    return "gives"
    return "contradicts"


def unmatched(reference: str, reply: str, tolerance: float = 0.02) -> bool:
    """Whether the reply states a quantity of the reference's dimensions that none of the
    reference's is ("12 metres, or possibly 18.8 metres" for 18.8 m; "every 10 minutes, first tram
    at 07:30" beside a 20-minute interval): a hedge or a second, wrong claim beside the right one."""
    ref = [q for q in quantities(reference) if q[0] != "count"]
    dims = {d for d, _ in ref}
    return any(not any(_close(a, b, tolerance, d) for e, a in ref if e == d)
               for d, b in quantities(reply) if d in dims)


__all__ = ["asked_unit", "quantities", "compare", "unit_alternatives", "unmatched"]
