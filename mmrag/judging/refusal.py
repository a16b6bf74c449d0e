"""Step 2 of the judge: does the reply decline (refusal / not attempted)?

A reply is cut into clauses (:func:`mmrag.judging.lexicon.clauses`).  Each clause is a *refusal*
(it matches one of the curated :data:`REFUSAL_PATTERNS`), *filler* ("Sorry.", "Unfortunately,") or
*content*.  Following SimpleQA's NOT_ATTEMPTED:

* only refusals and filler                      -> a deflection;
* a refusal plus content that offers a guess    -> not a deflection: the guess is judged
  ("The passages do not say, but it is probably the Vltava" is an answer, and a wrong one);
* a refusal plus content without a guess        -> a deflection with explanation (``explained``);
* no refusal                                    -> not a deflection.

A whole reply in another language that denies something is a refusal (:mod:`.language`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mmrag.judging.language import foreign_refusal
from mmrag.judging.lexicon import clauses, clean
from mmrag.schema import DEFLECTION_PHRASE

_GAP = r"(?:\S+\s+){0,3}?"  # up to three filler words between the parts of a pattern
_SOURCES = (
    r"(?:context|contexts|passages?|documents?|docs|text|texts|sources?|evidence|snippets?|"
    r"articles?|excerpts?|information|image|images|picture|photo|retrieved \w+|provided \w+|"
    r"given \w+|available \w+|notice|card|label|report|table|chart|pages?|caption|form|leaflet|letter|"
    r"receipt|statement|manual|minutes|brochure|filing|invoice)"
)
_NEG_AUX = r"(?:does not|doesn't|doesnt|do not|don't|dont|did not|didn't|fails? to|never)"
_SAY_VERBS = (
    r"(?:mention|say|state|specify|contain|include|provide|describe|identify|indicate|"
    r"give|tell|reveal|discuss|clarify|name|offer|supply|cover|address|answer)"
)
_INFO = r"(?:information|info|context|details?|evidence|data|mention|indication|clues?|knowledge)"

#: (name, regex) pairs; a clause matching any of them is a refusal.  Matching is case-insensitive
#: on text with curly quotes straightened and white space collapsed.
REFUSAL_PATTERNS: tuple[tuple[str, str], ...] = (
    ("deflection_phrase", re.escape(DEFLECTION_PHRASE.lower().rstrip("."))),
    (
        "cannot_verb",
        r"\b(?:can ?not|can't|cant|could ?not|couldn't|unable to|not able to|impossible to|"
        r"not possible to|no way to|won't be able to|will not be able to)\s+"
        + _GAP
        + r"(?:answer|determine|tell|say|identify|verify|confirm|know|provide|infer|conclude|"
        r"specify|be determined|be answered|be identified|be inferred|be confirmed|decode|read|make out|"
        r"be (?:\S+ )?(?:sure|certain)|pinpoint|deduce|recogni[sz]e|find)\b",
    ),
    ("not_sure", r"(?:\bnot|\bnever|n't)\s+(?:\S+\s+){0,2}?(?:sure|certain)\b"),
    ("unsure", r"\b(?:unsure|uncertain)\b"),
    (
        "hard_to",
        r"\b(?:hard|difficult|impossible|tricky)\s+(?:for me\s+)?to\s+(?:tell|say|answer|determine|judge|know|"
        r"make out|read|see|identify)\b",
    ),
    ("unclear", r"\b(?:it'?s|it is|that'?s|that is|this is|remains)\s+(?:\S+\s+)?unclear\b"),
    ("outside_what", r"\b(?:outside|beyond) what (?:i|we) can\b"),
    (
        "lack_of_info",
        r"\b(?:not enough|(?:is|are|was|were)n't enough|(?:do|does|did) not have enough|(?:don|doesn|didn)'t have enough|insufficient|no|lack of|lacks?|lacking|"
        r"missing|limited|no specific|"
        r"no relevant|no direct)\s+" + _GAP + _INFO + r"\b",
    ),
    ("source_silent", r"\b" + _SOURCES + r"\s+" + _GAP + _NEG_AUX + r"\s+" + _GAP + _SAY_VERBS + r"\b"),
    (
        "source_contains_no",
        r"\b" + _SOURCES + r"\s+" + _GAP + r"(?:contains?|includes?|gives?|provides?|mentions?|"
        r"says?|offers?|has)\s+no\b",
    ),
    (
        "cannot_see",
        r"\b(?:can ?not|can't|unable to|not able to)\s+(?:\S+\s+)?(?:see|read|make out|discern|"
        r"distinguish)\b.*\b(?:clearly|enough|well|properly|legibly)\b",
    ),
    (
        "too_poor",
        r"\btoo\s+(?:blurry|blurred|small|dark|grainy|unclear|low[- ]resolution|pixelated|far away|"
        r"distant|obscured)\b.*\bto\s+(?:read|see|tell|identify|say|determine|make out)\b",
    ),
    (
        "none_of_sources",
        r"\bnone of the\s+" + _GAP + r"(?:passages|documents|contexts|sources|images|"
        r"snippets|articles|texts|results|excerpts)\b",
    ),
    ("dont_know", r"\b(?:i|we)\s+(?:really\s+|honestly\s+|simply\s+)?(?:do not|don't|dont)\s+know\b"),
    ("no_idea", r"\b(?:no idea|no way of knowing|not known to me|beyond my knowledge)\b"),
    (
        "not_determinable",
        r"\b(?:is|are|was|were|remains?)\s+(?:\S+\s+)?not\s+(?:\S+\s+)?(?:identifiable|determinable|"
        r"clear|known|specified|mentioned|stated|given|provided|available|indicated|"
        r"discernible|visible enough|possible to determine)\b",
    ),
    (
        "cannot_be",
        r"\b(?:cannot|can't|can not|could not|couldn't)\s+be\s+(?:determined|answered|identified|"
        r"inferred|confirmed|verified|established|known|told|compared|counted|measured|read|"
        r"seen|made out)\b",
    ),
    (
        "need_more",
        r"\b(?:need|needs|require|requires|would need)\s+(?:more|additional|further)\s+"
        r"(?:context|information|details|data|evidence)\b",
    ),
    ("would_need", r"\b(?:i'd|i would|we'd|we would|one would|you'd|you would)\s+(?:\S+\s+)?need\b"),
    (
        "refrain",
        r"\b(?:refrain from|avoid|rather not|won't|will not|would not|do not want to)\s+"
        r"(?:guess|guessing|speculat\w*)\b",
    ),
    # the commonest refusals of multilingual VLMs that answer in another language
    (
        "other_language",
        r"(?:\b(?:kann|können)\b.*\bnicht\b.*\b(?:sagen|beantworten|erkennen|bestimmen|identifizieren)\b|"
        r"\bne (?:peux|sais|puis) pas\b|\bno (?:puedo|sé|se puede)\b|\bnon (?:posso|so)\b|"
        r"\bnão (?:posso|sei)\b|无法|不能确定|不知道|抱歉|できません|わかりません)",
    ),
    (
        "short_form",
        r"^(?:unknown|n/?a|not sure|unsure|no answer|cannot answer|can't answer|no comment|"
        r"unanswerable|not answerable|insufficient (?:information|context|data)|"
        r"not enough (?:information|context)|i (?:am|'m) not sure|idk|none given)[.!]?$",
    ),
)

_SAYS = (
    r"(?:mentions?|says?|states?|gives?|names?|shows?|identif(?:y|ies)|lets? (?:me|us)|tells?|indicates?|"
    r"specif(?:y|ies)|appears?|lists?|records?|describes?|covers?|includes?|contains?|reveals?|explains?|"
    r"draws?|links?|reaches|gets to|makes?)"
)
#: refusals in the model's own words: the evidence is silent, covers something else, or the part
#: asked about is out of view (a reply that says so and offers no candidate has not attempted)
IMPLICIT_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "nothing_says",
        r"\b(?:nothing|none of (?:it|them|these|those)|neither(?: \w+)?)\s+(?:\S+\s+){0,5}?" + _SAYS + r"\b",
    ),
    ("says_nothing", r"\b" + _SAYS + r"\s+(?:nothing|no)\b"),
    (
        "no_x_given",
        r"\bno\s+(?:\w+\s+){0,3}?(?:appears?|is (?:given|mentioned|listed|stated|recorded|legible)|"
        r"are (?:given|mentioned|listed|legible))\b",
    ),
    (
        "but_not",
        r"^(?:but|yet|though|although)\s+(?:not|never|no|nothing|none|neither|doesn't|does not|don't|"
        r"do not|didn't|isn't|is not|aren't|wasn't|without|gives no|says nothing)\b",
    ),
    (
        "not_retrieved",
        r"\b(?:isn't|is not|aren't|are not|wasn't|was not|weren't|were not|not|never)\s+(?:\w+\s+)?"
        r"(?:among|included|retrieved|scanned|provided|attached|legible|readable|"
        r"in (?:the|these|this|any) (?:excerpt|pages?|passages?|text|documents?|quotes?|"
        r"retrieved \w+|sources?|article|scan))\b",
    ),
    (
        "out_of_view",
        r"\b(?:(?:out of|outside) (?:the )?(?:frame|shot|view|picture|photo|image)|cut off|cropped|truncated|obscured|redacted|"
        r"hidden|hides|blocked|covered by|faded|illegible|unreadable|smudged|silhouett\w+|"
        r"in shadow|too (?:dark|faded|blurry|blurred|far|small|grainy|low|distant))\b",
    ),
    (
        "other_topic",
        r"\b(?:only|just)\s+(?:covers?|mentions?|describes?|shows?|lists?|gives?|talks about|discusses|"
        r"deals with|concerns?|includes?)\b|\b(?:covers?|mentions?|describes?|lists?)\s+only\b|"
        r"\bis (?:about|for|of) (?:a |the )?(?:different|another|other)\b|\bstops? (?:before|after|short)\b|"
        r"\bnever gets to\b|\bno relevant\b|\bstub\b",
    ),
    (
        "hard_to_tell",
        r"\b(?:hard|difficult|impossible) to (?:tell|say|judge|determine|know|see|read|identify|"
        r"compare|make out)\b|\bnot confident\b|\bcan(?:'t|not) help\b|\bnothing (?:here|there)\b|"
        r"\bno (?:record|trace|caption|label)\b|\b(?:i|we) (?:do not|don't|didn't|did not) have\b|"
        r"\bcouldn't (?:parse|read|find|see|locate|make)\b|\b(?:wasn't|weren't) able to\b|"
        r"\bnot (?:something|anything) (?:the|that|this|i)\b",
    ),
    (
        "cannot_judge",
        r"\b(?:can ?not|can't|cant|could ?not|couldn't|unable to|not able to)\s+"
        + _GAP
        + r"(?:judge|count|give|pin|narrow|make|read|see|compare|name|place|work out|measure|date|"
        r"attribute|estimate|distinguish|spot|locate|recogni[sz]e|rule|classify|verify|decide)\b",
    ),
    (
        "too_x_to",
        r"\btoo\s+\w+(?:\s+\w+)?\s+to\s+(?:read|see|tell|identify|say|determine|make out|judge|count|"
        r"distinguish|recogni[sz]e|decipher)\b",
    ),
    (
        "not_visible",
        r"\b(?:isn't|is not|aren't|are not|wasn't|not|never)\s+(?:\w+\s+)?(?:visible|shown|legible|"
        r"readable|clear|captured|in (?:the )?(?:frame|view|focus|shot|picture|photo|image))\b|"
        r"\bout of focus\b|\bin (?:deep )?(?:shade|shadow|cloud|fog|mist|darkness)\b|\babsent from\b|"
        r"\b(?:i|we) (?:do not|don't) recogni[sz]e\b|\bcan only see\b|\bonly (?:the|its|a|part)\b.*"
        r"\b(?:is|are) (?:visible|shown)\b",
    ),
    (
        "poor_view",
        r"\b(?:blurry|blurred|backlit|overexposed|underexposed|washed out|torn|scaffolding|a blob|"
        r"no visible|too little|without (?:labels?|a legend|a caption|a scale|units)|"
        r"could you (?:send|provide|share|upload))\b|^(?:not (?:stated|given|shown|mentioned|specified|"
        r"clear|visible|legible|known|listed)|unclear|unknown)\b|\b(?:just|only) (?:the|its|a|part)\b.*\b(?:is|are) "
        r"(?:visible|shown|in (?:the|this) (?:photo|image|picture|frame|shot))\b|\b(?:isn't|aren't|wasn't) "
        r"(?:identifiable|explained|clear|determinable|discernible|decipherable)\b|\bshows? only\b|"
        r"\bdoesn't show enough\b",
    ),
    ("null_answer", r"\"answer\"\s*:\s*(?:null|\"\"|none)"),
    ("not_its", r"\bnot (?:its|their|his|her|the \w+'s)\b"),
    (
        "missing",
        r"\b(?:is|are|was|were)\s+(?:\w+\s+)?(?:empty|blank|missing|absent|unavailable|irrelevant|incomplete)\b|"
        r"\bmissing from\b|\b(?:isn't|aren't|is not|are not|wasn't) (?:part of|recogni[sz]able|mentioned|feasible|"
        r"possible|something|named|listed|given|stated)\b|\bwithout (?:naming|giving|stating|saying|listing|"
        r"mentioning)\b|\b(?:would|'d) (?:only )?be guessing\b|\bdoesn't settle\b|\bno way (?:to|of)\b|"
        r"\bturned away\b|\brefers to a different\b|\bonly (?:the )?\w+(?: \w+)? (?:is|are) (?:named|listed|given|"
        r"included|mentioned)\b|\bthe only page\b|\bdoesn't show anything\b",
    ),
)

_FILLER = re.compile(
    r"^(?:sorry|i'm sorry|i am sorry|i apologi[sz]e|apologies|unfortunately|"
    r"regrettably|hmm+|well|okay|ok|however|but|so|thus|therefore|as a result|"
    r"based on the (?:provided |given |available )?(?:context|information|passages|image))"
    r"[\s,.!:;-]*$"
)
# A content clause that offers an answer despite a refusal elsewhere in the response.
#: words that offer a guess ("probably", "I think", "the answer is")
GUESS_WORDS = re.compile(
    r"\b(?:probably|likely|perhaps|maybe|possibly|presumably|i think|i believe|i guess|"
    r"i suspect|my (?:best )?guess|it (?:looks|seems|appears)|appears to be|seems to be|"
    r"looks like|could be|might be|may be|would be|must be|is likely|from my (?:own )?"
    r"knowledge|based on my (?:own |general )?knowledge|i would say|if i had to guess|"
    r"i'd say|my answer|the answer is|answer:)\b"
)
#: a clause after a refusal that opens with a contrast ("..., but it is X") or offers a guess
_GUESS = re.compile(
    r"^(?:but|however|though|although|yet|that said|nevertheless|still|nonetheless)\b|" + GUESS_WORDS.pattern
)


@dataclass
class DeflectionAnalysis:
    """What the detector saw: the refusal clauses (with the pattern that fired), the content
    clauses, whether the content offers a guess, and the resulting call."""

    is_deflection: bool
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (pattern name, clause)
    content: list[str] = field(default_factory=list)
    guess: bool = False

    @property
    def answer_text(self) -> str:
        """The content clauses joined: what an answer matcher should look at."""
        return ". ".join(self.content)


class DeflectionDetector:
    """Curated refusal patterns, applied clause by clause (see the module docstring)."""

    def __init__(
        self,
        patterns: Iterable[tuple[str, str]] = REFUSAL_PATTERNS + IMPLICIT_PATTERNS,
        extra_patterns: Sequence[tuple[str, str]] = (),
        foreign: bool = True,
    ) -> None:
        self.foreign = foreign  # read replies in other languages (language id + negation words)
        self.patterns = [(name, re.compile(rx)) for name, rx in (*patterns, *extra_patterns)]

    def refusal_pattern(self, clause: str) -> str | None:
        """Name of the first pattern matching a (cleaned) clause, or None."""
        return next((name for name, rx in self.patterns if rx.search(clause)), None)

    def analyse(self, text: str) -> DeflectionAnalysis:
        if self.foreign and foreign_refusal(text):
            # a whole reply in another language that denies something
            return DeflectionAnalysis(True, [("other_language", clean(text).lower())], [], False)
        refusals: list[tuple[str, str]] = []
        content: list[str] = []
        for clause in clauses(text):
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
#: explicit refusals only ("I cannot tell"): the premise judge reads denials before the implicit
#: patterns, since "the dog is not in the image" rejects a false premise
EXPLICIT_DETECTOR = DeflectionDetector(REFUSAL_PATTERNS)


def is_deflection(text: str) -> bool:
    """Whether ``text`` declines to answer, by the default curated patterns."""
    return DEFAULT_DETECTOR.is_deflection(text)
