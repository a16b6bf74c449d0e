"""Deflection (refusal) detection: does a response decline to answer?

A response is cut into clauses (sentences, then at "but", "however", "although", "; ", ", so").
Each clause is a *refusal* (it matches one of the curated patterns below), *filler* ("Sorry.",
"Unfortunately,") or *content*.  The verdict follows SimpleQA's spirit:

* only refusals and filler                       -> a deflection;
* a refusal plus content that offers a guess     -> not a deflection: the guess is judged
  ("The passages do not say, but it is probably the Vltava" is an answer, and a wrong one);
* a refusal plus content that offers no guess    -> a deflection whose content is explanation
  ("..., none of the documents identify it"); flagged ``explained`` so a rule+llm judge can
  hand it to the LLM;
* no refusal                                      -> not a deflection.

The patterns are data (:data:`REFUSAL_PATTERNS`), tested one by one in ``tests/test_judges.py``,
and a :class:`DeflectionDetector` can be built with extra or different ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from mmrag.judging.language import foreign_refusal
from mmrag.schema import DEFLECTION_PHRASE

_GAP = r"(?:\S+\s+){0,3}?"  # up to three filler words between the parts of a pattern
_SOURCES = (r"(?:context|contexts|passages?|documents?|docs|text|texts|sources?|evidence|snippets?|"
            r"articles?|excerpts?|information|image|images|picture|photo|retrieved \w+|provided \w+|"
            r"given \w+|available \w+)")
_NEG_AUX = r"(?:does not|doesn't|doesnt|do not|don't|dont|did not|didn't|fails? to|never)"
_SAY_VERBS = (r"(?:mention|say|state|specify|contain|include|provide|describe|identify|indicate|"
              r"give|tell|reveal|discuss|clarify|name|offer|supply|cover|address|answer)")
_INFO = r"(?:information|info|context|details?|evidence|data|mention|indication|clues?|knowledge)"

#: (name, regex) pairs; a clause matching any of them is a refusal.  Matching is case-insensitive
#: on text with curly quotes straightened and white space collapsed.
REFUSAL_PATTERNS: tuple[tuple[str, str], ...] = (
    ("deflection_phrase", re.escape(DEFLECTION_PHRASE.lower().rstrip("."))),
    ("cannot_verb", r"\b(?:can ?not|can't|cant|could ?not|couldn't|unable to|not able to|impossible to|"
                    r"not possible to|no way to|won't be able to|will not be able to)\s+" + _GAP +
                    r"(?:answer|determine|tell|say|identify|verify|confirm|know|provide|infer|conclude|"
                    r"specify|be determined|be answered|be identified|be inferred|be confirmed|"
                    r"be (?:\S+ )?(?:sure|certain)|pinpoint|deduce|recogni[sz]e|find)\b"),
    ("not_sure", r"(?:\bnot|\bnever|n't)\s+(?:\S+\s+){0,2}?(?:sure|certain)\b"),
    ("unsure", r"\b(?:unsure|uncertain)\b"),
    ("lack_of_info", r"\b(?:not enough|(?:is|are|was|were)n't enough|(?:do|does|did) not have enough|(?:don|doesn|didn)'t have enough|insufficient|no|lack of|lacks?|lacking|"
                     r"missing|limited|no specific|"
                     r"no relevant|no direct)\s+" + _GAP + _INFO + r"\b"),
    ("source_silent", r"\b" + _SOURCES + r"\s+" + _GAP + _NEG_AUX + r"\s+" + _GAP + _SAY_VERBS + r"\b"),
    ("source_contains_no", r"\b" + _SOURCES + r"\s+" + _GAP + r"(?:contains?|includes?|gives?|provides?|mentions?|"
                           r"says?|offers?|has)\s+no\b"),
    ("cannot_see", r"\b(?:can ?not|can't|unable to|not able to)\s+(?:\S+\s+)?(?:see|read|make out|discern|"
                   r"distinguish)\b.*\b(?:clearly|enough|well|properly|legibly)\b"),
    ("too_poor", r"\btoo\s+(?:blurry|blurred|small|dark|grainy|unclear|low[- ]resolution|pixelated|far away|"
                 r"distant|obscured)\b.*\bto\s+(?:read|see|tell|identify|say|determine|make out)\b"),
    ("none_of_sources", r"\bnone of the\s+" + _GAP + r"(?:passages|documents|contexts|sources|images|"
                        r"snippets|articles|texts|results|excerpts)\b"),
    ("dont_know", r"\b(?:i|we)\s+(?:really\s+|honestly\s+|simply\s+)?(?:do not|don't|dont)\s+know\b"),
    ("no_idea", r"\b(?:no idea|no way of knowing|not known to me|beyond my knowledge)\b"),
    ("not_determinable", r"\b(?:is|are|was|were|remains?)\s+(?:\S+\s+)?not\s+(?:\S+\s+)?(?:identifiable|determinable|"
                         r"clear|known|specified|mentioned|stated|given|provided|available|indicated|"
                         r"discernible|visible enough|possible to determine)\b"),
    ("cannot_be", r"\b(?:cannot|can't|can not|could not|couldn't)\s+be\s+(?:determined|answered|identified|"
                  r"inferred|confirmed|verified|established|known|told|compared|counted|measured|read|"
                  r"seen|made out)\b"),
    ("need_more", r"\b(?:need|needs|require|requires|would need)\s+(?:more|additional|further)\s+"
                  r"(?:context|information|details|data|evidence)\b"),
    ("would_need", r"\b(?:i'd|i would|we'd|we would|one would|you'd|you would)\s+(?:\S+\s+)?need\b"),
    ("refrain", r"\b(?:refrain from|avoid|rather not|won't|will not|would not|do not want to)\s+"
                r"(?:guess|guessing|speculat\w*)\b"),
    # the commonest refusals of multilingual VLMs that answer in another language (MiniLM reads English only)
    ("other_language", r"(?:\b(?:kann|können)\b.*\bnicht\b.*\b(?:sagen|beantworten|erkennen|bestimmen|identifizieren)\b|"
                       r"\bne (?:peux|sais|puis) pas\b|\bno (?:puedo|sé|se puede)\b|\bnon (?:posso|so)\b|"
                       r"\bnão (?:posso|sei)\b|无法|不能确定|不知道|抱歉|できません|わかりません)"),
    ("short_form", r"^(?:unknown|n/?a|not sure|unsure|no answer|cannot answer|can't answer|no comment|"
                   r"unanswerable|not answerable|insufficient (?:information|context|data)|"
                   r"not enough (?:information|context)|i (?:am|'m) not sure|idk|none given)[.!]?$"),
)

_FILLER = re.compile(r"^(?:sorry|i'm sorry|i am sorry|i apologi[sz]e|apologies|unfortunately|"
                     r"regrettably|hmm+|well|okay|ok|however|but|so|thus|therefore|as a result|"
                     r"based on the (?:provided |given |available )?(?:context|information|passages|image))"
                     r"[\s,.!:;-]*$")
# A content clause that offers an answer despite a refusal elsewhere in the response.
_GUESS = re.compile(r"^(?:but|however|though|although|yet|that said|nevertheless|still|nonetheless)\b|"
                    r"\b(?:probably|likely|perhaps|maybe|possibly|presumably|i think|i believe|i guess|"
                    r"i suspect|my (?:best )?guess|it (?:looks|seems|appears)|appears to be|seems to be|"
                    r"looks like|could be|might be|may be|would be|must be|is likely|from my (?:own )?"
                    r"knowledge|based on my (?:own |general )?knowledge|i would say|if i had to guess|"
                    r"i'd say|my answer|the answer is|answer:)\b")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|;\s*")
_CLAUSE_SPLIT = re.compile(r",\s*(?=(?:but|however|although|though|yet|so|whereas)\b)|"
                           r"\s+(?=(?:but|however|although|though|whereas)\b)")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


def clean_text(text: str) -> str:
    """Lower-case, straighten quotes, drop markdown emphasis and collapse white space."""
    t = text.translate(_QUOTES).replace("**", "").replace("__", "").lower()
    return " ".join(t.split())


def split_clauses(text: str) -> list[str]:
    """Sentences, each cut again before contrastive connectives; empty pieces dropped."""
    out: list[str] = []
    for sentence in _SENTENCE_SPLIT.split(clean_text(text)):
        for clause in _CLAUSE_SPLIT.split(sentence):
            clause = clause.strip(" ,")
            if clause:
                out.append(clause)
    return out


@dataclass
class DeflectionAnalysis:
    """What the detector saw: the refusal clauses (with the pattern that fired), the content
    clauses, whether the content offers a guess, and the resulting call."""

    is_deflection: bool
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (pattern name, clause)
    content: list[str] = field(default_factory=list)
    guess: bool = False

    @property
    def explained(self) -> bool:
        """A deflection that also says something else (less certain than a bare refusal)."""
        return self.is_deflection and bool(self.content)

    @property
    def answer_text(self) -> str:
        """The content clauses joined: what an answer matcher should look at."""
        return ". ".join(self.content)


class DeflectionDetector:
    """Curated refusal patterns, applied clause by clause (see the module docstring)."""

    def __init__(self, patterns: Iterable[tuple[str, str]] = REFUSAL_PATTERNS,
                 extra_patterns: Sequence[tuple[str, str]] = (), foreign: bool = True) -> None:
        self.foreign = foreign  # read replies in other languages (language id + negation words)
        self.patterns = [(name, re.compile(rx)) for name, rx in (*patterns, *extra_patterns)]

    def refusal_pattern(self, clause: str) -> str | None:
        """Name of the first pattern matching a (cleaned) clause, or None."""
        for name, rx in self.patterns:
            if rx.search(clause):
                return name
        return None

    def analyse(self, text: str) -> DeflectionAnalysis:
        if self.foreign and foreign_refusal(text):
            # a whole reply in another language that denies something (see mmrag.judging.language)
            return DeflectionAnalysis(True, [("other_language", clean_text(text))], [], False)
        refusals: list[tuple[str, str]] = []
        content: list[str] = []
        for clause in split_clauses(text):
            name = self.refusal_pattern(clause)
            if name is not None:
                refusals.append((name, clause))
            elif not _FILLER.match(clause):
                content.append(clause)
        if not refusals:
            # nothing but filler ("Sorry.", "Unfortunately...") says nothing: a deflection
            only_filler = not content and bool(text.strip())
            return DeflectionAnalysis(only_filler, refusals, content, guess=bool(content))
        guess = any(_GUESS.search(c) for c in content)
        return DeflectionAnalysis(not guess, refusals, content, guess)

    def is_deflection(self, text: str) -> bool:
        return self.analyse(text).is_deflection


DEFAULT_DETECTOR = DeflectionDetector()


def is_deflection(text: str) -> bool:
    """Whether ``text`` declines to answer, by the default curated patterns."""
    return DEFAULT_DETECTOR.is_deflection(text)
