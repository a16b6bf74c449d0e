"""Rule-based false-premise rejection, for KnowHal's negative questions judged offline.

KnowHal's paper judges negative (false-premise) answers with GPT-4o-mini.  Offline, mmrag uses
these rules instead and reports how often they agree with an LLM judge when one is available.
An answer *rejects* the premise when a clause denies the premised object, attribute or relation
("there is no dog", "the car is not red", "I don't see any...", "actually, it is blue", "the
premise is false"), or opens with a plain "No"; it *accepts* the premise when it answers as if
the premise held.  A refusal that neither accepts nor rejects is a deflection; the refusal check runs
first, so "the image does not provide enough detail" is a refusal, not a denial.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from mmrag.judging.lexicon import clean, stem, stems
from mmrag.judging.refusal import DEFAULT_DETECTOR, EXPLICIT_DETECTOR, DeflectionDetector

PremiseCall = Literal["rejects", "accepts", "neither"]

#: (name, regex) on cleaned (lower-cased, straight-quoted) text.
REJECTION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("there_is_no", r"\bthere(?:\s+(?:is|are|was|were)|'s|\s+'s)\s+(?:no|not any|not an?|nothing|none)\b"),
    ("there_isnt", r"\bthere\s+(?:isn't|aren't|wasn't|weren't)\b"),
    (
        "no_x_visible",
        r"\bno\s+(?:\S+\s+){0,3}?(?:is|are|can be|could be)\s+(?:visible|present|shown|seen|"
        r"depicted|found|pictured)\b",
    ),
    (
        "not_visible",
        r"\b(?:not|isn't|aren't)\s+(?:\S+\s+)?(?:visible|present|shown|depicted|pictured|"
        r"in (?:the|this) (?:image|picture|photo))\b",
    ),
    ("dont_see", r"\b(?:i|we)\s+(?:do not|don't|cannot|can't|can not)\s+see\s+(?:any|an?|the)\b"),
    (
        "does_not_have",
        r"\b(?:does not|doesn't|do not|don't|did not|didn't)\s+(?:have|show|contain|include|"
        r"appear|depict|feature|wear|hold|exist)\b",
    ),
    (
        "is_not",
        r"\b(?:is|are|was|were)\s+not\s+(?:an?\s+|the\s+)?\w+|\b(?:isn't|aren't|wasn't|weren't)\b|"
        r"\w'(?:re|s) not\b",
    ),
    (
        "echo_denial",
        r"^(?:it|they|he|she|that|this|there)\s+(?:doesn't|does not|don't|do not|didn't|did not|can't|"
        r"cannot|won't|isn't|aren't|wasn't|weren't)\b(?!\s+(?:say|show|mention|tell|specify|give))",
    ),
    (
        "not_the_case",
        r"\bnot (?:the case|so|true|correct|right)\b|\bpremise is (?:off|wrong|mistaken|false)\b|"
        r"^nothing\b|^none\b",
    ),
    ("no_such", r"\bno\s+such\b|\bdoes(?: not|n't) exist\b|\bnon-?existent\b"),
    (
        "premise_words",
        r"\b(?:false|incorrect|mistaken|wrong|inaccurate|flawed)\s+(?:premise|assumption|"
        r"presupposition)\b|\bpremise\s+(?:is|seems|appears)\s+(?:false|incorrect|wrong)\b|"
        r"\bthe question (?:assumes|presumes|is based on)\b",
    ),
    (
        "correction",
        r"^(?:actually|in fact|in reality|contrary to)\b|\brather than\b|\binstead of\b|"
        r"\bnot true\b|\bthat is not correct\b|\bthat's not correct\b|\bis incorrect\b",
    ),
    ("leading_no", r"^no\b(?!\s+(?:doubt|question)\b)"),
    # a correction tacked on after a comma: "The cross is brown, not black." (clauses are split at
    # commas, so the "not X" half stands alone)
    ("contrast_not", r"^not\s+(?:an?\s+|the\s+|in\s+|on\s+|at\s+)?\w+"),
    ("nobody", r"\b(?:nobody|no one|no-one|no person|no people|none of them)\b"),
    # "The painter never won a Nobel Prize." (refusals such as "the passages never say" are caught
    # by the deflection check that runs first)
    ("never", r"\bnever\b"),
)


#: a reply opening with the premised object or a possessive ("The kayak is...", "Its name...")
_PRESUPPOSES = re.compile(r"^(?:(?:his|her|its|their)\s+\w+|the\s+(\w+)'s\s+\w+)\b")


@dataclass
class PremiseAnalysis:
    call: PremiseCall
    pattern: str | None = None
    clause: str | None = None


class PremiseRejectionDetector:
    """Curated rejection patterns (:data:`REJECTION_PATTERNS`) plus the deflection detector."""

    def __init__(
        self, patterns: Iterable[tuple[str, str]] = REJECTION_PATTERNS, deflection: DeflectionDetector | None = None
    ) -> None:
        self.patterns = [(n, re.compile(rx)) for n, rx in patterns]
        self.deflection = deflection or EXPLICIT_DETECTOR
        self.implicit = DEFAULT_DETECTOR

    def analyse(self, text: str, question: str = "") -> PremiseAnalysis:
        cleaned = " ".join(clean(text).lower().split())
        if not cleaned:
            return PremiseAnalysis("neither", None, None)
        # a pure refusal first: "the image does not provide enough detail" declines, it does not
        # deny the premised object -- unless it declines a detail of the premised object ("The
        # lighthouse is too far away to identify", "His name isn't visible"): that affirms it
        if self.deflection.is_deflection(text):
            return self._declined(cleaned, question)
        if _PRESUPPOSES.match(cleaned) and self.implicit.is_deflection(text):
            return self._declined(cleaned, question)  # "His name isn't visible": the driver is affirmed
        for clause in re.split(r"(?<=[.!?;])\s+|,\s+", cleaned):
            for name, rx in self.patterns:
                if rx.search(clause):
                    return PremiseAnalysis("rejects", name, clause)
        if self.implicit.is_deflection(text):  # "I can't tell what flavour it is": neither
            return self._declined(cleaned, question)
        return PremiseAnalysis("accepts", None, None)

    @staticmethod
    def _declined(cleaned: str, question: str) -> PremiseAnalysis:
        m = _PRESUPPOSES.match(cleaned)
        if m and (m.group(1) is None or stem(m.group(1)) in stems(question)):
            return PremiseAnalysis("accepts", "declines a detail of the premised object", cleaned)
        return PremiseAnalysis("neither", "refusal", cleaned)


DEFAULT_PREMISE_DETECTOR = PremiseRejectionDetector()


def rejects_premise(text: str) -> bool:
    return DEFAULT_PREMISE_DETECTOR.analyse(text).call == "rejects"
