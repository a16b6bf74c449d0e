"""Amounts with units, converted with ``pint``: "two meters" = "2 m" = "200 cm", "75 °F" = 24 °C.

References and replies state one amount in different units; comparing bare digits calls "70 mm"
wrong against "7 cm", and comparing digits only calls "1,200 feet" right against 1,200 metres.
:func:`quantities` reads every number (digits or words, scale words applied by
:func:`mmrag.judging.numwords.digits_for_words`) with the unit right after it, and pint converts it
to base units.  A unit is a word pint knows whose dimension is not a bare count, read only when it
is a known abbreviation or a word of three letters or more (so "in" is never inches, "a" never
ampere); percentages and currencies are units of their own that never convert.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from mmrag.judging.lexicon import STOPWORDS
from mmrag.judging.numwords import digits_for_words

_NUM = re.compile(
    r"(?<![\w.])([$\u20ac\u00a3\u00a5]|US\$|Rs\.?\s?)?(-?\d[\d,]*(?:\.\d+)?)\s*-?\s*"
    r"(%|°\s*[CFcf]\b|degrees?\s+(?:celsius|fahrenheit)|[A-Za-z]+(?:/[A-Za-z]+|\s+per\s+[a-z]+)?)?"
)
_ABBREVIATIONS = frozenset(
    "km cm mm m nm kg g mg lb lbs oz ft mi mph kph kmh ml l kw mw gw w hp ha min sec hr hrs kwh mwh gb mb tb kb".split()
)
#: words pint knows that are rarely units in a reply ("a gray cat", "3 points", "two stones")
_NOT_UNITS = frozenset("gray grey rad bar bars point points stone stones pound pounds mile_ mark marks".split())
_CURRENCY = {
    "$": "usd",
    "us$": "usd",
    "\u20ac": "eur",
    "\u00a3": "gbp",
    "\u00a5": "jpy",
    "rs": "inr",
    "rs.": "inr",
    "dollar": "usd",
    "dollars": "usd",
    "euro": "eur",
    "euros": "eur",
    "pound": "gbp",
    "pounds": "gbp",
    "usd": "usd",
    "eur": "eur",
    "gbp": "gbp",
    "yen": "jpy",
    "rupees": "inr",
    "cents": "usd/100",
    "cent": "usd/100",
    "pence": "gbp/100",
    "p": None,
}
#: relative tolerance between two amounts of one dimension; degrees Celsius for temperatures (a
#: whole-degree Fahrenheit restatement of a Celsius value is off by up to 0.3 °C)
TOLERANCE = 0.02
TEMPERATURE_SLACK = 0.6


@dataclass(frozen=True)
class Quantity:
    value: float  # in base units (temperature: degrees Celsius; currency: the currency unit)
    dim: str  # pint dimensionality, "percent", "currency:usd", "temperature" or "count"
    number: float  # the number as written
    start: int


@lru_cache(maxsize=1)
def _ureg():
    import pint

    return pint.UnitRegistry()


@lru_cache(maxsize=4096)
def _unit(word: str) -> tuple[str, float] | None:
    """(dimension, factor to base units) of a unit word, or None."""
    w = word.lower().strip()
    if w in _NOT_UNITS or (w in STOPWORDS) or (len(w) < 3 and w not in _ABBREVIATIONS):
        return None
    w = re.sub(r"\s+per\s+", "/", w).replace("kph", "km/h").replace("kmh", "km/h")
    try:
        q = _ureg().Quantity(1.0, w).to_base_units()
    except Exception:  # pint raises several classes for an unknown or odd unit word
        return None
    dim = str(q.dimensionality)
    return None if dim == "dimensionless" else (dim, float(q.magnitude))


def _temperature(number: float, word: str) -> float | None:
    w = word.lower().replace(" ", "").replace("degrees", "").replace("degree", "")
    unit = {"°c": "degC", "celsius": "degC", "°f": "degF", "fahrenheit": "degF", "kelvin": "kelvin"}.get(w)
    if unit is None:
        return None
    return float(_ureg().Quantity(number, unit).to("degC").magnitude)


@lru_cache(maxsize=16384)
def quantities(text: str) -> tuple[Quantity, ...]:
    t = digits_for_words(text)
    out: list[Quantity] = []
    ends: list[int | None] = []
    for m in _NUM.finditer(t):
        try:
            number = float(m.group(2).replace(",", ""))
        except ValueError:
            continue
        symbol, word = (m.group(1) or "").strip().lower(), (m.group(3) or "")
        if symbol:
            out.append(Quantity(number, f"currency:{_CURRENCY.get(symbol, symbol)}", number, m.start()))
            ends.append(None)
            continue
        if word == "%" or word.lower() in ("percent", "per cent", "pc"):
            out.append(Quantity(number, "percent", number, m.start()))
            ends.append(None)
            continue
        cur = _CURRENCY.get(word.lower())
        if cur:
            base, _, cents = cur.partition("/")
            out.append(Quantity(number / (100 if cents else 1), f"currency:{base}", number, m.start()))
            ends.append(None)
            continue
        celsius = _temperature(number, word) if word else None
        if celsius is not None:
            out.append(Quantity(celsius, "temperature", number, m.start()))
            ends.append(None)
            continue
        unit = _unit(word) if word and word.lower() != "kelvin" else None
        got = (
            Quantity(number * unit[1], unit[0], number, m.start())
            if unit
            else Quantity(number, "count", number, m.start())
        )
        prev = out[-1] if out else None
        if (
            got.dim == "[time]"
            and prev is not None
            and prev.dim == "[time]"
            and ends[-1] is not None
            and re.fullmatch(r"[\s,]*(?:and)?\s*", t[ends[-1] : m.start()])
        ):
            # "1 hour and 25 minutes" is one amount (85 minutes), not two
            out[-1] = Quantity(prev.value + got.value, "[time]", prev.number, prev.start)
            ends[-1] = m.end()
            continue
        out.append(got)
        ends.append(m.end() if got.dim == "[time]" else None)
    return tuple(out)


def _step(x: float) -> float:
    """The precision a number is written to: 18460 -> 10, 18500 -> 100, 46215.37 -> 0.01."""
    text = f"{abs(x):.6f}".rstrip("0")
    if not text.endswith("."):
        return 10.0 ** -len(text.split(".")[1])
    whole = text[:-1]
    return 10.0 ** (len(whole) - len(whole.rstrip("0"))) if whole.strip("0") else 1.0


def close(a: Quantity, b: Quantity, tolerance: float = TOLERANCE) -> bool:
    """One amount: within ``tolerance`` after conversion; written in the same unit, the same number
    ("18,640 kg" is not 18,460 kg, "300 m" not 324 m: a rounder figure is vaguer, and a reply
    that says so, "about 300 m", is left to a reader by the judge's vagueness check)."""
    if a.dim != b.dim:
        return False
    if a.dim == "temperature":  # relative closeness means nothing on a scale with an arbitrary zero
        return abs(a.value - b.value) <= TEMPERATURE_SLACK
    if a.number and b.number and abs(a.value / a.number - b.value / b.number) <= 1e-9 * abs(a.value / a.number):
        step = min(_step(a.number), _step(b.number))
        return abs(a.number - b.number) <= step / 2 + 1e-9 * step
    return abs(a.value - b.value) <= tolerance * max(abs(a.value), abs(b.value), 1e-12)


def with_units(text: str) -> list[Quantity]:
    return [q for q in quantities(text) if q.dim != "count"]


def compare(reference: str, reply: str, tolerance: float = TOLERANCE) -> str | None:
    """ "gives" when the reply states one of the reference's amounts (after conversion),
    "contradicts" when both state amounts of one dimension and none agrees, else None."""
    ref, said = with_units(reference), with_units(reply)
    dims = {q.dim for q in ref} & {q.dim for q in said}
    if not dims:
        return None
    if any(close(a, b, tolerance) for a in ref for b in said):
        return "gives"
    return "contradicts"


_ASKED = re.compile(r"\bin\s+((?:square\s+|cubic\s+)?[a-z]+(?:/[a-z]+| per [a-z]+)?)\s*[?.]?\s*$", re.I)


def asked_unit(question: str) -> tuple[str, float] | None:
    """The unit a question asks for ("... in metres?", "in km/h"), as (dimension, factor), or None."""
    m = _ASKED.search(question.strip())
    if not m:
        return None
    word = m.group(1).lower()
    if word.startswith(("square ", "cubic ")):
        power, base = (2 if word.startswith("square") else 3), _unit(word.split()[1])
        return (f"{base[0]} ** {power}" if base else None, base[1] ** power) if base else None
    return _unit(word)


def in_asked_unit(text: str, question: str) -> list[float] | None:
    """The reply's amounts restated in the unit the question asks for, when the question names one
    and the reply states amounts of that dimension; None otherwise."""
    asked = asked_unit(question)
    if not asked:
        return None
    said = [
        q for q in with_units(text) if q.dim == asked[0] or q.dim.replace("[length] ** 2", "[length] ** 2") == asked[0]
    ]
    return [q.value / asked[1] for q in said] or None


def unit_alternatives(text: str) -> list[float]:
    """Each amount of ``text`` with a convertible unit restated in the common units of its
    dimension (InfoSeek's numeric golds carry no unit: "1,949 feet" may be read in metres)."""
    common = (
        "m",
        "km",
        "cm",
        "ft",
        "mi",
        "kg",
        "g",
        "lb",
        "t",
        "s",
        "min",
        "h",
        "day",
        "year",
        "m**2",
        "km**2",
        "ha",
        "acre",
        "km/h",
        "mph",
        "m/s",
        "L",
        "mL",
    )
    out: list[float] = []
    for q in with_units(text):
        if q.dim == "temperature":
            out += [q.value, q.value * 1.8 + 32, q.value + 273.15]
            continue
        for u in common:
            got = _unit(u) if u not in ("t", "s", "h", "L") else None
            factor = got[1] if got else None
            if got is None:
                try:
                    qq = _ureg().Quantity(1.0, u).to_base_units()
                    got, factor = (str(qq.dimensionality), float(qq.magnitude)), float(qq.magnitude)
                except Exception:  # an odd unit name in this pint version
                    continue
            if got[0] == q.dim and factor is not None:
                out.append(q.value / factor)
    return out


__all__ = [
    "Quantity",
    "quantities",
    "close",
    "compare",
    "with_units",
    "unit_alternatives",
    "asked_unit",
    "in_asked_unit",
]
