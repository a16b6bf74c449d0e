"""Multiple-choice judging: a robust extractor for the verdict, HumbleBench's official rule
(:mod:`.mcq_official`) beside it in the details.

The robust extractor (:func:`extract_choice`) reads what a human would: the text after a closing
``</think>``, inside ``<answer>``, after "Answer:"/"the answer is", a leading "B." or "(B)", a lone
capital letter, or an option's text ("None of the above").  Several different letters at the same
level of evidence are ambiguous and extract nothing.  NOTA is recognised by its text, never its
letter (shuffled options move it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from mmrag.judging.final import REASONING_TAGS, THINK_END
from mmrag.judging.mcq_official import OFFICIAL_CHOICES, official_extract, official_is_correct
from mmrag.judging.refusal import DEFAULT_DETECTOR, DeflectionDetector
from mmrag.schema import Choice, Evidence, Prompt, Response, Sample, Verdict, is_nota_text

_LETTER_AFTER = r"\s*(?:is|would be|should be|:|=|-)?\s*[:\-]?\s*[(\[]?\s*([A-Za-z])(?=([)\].:,;!\s]|$))"
_STRONG_MARKER = re.compile(
    r"(?:final answer|correct answer|correct option|correct choice|the answer|"
    r"answer)" + _LETTER_AFTER,
    re.I,
)
_WEAK_MARKER = re.compile(r"(?:option|choice)" + _LETTER_AFTER, re.I)
_LEADING = re.compile(r"^[(\[]?([A-Z])(?:[)\].:]|\s*$)")
_LONE_LETTER = re.compile(r"^\W*([A-Za-z])\W*$")
_PAREN = re.compile(r"[(\[]([A-Z])[)\]]")
_CAPITAL = re.compile(r"(?<![\w'])([A-Z])(?![\w'])")
_NOTA_PHRASE = re.compile(
    r"\bnone of (?:the above|them|these|those|the (?:listed|given|provided|shown|options?|"
    r"choices?|answers?)|the \w+ (?:listed|given|shown|provided))\b",
    re.I,
)


@dataclass
class ChoiceExtraction:
    letter: str | None
    method: str
    candidates: list[str] = field(default_factory=list)


def strip_reasoning(text: str) -> str:
    """The final part of a reasoning model's reply: after the last ``</think>``, inside the last
    ``<answer>`` or ``<CONCLUSION>``."""
    t = THINK_END.split(text)[-1]
    for rx in REASONING_TAGS:
        found = rx.findall(t)
        if found:
            t = found[-1]
    return t.strip()


def _simple(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _option_text_letter(text: str, choices: Sequence[Choice]) -> list[str]:
    """Letters whose option text appears (as whole words) in ``text``; an exact equality wins."""
    t = _simple(text)
    if not t:
        return []
    exact = [c.letter for c in choices if _simple(c.text) == t]
    if exact:
        return exact
    padded = f" {t} "
    hits = [c for c in choices if _simple(c.text) and f" {_simple(c.text)} " in padded]
    # "none of the above" contains no other option; a longer option text that contains a shorter
    # one ("red car" vs "car") wins over it
    keep = [c for c in hits if not any(o is not c and _simple(c.text) in _simple(o.text) for o in hits)]
    return [c.letter for c in keep]


def _marker_letters(rx: re.Pattern[str], text: str, letters: set[str]) -> list[str]:
    """Letters after a marker; a lower-case one only when punctuation or the end follows it, so
    that "the answer is a dog" does not read as A."""
    out = []
    for m in rx.finditer(text):
        letter, after = m.group(1), m.group(2)
        if letter.islower() and after.strip() == "" and after != "":
            continue
        if letter.upper() in letters:
            out.append(letter.upper())
    return out


def extract_choice(text: str, choices: Sequence[Choice] | Sequence[str] = OFFICIAL_CHOICES) -> ChoiceExtraction:
    """The option a reply commits to, or None with the method that gave up and the candidates.

    ``choices`` are :class:`Choice` objects (text matching available) or bare letters.
    """
    opts = [c if isinstance(c, Choice) else Choice(letter=c, text="") for c in choices]
    letters = {c.letter.upper() for c in opts}
    if letters:  # a removed option's letter (NOTA-only keeps A, C, D, E) is still a readable choice
        letters |= {chr(i) for i in range(ord("A"), ord(max(letters)) + 1)}
    body = strip_reasoning(text)
    if not body:
        return ChoiceExtraction(None, "empty")
    flat = body.replace("**", "").replace("__", "").strip().strip("'\"`")

    def decide(found: list[str], method: str) -> ChoiceExtraction | None:
        distinct = sorted({f.upper() for f in found if f.upper() in letters})
        if len(distinct) == 1:
            return ChoiceExtraction(distinct[0], method, distinct)
        if len(distinct) > 1:
            return ChoiceExtraction(None, f"ambiguous ({method})", distinct)
        return None

    m = _LONE_LETTER.match(flat)
    if m and m.group(1).upper() in letters:
        return ChoiceExtraction(m.group(1).upper(), "lone letter", [m.group(1).upper()])
    strong = _marker_letters(_STRONG_MARKER, flat, letters)
    if strong:  # the last explicit "answer is X" is the one a reasoning reply ends with
        return ChoiceExtraction(strong[-1], "answer marker", strong)
    got = decide(_marker_letters(_WEAK_MARKER, flat, letters), "option marker")
    if got:
        return got
    lead = _LEADING.match(flat)
    if lead and lead.group(1) in letters:
        return ChoiceExtraction(lead.group(1), "leading letter", [lead.group(1)])
    if flat[:2] in {f"{x} " for x in letters}:  # "A cat": a letter, or the article before an option?
        rest_hits = _option_text_letter(flat[2:], opts)
        if rest_hits == [flat[0]]:
            return ChoiceExtraction(flat[0], "leading letter + option text", rest_hits)
    got = decide(_PAREN.findall(flat), "parenthesised letter")
    if got:
        return got
    capitals = [
        c for c in _CAPITAL.findall(flat) if not (c == "A" and re.search(r"(?<![\w'])A\s+(?!or\b|and\b)[a-z]", flat))
    ]
    got = decide(capitals, "capital letter")
    if got:
        return got
    got = decide(_option_text_letter(flat, opts), "option text")
    if got:
        return got
    nota = nota_letter(opts)
    if nota and _NOTA_PHRASE.search(flat):  # "None of the listed animals." is the NOTA option
        return ChoiceExtraction(nota, "none-of phrase", [nota])
    return ChoiceExtraction(None, "no option found")


def nota_letter(choices: Sequence[Choice]) -> str | None:
    """The letter of "None of the above", found by its text (or the ``is_nota`` flag)."""
    for c in choices:
        if c.is_nota or is_nota_text(c.text):
            return c.letter
    return None


@lru_cache(maxsize=4096)
def _inline_options(question: str) -> tuple[tuple[str, str], ...]:
    out = []
    for line in question.splitlines()[1:]:
        m = re.match(r"^\s*([A-Z])\.\s?(.*)$", line)
        if m:
            out.append((m.group(1), m.group(2).strip()))
    return tuple(out)


def parse_inline_options(question: str) -> list[Choice]:
    """Options written inside a HumbleBench question ("A. text" or "A.text", one per line after the
    stem); NOTA marked by its text."""
    return [Choice(letter=l, text=t, is_nota=is_nota_text(t)) for l, t in _inline_options(question)]


def effective_choices(sample: Sample, prompt: Prompt | None) -> tuple[list[Choice], str | None]:
    """The prompt's options and gold letter after stress transforms, falling back to the sample's
    (and, for HumbleBench records, to options written inside the question)."""
    choices = list(prompt.choices) if prompt is not None and prompt.choices else list(sample.choices)
    label = prompt.label if prompt is not None and prompt.label else sample.label
    if not choices:
        choices = parse_inline_options(sample.question)
    return choices, label


_LETTER = {c: re.compile(rf"(?<![A-Za-z]){c}(?![A-Za-z])") for c in "ABCDEFGHIJ"}


def _evidence(text: str, step: str, span: str, gold: str | None, rule: str) -> Evidence:
    """The evidence of a multiple-choice verdict: the chosen letter's last stand-alone mention
    in the reply (or the refusal clause), the gold letter, the rule that read it."""
    at = -1
    if len(span) == 1 and span in _LETTER:
        hits = list(_LETTER[span].finditer(text))
        at = hits[-1].start() if hits else -1
    elif span:
        at = text.find(span)
        at = at if at >= 0 else text.lower().find(span.lower())
        span = text[at : at + len(span)] if at >= 0 else span
    return Evidence(
        step=step,
        span=span,
        start=at if at >= 0 else None,
        end=at + len(span) if at >= 0 else None,
        reference=gold,
        rule=rule,
    )


class MCQJudge:
    """Robust extraction for the verdict; the official rule side by side in ``details``.

    correct = the extracted letter is the gold; another letter (NOTA included) = hallucination;
    a refusal = deflection; no single letter = unparseable.
    """

    judge_id = "rule-mcq@2"

    def __init__(self, detector: DeflectionDetector | None = None) -> None:
        self.detector = detector or DEFAULT_DETECTOR

    def judge(self, sample: Sample, prompt: Prompt, response: Response) -> Verdict:
        from mmrag.judging.cascade import READ_LIMIT
        from mmrag.judging.failed import unjudged

        choices, label = effective_choices(sample, prompt)
        if label is None:
            raise ValueError(f"sample {sample.id}: a multiple-choice judge needs a gold label")
        nota = nota_letter(choices)
        text = response.text or ""
        details = {
            "official_correct": official_is_correct(text, label),
            "official_extracted": official_extract(text),
            "gold": label,
            "gold_is_nota": nota is not None and label == nota,
            "nota_letter": nota,
        }
        if (v := unjudged(response, self.judge_id)) is not None:
            v.details.update(details)
            return v
        # the deflection detector runs first; a refusal that still names an option in its other
        # clauses ("E. I cannot see any of these") has answered
        text = text[-READ_LIMIT:]  # the final choice is at the end; reading stays linear (cascade.READ_LIMIT)
        analysis = self.detector.analyse(strip_reasoning(text))
        if analysis.is_deflection:
            ext = extract_choice(analysis.answer_text, choices) if analysis.content else None
            if ext is None or ext.letter is None:
                details.update(
                    {"decided": True, "chose_nota": False, "refusal_patterns": [n for n, _ in analysis.refusals]}
                )
                clause = analysis.refusals[0][1] if analysis.refusals else text.strip()[:300]
                return Verdict(
                    outcome="deflection",
                    judge_id=self.judge_id,
                    reason="refusal",
                    score=0.0,
                    details=details,
                    evidence=_evidence(response.text or "", "refusal", clause, None, "a refusal and no option chosen"),
                )
        else:
            ext = extract_choice(text, choices)
        details.update(
            {
                "method": ext.method,
                "candidates": ext.candidates,
                "chose_nota": ext.letter is not None and ext.letter == nota,
            }
        )
        if ext.letter is None and len(ext.candidates) > 1:
            # "B or C": a hedge between options commits to none of them -- wrong (SimpleQA's rule for
            # hedged answers and the labelling guide's "two options at once")
            details["decided"] = True
            why = f"hedges between options {', '.join(ext.candidates)} ({ext.method})"
            return Verdict(
                outcome="hallucination",
                judge_id=self.judge_id,
                score=0.0,
                details=details,
                reason=why,
                evidence=_evidence(response.text or "", "option", text.strip()[-300:], label, why),
            )
        if ext.letter is None:
            empty = not text.strip()
            details.update({"decided": empty, "undecided": None if empty else "no single option"})
            return Verdict(
                outcome="unparseable",
                judge_id=self.judge_id,
                score=None,
                details=details,
                reason="empty reply" if empty else f"undecided: no single option ({ext.method})",
            )
        details["decided"] = True
        correct = ext.letter == label
        reason = f"chose {ext.letter}" + (" (None of the above)" if details["chose_nota"] else "") + f"; gold {label}"
        return Verdict(
            outcome="correct" if correct else "hallucination",
            extracted=ext.letter,
            judge_id=self.judge_id,
            reason=reason,
            score=1.0 if correct else 0.0,
            details=details,
            evidence=_evidence(response.text or "", "option", ext.letter, label, f"{reason} ({ext.method})"),
        )
